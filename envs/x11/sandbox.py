"""The sandbox every task command runs in: bubblewrap around the env's own Xvfb and apps.

Task files are untrusted input, and OSWorld's assume a throwaway VM (``sudo apt-get install``,
``mkdir /home/...``). So no step, launch or getter command of a task runs on the host: each
episode starts one :class:`Sandbox`, a ``bwrap`` (Debian's ``bubblewrap``) holding a small
command server (:data:`_SERVER`, our code, like OSWorld's in-VM server) that runs the task's
commands and apps, all in the same namespaces for the episode:

- the whole system read-only (``--ro-bind / /``); ``/root``, ``/home``, ``/run``, ``/var/tmp``
  hidden under empty tmpfs (no host secrets, no host sockets such as D-Bus); a private home
  (``/home/user``, also at the episode's ``{workdir}`` path) and a private ``/tmp``, both host
  folders of this episode only;
- no network (``--unshare-net``: no TCP, no abstract sockets, so no other X display either),
  its own pid, IPC and UTS namespaces; the only X socket inside is this env's display;
- never as root: run as root (as here), bwrap sets up the mounts and the command server drops
  to ``nobody`` (uid/gid 65534, no capabilities, ``no_new_privs``) before anything of the task
  runs; run as a user, bwrap uses a user namespace and everything runs as that user.

Killing the sandbox (``close``) kills every process of the episode: they live in its pid
namespace, which ends with it.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from pixelrl.envs.processes import ChildProcess

BWRAP_INSTALL_HINT = (
    "install bubblewrap: `apt-get install bubblewrap` on Debian/Ubuntu "
    "(or run scripts/install_system_deps.sh)"
)
HOME = "/home/user"  # OSWorld's VM user's home, where task files point
NOBODY = 65534
HIDDEN = ("/root", "/home", "/run", "/var/tmp")  # emptied inside (tmpfs)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The command server inside the sandbox: one JSON request a line on stdin, one reply a line on
# stdout. It runs the task's commands (never evaluates anything itself).
_SERVER = r"""
import base64, json, os, shlex, signal, subprocess, sys
out = os.fdopen(os.dup(1), "w"); devnull = os.open(os.devnull, os.O_RDWR); os.dup2(devnull, 1)
home = os.environ["HOME"]
def argv(req):
    cmd, shell = req["command"], bool(req.get("shell", False))
    if isinstance(cmd, list) and shell:
        cmd = " ".join(shlex.quote(c) for c in cmd)
    elif isinstance(cmd, str) and not shell:
        cmd = shlex.split(cmd)
    return cmd, shell
def handle(req):
    op = req["op"]
    if op == "run":
        cmd, shell = argv(req)
        p = subprocess.Popen(cmd, shell=shell, cwd=home, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            so, se = p.communicate(base64.b64decode(req.get("input", "")), timeout=req["timeout"])
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL); p.communicate()
            return {"ok": False, "error": f"timed out after {req['timeout']} s"}
        return {"ok": True, "rc": p.returncode, "stdout": base64.b64encode(so).decode(),
                "stderr": base64.b64encode(se).decode()}
    if op == "launch":
        cmd, shell = argv(req)
        p = subprocess.Popen(cmd, shell=shell, cwd=home, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        return {"ok": True, "pid": p.pid}
    if op == "read":
        with open(req["path"], "rb") as f:
            return {"ok": True, "data": base64.b64encode(f.read(req["limit"])).decode()}
    if op == "write":
        path = os.path.join(home, req["path"])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(req["data"]))
        return {"ok": True}
    return {"ok": False, "error": f"unknown op {op!r}"}
for line in sys.stdin:
    try:
        reply = handle(json.loads(line))
    except (OSError, ValueError) as e:
        reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    out.write(json.dumps(reply) + "\n"); out.flush()
"""


class SandboxError(RuntimeError):
    """The sandbox cannot be started (bwrap missing or refused) or stopped answering."""


def find_bwrap() -> str:
    found = shutil.which(os.environ.get("PIXELRL_BWRAP", "bwrap"))
    if found is None:
        raise SandboxError(
            f"bwrap not found: task commands run only in a sandbox; {BWRAP_INSTALL_HINT}"
        )
    return found


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def bwrap_argv(
    home: str, tmp: str, display: str, exposed: list[str] | None = None, root: bool | None = None
) -> list[str]:
    """The bwrap command line of a sandbox with ``home``/``tmp`` (host folders) and ``display``.

    ``exposed``: host folders hidden by :data:`HIDDEN` that must show inside, read-only (this
    interpreter, when it lives under /root)."""
    root = os.geteuid() == 0 if root is None else root
    number = display.split(":")[-1].split(".")[0]
    socket = f"/tmp/.X11-unix/X{number}"
    argv = [find_bwrap()]
    argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    argv += ["--unshare-cgroup-try"] + ([] if root else ["--unshare-user"])
    argv += ["--die-with-parent", "--new-session", "--hostname", "pixelrl-sandbox"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for hidden in HIDDEN:
        if os.path.isdir(hidden):
            argv += ["--tmpfs", hidden]
    argv += ["--bind", tmp, "/tmp", "--perms", "1777", "--dir", "/tmp/.X11-unix"]
    if os.path.exists(socket):
        argv += ["--ro-bind", socket, socket]
    made: set[str] = set()

    def parents(path: str) -> list[str]:
        out: list[str] = []
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p not in made and _under(p, HIDDEN + ("/tmp",)) and p not in HIDDEN + ("/tmp",):
                made.add(p)
                out += ["--perms", "0755", "--dir", p]
        return out

    argv += parents(HOME) + ["--bind", home, HOME]
    if home != HOME:
        argv += parents(home) + ["--bind", home, home]  # {workdir}: same path inside and out
    for path in exposed or []:
        argv += parents(path) + ["--ro-bind", path, path]
    argv += ["--chdir", HOME, "--clearenv"]
    venv_bin = os.path.dirname(sys.executable)
    env = {
        "HOME": HOME,
        "USER": "user",
        "LOGNAME": "user",
        "PATH": f"{venv_bin}:{PATH}",
        "DISPLAY": display,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "XDG_CONFIG_HOME": f"{HOME}/.config",
        "XDG_DATA_HOME": f"{HOME}/.local/share",
    }
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv.append("--")
    if root:
        setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        argv += [setpriv, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"]
        argv += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return argv


def _exposed_paths() -> list[str]:
    """Folders this interpreter and pixelrl need inside that a hidden folder would hide."""
    from pixelrl.assets import ASSETS_DIR

    wanted = {sys.base_prefix, sys.prefix, str(Path(ASSETS_DIR).resolve().parent)}  # the checkout
    wanted |= {os.path.dirname(os.path.realpath(sys.executable))}
    return exposed_paths(wanted)


def exposed_paths(wanted: set[str]) -> list[str]:
    """Of ``wanted`` folders, the outermost ones that a hidden folder or the private /tmp would
    hide (a checkout or venv under /tmp or /root), never a hidden folder itself: exposing /tmp
    would show the host's X sockets, i.e. other displays."""
    roots = HIDDEN + ("/tmp",)
    paths = sorted(p for p in wanted if _under(p, roots) and p not in roots and os.path.isdir(p))
    return [p for p in paths if not any(p != q and _under(p, (q,)) for q in paths)]


