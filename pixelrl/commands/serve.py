"""``pixelrl serve ENV_ID``: an env behind an OpenEnv server (``openenv-core``), loopback by default.

    pixelrl serve pixelrl/Desktop-ClickButton-v0 --env-kwargs '{"screen_size": [320, 240]}'
    pixelrl serve pixelrl/PointNav-v0 --port 8001 --env-kwargs '{"width": 64, "height": 64}'
    pixelrl serve pixelrl/Desktop-Mixed-v0 --images lists --max-sessions 32
    pixelrl serve pixelrl/PointNav-v0 --host 0.0.0.0 --allow-remote   # reachable from elsewhere
    pixelrl serve pixelrl/PointNav-v0 --allow-origin http://lab-box:3000 --idle-timeout 900

Each OpenEnv client (``GenericEnvClient(base_url="http://127.0.0.1:8000")``) gets its own env
over the WebSocket; see :mod:`pixelrl.serve` for the observation and action formats. The server
has no authentication, so it listens on loopback unless ``--allow-remote`` is given with another
``--host``, and refuses requests from web pages (they carry ``Origin``) that are not on loopback
unless ``--allow-origin`` names them. At most ``--max-sessions`` envs run at once, WebSocket
sessions and HTTP resets together; a WebSocket silent for ``--idle-timeout`` seconds is closed.
``--port 0`` takes a free port; the first line printed names the address.
"""

from __future__ import annotations

import argparse

from pixelrl.cli import UsageError
from pixelrl.commands.args import (
    add_threads_argument,
    env_id,
    json_object,
    make_env,
    positive_float,
    positive_int,
    use_threads,
)
from pixelrl.serve_guards import DEFAULT_IDLE_TIMEOUT_S, origin


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be in 0..65535 (0: a free port), got {text}")
    return value


def allowed_origin(text: str) -> str:
    try:
        return origin(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="an env behind an OpenEnv server (loopback by default)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env", type=env_id, metavar="ENV_ID",
                   help="env id, e.g. pixelrl/Desktop-ClickButton-v0 (`pixelrl envs` lists them)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; another than loopback needs "
                   "--allow-remote)")  # fmt: skip
    p.add_argument("--port", type=port_number, default=8000,
                   help="port to listen on (default %(default)s; 0: a free port, printed)")  # fmt: skip
    p.add_argument("--allow-remote", action="store_true",
                   help="let --host be an address other machines reach (no authentication!)")  # fmt: skip
    p.add_argument("--env-kwargs", type=json_object, default=None, metavar="JSON",
                   help='env options, e.g. \'{"screen_size": [640, 400]}\'')  # fmt: skip
    p.add_argument("--images", choices=("png", "lists"), default="png",
                   help="images as base64 (uint8 as PNG, depth as float32 bytes; exact, small) or "
                   "nested lists (what OpenEnv's BrowserGym clients read; default %(default)s)")  # fmt: skip
    p.add_argument("--max-sessions", type=positive_int, default=16,
                   help="envs at once, WebSocket sessions and HTTP resets together; past it a "
                   "client is told the server is busy (default %(default)s)")  # fmt: skip
    p.add_argument("--idle-timeout", type=positive_float, default=DEFAULT_IDLE_TIMEOUT_S,
                   metavar="SECONDS",
                   help="close a WebSocket session (and its env) that sends nothing for this "
                   "long (default %(default)s)")  # fmt: skip
    p.add_argument("--allow-origin", type=allowed_origin, action="append", default=[],
                   metavar="ORIGIN",
                   help="also take requests from web pages of this origin, e.g. "
                   "http://lab-box:3000 (repeatable; default: only pages on loopback; clients "
                   "that are not browsers send no origin and are always taken)")  # fmt: skip
    p.add_argument("--log-level", choices=("warning", "info", "debug"), default="warning",
                   help="uvicorn's log level (default %(default)s)")  # fmt: skip
    add_threads_argument(p, "the envs")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import errno

    try:
        import openenv.core  # noqa: F401
    except ImportError:
        raise UsageError("pixelrl serve needs openenv-core: pip install 'pixelrl[serve]'") from None
    from pixelrl.serve import build_app, is_loopback, listen, make_spec, run_server

    if not args.allow_remote and not is_loopback(args.host):
        raise UsageError(
            f"--host {args.host} is not a loopback address: anyone who reaches it could drive "
            "the env (there is no authentication); add --allow-remote if you mean it"
        )
    threads = use_threads(args, import_torch=False, say=False)  # said after the first line
    make_env(args.env, **(args.env_kwargs or {})).close()  # bad options: one line, exit 2
    spec = make_spec(args.env, args.env_kwargs, images=args.images)
    try:
        sock = listen(args.host, args.port)
    except OSError as e:
        reason = "the port is in use" if e.errno == errno.EADDRINUSE else e.strerror or str(e)
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"serving {args.env} on http://{shown}:{port} (OpenEnv: WebSocket /ws, one env per "
        f"client, at most {args.max_sessions}); Ctrl+C stops",
        flush=True,
    )
    print(f"threads: {threads}", flush=True)
    app = build_app(
        spec,
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        allowed_origins=tuple(args.allow_origin),
        loopback_only=is_loopback(args.host),
    )
    run_server(app, sock, log_level=args.log_level)
    return 0
