"""Argument types shared by the commands: every count, size and env id is checked while parsing,
so a mistake is argparse's one line (``pixelrl VERB: error: argument --episodes: ...``, exit 2)
before anything is built.

    p.add_argument("--episodes", type=positive_int, default=10)
    p.add_argument("--env", type=env_id, required=True)
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from pixelrl.cli import UsageError


def _number(text: str, kind: type, minimum: float, inclusive: bool) -> int | float:
    """``kind(text)``, finite and ``>= minimum`` (``> minimum`` unless ``inclusive``)."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
        ) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if value < minimum or (value == minimum and not inclusive):
        raise argparse.ArgumentTypeError(
            f"must be {'>=' if inclusive else '>'} {minimum}, got {text}"
        )
    return value


def positive_int(text: str) -> int:
    return _number(text, int, 0, inclusive=False)


# --batch of bench nav and eval: episodes played together, each with its own env (and a row of
# every generate); beyond this a typo (--batch 8000) would build thousands of envs.
MAX_BATCH = 256


def batch_size(text: str) -> int:
    """Episodes played together: an integer in [1, :data:`MAX_BATCH`]."""
    value = positive_int(text)
    if value > MAX_BATCH:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_BATCH} (episodes played together, an env each), got {text}"
        )
    return value


def non_negative_int(text: str) -> int:
    return _number(text, int, 0, inclusive=True)


def positive_float(text: str) -> float:
    return _number(text, float, 0, inclusive=False)


def env_id(text: str) -> str:
    """A registered env id (``pixelrl/...`` or any other registered one), else the nearest."""
    import pixelrl.envs  # noqa: F401  (registers the ids)
    from pixelrl.envs.registry import unknown_env_message

    problem = unknown_env_message(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def json_object(text: str) -> dict[str, Any]:
    """A JSON object (``--env-kwargs '{"screen_size": [640, 400]}'``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not JSON ({e}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object {{...}}, got {text!r}")
    return value


def make_env(env_id: str, **kwargs: Any):
    """``gymnasium.make(env_id, **kwargs)``; options the env refuses (a misspelled key, a size
    out of range) are a :class:`pixelrl.cli.UsageError` naming them, not a traceback."""
    import gymnasium

    import pixelrl.envs  # noqa: F401  (registers the ids)

    try:
        return gymnasium.make(env_id, **kwargs)
    except (TypeError, ValueError) as e:
        message = constructor_error(e) + nearest_option(env_id, kwargs)
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no options"
        raise UsageError(f"cannot make {env_id} with {shown}: {message}") from e


def constructor_error(error: Exception) -> str:
    """An env constructor's error without the tail gymnasium adds when it re-raises a TypeError
    (" was raised from the environment creator for ... with kwargs (...)")."""
    return str(error).split(" was raised from the environment creator")[0]


def nearest_option(env_id: str, kwargs: dict[str, Any]) -> str:
    """ "; did you mean 'screen_size'?" for an option the env's constructor does not take."""
    import difflib
    import inspect

    import gymnasium

    try:
        entry = gymnasium.spec(env_id).entry_point
        if isinstance(entry, str):
            module, name = entry.split(":")
            entry = getattr(__import__(module, fromlist=[name]), name)
        valid = list(inspect.signature(entry).parameters)
    except (ValueError, TypeError, AttributeError, ImportError, gymnasium.error.Error):
        return ""
    hints = [
        f"{near[0]!r} (for {key!r})"
        for key in kwargs
        if key not in valid and (near := difflib.get_close_matches(key, valid, n=1))
    ]
    return f"; did you mean {', '.join(hints)}?" if hints else ""


def agent_action(kinds: tuple[str, ...], path_kinds: tuple[str, ...], repeat: bool = False):
    """An ``argparse.Action`` for ``--agent KIND [PATH]`` (``nargs="+"``): KIND one of
    ``kinds``, a PATH exactly for ``path_kinds``. Stores ``(kind, path_or_None)``, or with
    ``repeat`` a list of them, one per ``--agent``; without it a second ``--agent`` is an error."""

    class AgentAction(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            import difflib

            kind, *rest = values
            if kind not in kinds:
                near = difflib.get_close_matches(kind, kinds, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise argparse.ArgumentError(
                    self, f"unknown agent {kind!r}{hint} (choose from {', '.join(kinds)})"
                )
            if kind in path_kinds and len(rest) != 1:
                raise argparse.ArgumentError(self, f"'{kind}' takes one path: --agent {kind} PATH")
            if kind not in path_kinds and rest:
                options = [r for r in rest if "=" in r]
                hint = (
                    f" (env options go in --env-option {options[0]})" if options and repeat else ""
                )
                raise argparse.ArgumentError(
                    self, f"'{kind}' takes no argument, got {' '.join(rest)!r}{hint}"
                )
            spec = (kind, rest[0] if rest else None)
            current = getattr(namespace, self.dest, None)
            if repeat:
                agents = [] if current is None or current is self.default else list(current)
                setattr(namespace, self.dest, [*agents, spec])
            elif getattr(namespace, f"_{self.dest}_given", False):
                raise argparse.ArgumentError(self, "give one --agent")
            else:
                setattr(namespace, self.dest, spec)
            setattr(namespace, f"_{self.dest}_given", True)

    return AgentAction


def thread_count(text: str) -> int | None:
    """``--threads``: ``auto`` (None: the thread policy, :mod:`pixelrl.threads`) or a count in
    [1, the cores this process may run on]."""
    from pixelrl.threads import usable_cores

    if text.strip().lower() == "auto":
        return None
    value = positive_int(text)
    cores = usable_cores()
    if value > cores:
        raise argparse.ArgumentTypeError(
            f"must be at most {cores}, the cores this process may run on, got {text}"
        )
    return value


def add_threads_argument(parser: argparse.ArgumentParser, what: str = "the model") -> None:
    """``--threads N|auto`` on a command where a model runs."""
    parser.add_argument("--threads", type=thread_count, default=None, metavar="N",
                        help=f"threads {what} runs on (torch, ONNX Runtime); default auto: the "
                        "cores this process may use less what keeps them busy (pixelrl.threads)")  # fmt: skip


def use_threads(args: argparse.Namespace, import_torch: bool = True, say: bool = True):
    """Apply ``args.threads`` through the thread policy (:func:`pixelrl.threads.use`) and, with
    ``say``, print the choice as one line of the command's output (stdout: stderr holds nothing
    but a user mistake's one error line); returns the :class:`~pixelrl.threads.Threads`."""
    from pixelrl.threads import choose, use

    threads = use(choose(args.threads), import_torch)
    if say:
        print(f"threads: {threads}", flush=True)
    return threads