class Sandbox:
    """One episode's sandbox: a private home (:attr:`home`, host path) and /tmp, ``display``.

    :meth:`run` runs a command to completion, :meth:`launch` starts an app, :meth:`read` and
    :meth:`write` move file contents in and out, all inside; :meth:`close` ends it all."""

    def __init__(self, display: str, base_dir: str) -> None:
        self.display = display
        self.base_dir = base_dir
        self.home = os.path.join(base_dir, "home")
        self.tmp = os.path.join(base_dir, "tmp")
        for d in (self.home, self.tmp):
            os.makedirs(d, exist_ok=True)
        self.root = os.geteuid() == 0
        if self.root:
            for d in (base_dir, self.home, self.tmp):
                os.chown(d, NOBODY, NOBODY)
        argv = bwrap_argv(self.home, self.tmp, display, _exposed_paths(), self.root)
        argv += [sys.executable, "-I", "-c", _SERVER]
        self.process = ChildProcess(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            name="sandbox",
        )
        try:
            reply = self._request({"op": "run", "command": ["true"], "timeout": 10}, 30.0)
        except SandboxError as e:
            self.close()
            raise SandboxError(f"the task sandbox did not start: {e}") from None
        if not reply.get("ok"):
            self.close()
            raise SandboxError(f"the task sandbox did not start: {reply.get('error')}")

    def alive(self) -> bool:
        return self.process.alive()

    def _request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if not self.process.alive():
            raise SandboxError(f"the sandbox exited: {self._stderr()}")
        pipe_in, pipe_out = self.process.popen.stdin, self.process.popen.stdout
        try:
            pipe_in.write((json.dumps(req) + "\n").encode())
            pipe_in.flush()
        except BrokenPipeError:
            raise SandboxError(f"the sandbox exited: {self._stderr()}") from None
        ready, _, _ = select.select([pipe_out], [], [], timeout_s)
        line = pipe_out.readline() if ready else b""
        if not line:
            self.process.kill()
            raise SandboxError(
                f"the sandbox did not answer within {timeout_s:.0f} s: {self._stderr()}"
            )
        return json.loads(line)

    def _stderr(self) -> str:
        stream = self.process.popen.stderr
        if stream is None or self.process.alive():
            return "(running)"
        return stream.read().decode(errors="replace")[-500:]

    def run(
        self,
        command: list[str] | str,
        shell: bool = False,
        timeout_s: float = 30.0,
        stdin: bytes = b"",
    ) -> tuple[int | None, str, str]:
        """(exit status or None on a time-out or a missing program, stdout, stderr)."""
        reply = self._request(
            {
                "op": "run",
                "command": command,
                "shell": shell,
                "timeout": timeout_s,
                "input": base64.b64encode(stdin).decode(),
            },
            timeout_s + 10.0,
        )
        if not reply["ok"]:
            return None, "", reply["error"]
        decode = lambda s: base64.b64decode(s).decode("utf-8", errors="replace")  # noqa: E731
        return reply["rc"], decode(reply["stdout"]), decode(reply["stderr"])

    def launch(self, command: list[str] | str, shell: bool = False) -> None:
        """Start an app inside (it runs until the sandbox closes); FileNotFoundError if missing."""
        reply = self._request({"op": "launch", "command": command, "shell": shell}, 30.0)
        if not reply["ok"]:
            raise FileNotFoundError(reply["error"])

    def read(self, path: str, limit: int = 16 << 20) -> bytes | None:
        """The file at ``path`` as the sandbox sees it, or None (missing, unreadable, a folder)."""
        reply = self._request({"op": "read", "path": path, "limit": limit}, 30.0)
        return base64.b64decode(reply["data"]) if reply["ok"] else None

    def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` (absolute, or relative to the home) as the sandbox user."""
        reply = self._request(
            {"op": "write", "path": path, "data": base64.b64encode(data).decode()}, 30.0
        )
        if not reply["ok"]:
            raise OSError(reply["error"])

    def close(self) -> None:
        """Kill every process of the sandbox (its pid namespace ends with it)."""
        self.process.kill(grace_s=1.0)
