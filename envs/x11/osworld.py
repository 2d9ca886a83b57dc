"""OSWorld task files as they are, for the X11 env: schema, what runs here, getters and metrics.

An OSWorld task (``evaluation_examples/examples/<domain>/<uuid>.json`` in xlang-ai/OSWorld)::

    {"id": "<uuid>", "snapshot": "os", "instruction": "...", "source": "...",
     "trajectory": "trajectories/", "related_apps": ["os"],
     "config": [{"type": "execute", "parameters": {"command": "...", "shell": true}}, ...],
     "evaluator": {"postconfig": [steps], "func": "exact_match" | [...], "conj": "and" | "or",
                   "result": {getter} | [...], "expected": {getter} | [...],
                   "options": {...} | [...]}}

:func:`parse_osworld_task` reads it into an :class:`~pixelrl.envs.x11.tasks.X11Task` (``schema
"osworld"``) whose steps are flat dicts (``parameters`` merged in). Whatever cannot run here
(a ``download`` of a URL, a cloud file, Chrome over CDP, a metric we lack, a command that needs
root) is refused at load with one :class:`~pixelrl.envs.x11.tasks.UnsupportedTaskError` listing every part; nothing is found
missing mid-run.

Strings may use pixelrl's placeholders (``{apps}``, ``{python}``, ``{workdir}``, ``{display}``),
so a task can start the test apps shipped in ``assets/x11_apps``.

Steps (``config`` and ``evaluator.postconfig``): ``execute`` / ``command`` (run to completion,
within the sandbox's step time, 30 s by default), ``launch`` (start; with pixelrl's ``window``, a title regex, wait for it), ``open`` (``xdg-open`` the path; text opens in xedit at
the top left, and the step waits for its window), ``activate_window`` (``window_name``,
``strict``, ``by_class``), ``sleep``. Every command runs in the episode's sandbox
(:mod:`pixelrl.envs.x11.sandbox`), as ``nobody``, with ``/home/user`` as home.

Getters: ``vm_command_line`` (stdout of ``command``), ``vm_command_error`` (its stderr),
``vm_file`` (the file's text; ``multi``/``gives`` give a list), ``rule`` (``rules`` as is). Where
OSWorld's ``vm_file`` hands a metric a downloaded copy's *path*, here the metric gets the text.

Metrics, with OSWorld's meaning: ``exact_match``, ``check_include_exclude``, ``match_in_list``,
``is_in_list``, ``literal_match``, ``fuzzy_match`` (rapidfuzz's ratio, as OSWorld),
``check_direct_json_object``, ``compare_text_file``, ``diff_text_file``, and ``infeasible``
(success when the agent's last action is ``fail``). Several metrics combine with ``conj``:
``and`` is 0 as soon as one is 0, else their mean; ``or`` is 1 as soon as one is 1, else the max.
Getters read at most the sandbox's ``output_bytes`` a file, and one evaluation's getters
``read_bytes`` and ``read_files`` in total; a metric runs in a child process killed past the step
time (:func:`bounded_metric`: ``diff_text_file`` and ``fuzzy_match`` are quadratic on texts a task
chooses), which is then a :class:`~pixelrl.envs.x11.tasks.TaskError`; so is an evaluation (its
postconfig, getters and metrics together) past ``evaluation_s``, and a set-up past ``setup_s``.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import re
import select
import shlex
import shutil
import signal
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelrl.assets import ASSETS_DIR

OSWORLD_TASK_DIR = ASSETS_DIR / "osworld_tasks"  # the shipped OSWorld-schema tasks
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STEP_TYPES = ("execute", "command", "launch", "open", "activate_window", "sleep")
GETTER_TYPES = ("vm_command_line", "vm_command_error", "vm_file", "rule")
METRICS = (
    "exact_match",
    "check_include_exclude",
    "match_in_list",
    "is_in_list",
    "literal_match",
    "fuzzy_match",
    "check_direct_json_object",
    "compare_text_file",
    "diff_text_file",
    "infeasible",
)
OSWORLD_FIELDS = {"id", "snapshot", "instruction", "source", "trajectory", "related_apps"}
OSWORLD_FIELDS |= {"config", "evaluator", "max_steps", "solution", "proxy", "fixed_ip"}
OSWORLD_FIELDS |= {"possibility_of_env_change", "_comment", "comment"}

# Steps and getters of OSWorld we know and cannot do here, with the reason shown.
WHY_NOT = {
    "download": "downloads a URL (no network here)",
    "upload_file": "uploads a file from the host running OSWorld",
    "cloud_file": "fetches a URL (no network here)",
    "chrome_open_tabs": "drives Chrome over CDP",
    "chrome_close_tabs": "drives Chrome over CDP",
    "update_browse_history": "edits Chrome's history",
    "googledrive": "needs a Google Drive account",
    "login": "logs into a website",
    "change_wallpaper": "needs a GNOME desktop",
    "tidy_desktop": "not implemented by OSWorld either",
    "act": "not implemented by OSWorld either",
    "replay": "not implemented by OSWorld either",
    "close_window": "not supported here yet",
    "vm_terminal_output": "reads the GNOME terminal's text (accessibility tree)",
    "accessibility_tree": "needs an accessibility tree (AT-SPI)",
}
# Commands that read or change what only OSWorld's Ubuntu GNOME VM has: here they would answer
# with defaults (gsettings' memory backend says lock-enabled is true), so a task would be
# "solved" by doing nothing. Refused at load instead.
NEEDS_DESKTOP = {
    "gsettings": "needs GNOME settings (gsettings/dconf)",
    "dconf": "needs GNOME settings (gsettings/dconf)",
    "pactl": "needs a sound server (PulseAudio)",
    "pulseaudio": "needs a sound server (PulseAudio)",
    "timedatectl": "needs systemd",
    "systemctl": "needs systemd",
}
_WORDS = re.compile(r"[\w.-]+")
_SUDO = re.compile(r"(^|[\s;&|(`])sudo(\s|$)")
_URL = re.compile(r"\bhttps?://")


@dataclass(frozen=True)
class Refusal:
    """One part of a task that cannot run here: where, a short reason key, and the text."""

    where: str
    reason: str
    detail: str


def looks_like_osworld(data: Any) -> bool:
    """Whether a task dict is in OSWorld's schema (rather than pixelrl's own)."""
    if not isinstance(data, dict):
        return False
    if set(data) & {"snapshot", "source", "trajectory", "related_apps"}:
        return True
    steps = data.get("config") or []
    if isinstance(steps, list) and any(isinstance(s, dict) and "parameters" in s for s in steps):
        return True
    ev = data.get("evaluator")
    if isinstance(ev, dict):
        if isinstance(ev.get("func"), list) or "postconfig" in ev or "conj" in ev:
            return True
        expected = ev.get("expected")
        if ev.get("func") != "json_match" and isinstance(expected, dict) and "type" in expected:
            return True
        if ev.get("func") == "infeasible" or ev.get("func") in METRICS[1:]:
            return True
    return False


def _flat(step: Any) -> Any:
    if isinstance(step, dict) and isinstance(step.get("parameters"), dict):
        return {"type": step.get("type"), **step["parameters"]}
    return step


def _command_words(command: Any) -> str:
    if isinstance(command, list):
        return " ".join(str(c) for c in command)
    return str(command)


def _program(command: Any, shell: bool) -> str | None:
    """The program a command starts, where it is plain to see (not through a shell)."""
    if isinstance(command, list) and command and not shell:
        return command[0]
    if isinstance(command, str) and not shell:
        try:
            words = shlex.split(command)
        except ValueError:
            return None
        return words[0] if words else None
    return None


def _installed(program: str) -> bool:
    venv_bin = os.path.dirname(sys.executable)
    return shutil.which(program, path=f"{venv_bin}:{SANDBOX_PATH}") is not None


def _check_command(where: str, step: dict[str, Any], refusals: list[Refusal]) -> None:
    command = step.get("command")
    ok = (isinstance(command, str) and command.strip()) or (
        isinstance(command, list) and command and all(isinstance(c, str) for c in command)
    )
    if not ok:
        refusals.append(
            Refusal(where, "bad command", "command must be a string or list of strings")
        )
        return
    text = _command_words(command)
    program = _program(command, bool(step.get("shell")))
    if program and "{" not in program and not _installed(program):
        refusals.append(
            Refusal(
                where, f"program {os.path.basename(program)}", f"{program!r} is not installed here"
            )
        )
    if _SUDO.search(text):
        refusals.append(
            Refusal(where, "needs root (sudo)", "runs sudo; the sandbox never runs as root")
        )
    for word in sorted(set(_WORDS.findall(text)) & set(NEEDS_DESKTOP)):
        why = NEEDS_DESKTOP[word]
        refusals.append(Refusal(where, why.split(" (")[0], f"runs {word}: {why}"))
    if _URL.search(text):
        refusals.append(
            Refusal(where, "needs network", "fetches a URL; the sandbox has no network")
        )


def _check_steps(steps: Any, where: str, refusals: list[Refusal]) -> list[dict[str, Any]]:
    if steps is None:
        return []
    if not isinstance(steps, list):
        refusals.append(Refusal(where, "bad schema", "must be a list of steps"))
        return []
    out = []
    for i, raw in enumerate(steps):
        step = _flat(raw)
        w = f"{where}[{i}]"
        if not isinstance(step, dict) or not isinstance(step.get("type"), str):
            refusals.append(Refusal(w, "bad schema", "a step is an object with a type"))
            continue
        kind = step["type"]
        if kind not in STEP_TYPES:
            why = WHY_NOT.get(kind, "unknown step type")
            refusals.append(Refusal(w, f"step {kind}", f"step {kind!r}: {why}"))
            continue
        if kind in ("execute", "command", "launch"):
            _check_command(w, step, refusals)
        elif kind == "open" and not isinstance(step.get("path"), str):
            refusals.append(Refusal(w, "bad schema", "an open step needs a path"))
        elif kind == "activate_window" and not isinstance(step.get("window_name"), str):
            refusals.append(Refusal(w, "bad schema", "an activate_window step needs window_name"))
        elif kind == "sleep":
            from pixelrl.envs.x11.tasks import TaskError, check_sleep

            try:
                check_sleep(step.get("seconds", 0), w)
            except TaskError as e:
                refusals.append(Refusal(w, "bad sleep", str(e).replace(f"{w}: ", "")))
        if kind == "launch" and "window" in step:
            from pixelrl.envs.x11.tasks import TaskError, compile_pattern

            try:
                compile_pattern(step["window"], w)
            except TaskError as e:
                refusals.append(Refusal(w, "bad pattern", str(e).replace(f"{w}: ", "")))
        out.append(step)
    return out


def _check_getter(getter: Any, where: str, refusals: list[Refusal]) -> None:
    if getter is None or getter == {}:
        return
    if not isinstance(getter, dict) or not isinstance(getter.get("type"), str):
        refusals.append(Refusal(where, "bad schema", "a getter is an object with a type"))
        return
    kind = getter["type"]
    if kind not in GETTER_TYPES:
        why = WHY_NOT.get(kind, "not supported here")
        refusals.append(Refusal(where, f"getter {kind}", f"getter {kind!r}: {why}"))
        return
    if kind in ("vm_command_line", "vm_command_error"):
        _check_command(where, getter, refusals)
    elif kind == "vm_file":
        paths = getter.get("path")
        paths = paths if getter.get("multi") else [paths]
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            refusals.append(Refusal(where, "bad schema", "a vm_file getter needs path(s)"))
        elif getter.get("multi"):
            gives = getter.get("gives", [0])
            indexes = isinstance(gives, list) and all(type(g) is int for g in gives)
            if (
                not indexes
                or not gives
                or sorted(set(gives)) != sorted(gives)
                or not all(0 <= g < len(paths) for g in gives)
            ):
                refusals.append(
                    Refusal(where, "bad schema", "gives must list distinct indexes of path")
                )
        if getter.get("time_suffix"):
            refusals.append(
                Refusal(where, "getter vm_file time_suffix", "time_suffix not supported")
            )
    elif kind == "rule" and "rules" not in getter:
        refusals.append(Refusal(where, "bad schema", "a rule getter needs rules"))


def _as_list(value: Any, n: int) -> list[Any]:
    return value if isinstance(value, list) else [value] * n


def check_osworld(data: Any, source: str = "<task>") -> tuple[dict[str, Any], list[Refusal]]:
    """The normalized task dict and every refusal (empty when it can run here)."""
    refusals: list[Refusal] = []
    if not isinstance(data, dict):
        return {}, [Refusal(source, "bad schema", "a task is a JSON object")]
    for key in ("id", "instruction", "evaluator"):
        if key not in data:
            refusals.append(Refusal(source, "bad schema", f"missing field {key!r}"))
    unknown = set(data) - OSWORLD_FIELDS
    if unknown:
        refusals.append(Refusal(source, "bad schema", f"unknown field(s) {sorted(unknown)}"))
    if not isinstance(data.get("id", ""), str) or not re.fullmatch(
        r"[\w.-]+", data.get("id") or "-"
    ):
        refusals.append(Refusal(f"{source}: id", "bad schema", "must be letters, digits, - _ ."))
    if (
        not isinstance(data.get("instruction", ""), str)
        or not str(data.get("instruction", "x")).strip()
    ):
        refusals.append(
            Refusal(f"{source}: instruction", "bad schema", "must be a non-empty string")
        )
    config = _check_steps(data.get("config"), f"{source}: config", refusals)
    ev = data.get("evaluator")
    norm: dict[str, Any] = {}
    if not isinstance(ev, dict):
        refusals.append(Refusal(f"{source}: evaluator", "bad schema", "must be an object"))
    else:
        funcs = ev.get("func")
        many = isinstance(funcs, list)
        funcs = funcs if many else [funcs]
        n = len(funcs)
        results = _as_list(ev.get("result"), n) if many else [ev.get("result")]
        expecteds = _as_list(ev.get("expected"), n) if many else [ev.get("expected")]
        options = _as_list(ev.get("options") or {}, n) if many else [ev.get("options") or {}]
        if many and not (len(results) == len(expecteds) == len(options) == n):
            refusals.append(
                Refusal(f"{source}: evaluator", "bad schema", "func, result, expected lists differ")
            )
        for i, func in enumerate(funcs):
            w = f"{source}: evaluator.func" + (f"[{i}]" if many else "")
            if not isinstance(func, str) or not func:
                refusals.append(Refusal(w, "no metric", "the task has no metric (empty func)"))
            elif func not in METRICS:
                refusals.append(
                    Refusal(w, f"metric {func}", f"metric {func!r} not implemented here")
                )
        if "infeasible" not in funcs and all(isinstance(f, str) and f for f in funcs):
            for i, getter in enumerate(results):
                w = f"{source}: evaluator.result" + (f"[{i}]" if many else "")
                if not getter:
                    refusals.append(Refusal(w, "bad schema", "a metric needs a result getter"))
                _check_getter(getter, w, refusals)
            for i, getter in enumerate(expecteds):
                _check_getter(
                    getter, f"{source}: evaluator.expected" + (f"[{i}]" if many else ""), refusals
                )
        for opt in options:
            if not isinstance(opt, dict):
                refusals.append(
                    Refusal(f"{source}: evaluator.options", "bad schema", "must be an object")
                )
        post = _check_steps(ev.get("postconfig"), f"{source}: evaluator.postconfig", refusals)
        conj = ev.get("conj", "and")
        if conj not in ("and", "or"):
            refusals.append(
                Refusal(f"{source}: evaluator.conj", "bad schema", "must be 'and' or 'or'")
            )
        norm = {
            "func": funcs,
            "result": results,
            "expected": expecteds,
            "options": [o if isinstance(o, dict) else {} for o in options],
            "conj": conj,
            "postconfig": post,
        }
    return {"config": config, "evaluator": norm}, refusals


def format_refusals(source: str, refusals: list[Refusal]) -> str:
    """One message with every part (``where: why``) that keeps a task from running here."""
    parts = "; ".join(f"{r.where.replace(source + ': ', '')}: {r.detail}" for r in refusals)
    return f"{source}: cannot run here ({len(refusals)} part(s)): {parts}"


def summary(refusals: list[Refusal]) -> str:
    """The distinct reasons of a refused task, each once with its count (for listings)."""
    counts: dict[str, int] = {}
    for r in refusals:
        counts[r.detail] = counts.get(r.detail, 0) + 1
    return "; ".join(d if n == 1 else f"{d} (x{n})" for d, n in counts.items())


# -- running steps ------------------------------------------------------------------------------
_XEDIT_DESKTOP = """[Desktop Entry]
Type=Application
Name=xedit
Exec=xedit -geometry 640x480+0+0 %f
MimeType=text/plain;
"""
_MIMEAPPS = "[Default Applications]\n" + "".join(
    f"{m}=pixelrl-xedit.desktop\n"
    for m in ("text/plain", "text/x-python", "text/x-shellscript", "text/csv", "application/json")
)


def seed_home(sandbox) -> None:
    """What OSWorld's VM user has and a fresh home lacks: Desktop/, and xdg-open's text editor."""
    sandbox.write("Desktop/.keep", b"")
    sandbox.write(".local/share/applications/pixelrl-xedit.desktop", _XEDIT_DESKTOP.encode())
    sandbox.write(".config/mimeapps.list", _MIMEAPPS.encode())


def run_step(
    step: dict[str, Any], sandbox, windows, window_timeout_s: float = 15.0, where: str = "step"
) -> str | None:
    """Run one OSWorld step in ``sandbox``; a problem comes back as text (OSWorld logs and goes
    on), except a step past the sandbox's time limit: a :class:`TaskError` naming ``where``."""
    from pixelrl.envs.x11.tasks import TaskError, sleep_seconds

    kind = step["type"]
    if kind == "sleep":
        seconds = sleep_seconds({"seconds": step.get("seconds", 0)}, where, sandbox.limits.step_s)
        sandbox.wait(seconds, f"{where}: sleep")
        return None
    if kind in ("execute", "command"):
        rc, _, err = sandbox.run(step["command"], bool(step.get("shell")))
        if rc is None and err.startswith("timed out"):
            raise TaskError(f"{where}: {kind} {step['command']!r} {err}")
        return None if rc == 0 else f"{kind} {step['command']!r}: exit {rc}: {err[-300:]}"
    if kind == "launch":
        try:
            sandbox.launch(step["command"], bool(step.get("shell")))
        except FileNotFoundError as e:
            return f"launch {step['command']!r}: {e}"
        if step.get("window"):  # pixelrl's addition: wait until the app shows (a title regex)
            from pixelrl.envs.x11.windows import WindowTimeout

            # a display that does not answer, or a spent set-up budget, ends the reset instead
            try:
                windows.wait_for(step["window"], timeout_s=sandbox.time_left(window_timeout_s))
            except WindowTimeout as e:
                return f"launch {step['command']!r}: {e}"
        return None
    if kind == "open":
        path = step["path"]
        before = {w.id for w in windows.list()}
        try:
            sandbox.launch(["xdg-open", path])
        except FileNotFoundError as e:
            return f"open {path!r}: {e}"
        # OSWorld waits for a window named after the file; xedit's title is just "xedit", so
        # here a new window, or one named after the file, will do.
        name = os.path.basename(path)
        deadline = time.monotonic() + sandbox.time_left(window_timeout_s, f"{where}: open")
        while time.monotonic() < deadline:
            if any(w.id not in before or name in w.title for w in windows.list()):
                return None
            time.sleep(0.05)
        return f"open {path!r}: no window appeared within {window_timeout_s:.0f} s"
    if kind == "activate_window":
        return activate_window(
            windows, step["window_name"], step.get("strict", False), step.get("by_class", False)
        )
    return f"unknown step {kind!r}"


def activate_window(windows, name: str, strict: bool = False, by_class: bool = False) -> str | None:
    """Raise and focus the first window named ``name`` (a substring unless ``strict``)."""
    for w in windows.list():
        if by_class:
            cls = windows.wm_class(w.id)
            hit = any((c == name) if strict else (name.lower() in c.lower()) for c in cls)
        else:
            hit = (w.title == name) if strict else (name.lower() in w.title.lower())
        if hit:
            windows.activate(w.id)
            return None
    return f"activate_window {name!r}: no such window"


# -- getters ---------------------------------------------------------------------------------
def get_state(getter: dict[str, Any] | None, sandbox) -> Any:
    """What an OSWorld getter reads in the sandbox now (None where it finds nothing)."""
    if not getter:
        return None
    kind = getter["type"]
    if kind == "rule":
        return getter["rules"]
    if kind in ("vm_command_line", "vm_command_error"):
        rc, out, err = sandbox.run(getter["command"], bool(getter.get("shell")))
        if rc is None and kind == "vm_command_line":
            return None
        return out if kind == "vm_command_line" else err
    if kind == "vm_file":
        paths = list(getter["path"]) if getter.get("multi") else [getter["path"]]
        gives = getter.get("gives", [0]) if getter.get("multi") else [0]
        texts = []
        for i in sorted(gives):  # distinct indexes of paths (checked at load), in path order
            data = sandbox.read(paths[i])
            try:
                texts.append(None if data is None else data.decode("utf-8"))
            except UnicodeDecodeError:
                texts.append(None)
        return texts[0] if len(texts) == 1 else texts
    raise ValueError(f"unknown getter {kind!r}")


# -- metrics (OSWorld's meaning; a metric given None scores 0) --------------------------------


def _blank(text: str, options: dict[str, Any]) -> str:
    if options.get("ignore_blanks"):
        text = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text).strip())
    if options.get("ignore_case"):
        text = text.lower()
    return text


def metric(func: str, result: Any, expected: Any, options: dict[str, Any]) -> float:
    """One OSWorld metric's score in [0, 1]; bad input for it scores 0, never raises."""
    try:
        return float(_metric(func, result, expected, options))
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError, MemoryError):
        return 0.0


def bounded_metric(
    func: str, result: Any, expected: Any, options: dict[str, Any], timeout_s: float, where: str
) -> float:
    """:func:`metric` in a forked child, killed past ``timeout_s`` (then :class:`TaskError`):
    the texts are the task's, and some metrics are quadratic in them."""
    from pixelrl.envs.x11.tasks import TaskError

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, write 8 bytes, leave without any clean-up of the parent's
        try:
            os.close(read_fd)
            os.write(write_fd, struct.pack("<d", metric(func, result, expected, options)))
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        ready = select.select([read_fd], [], [], timeout_s)[0]
        answer = os.read(read_fd, 8) if ready else b""
    finally:
        os.close(read_fd)
        if len(answer) != 8:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if len(answer) != 8:
        raise TaskError(f"{where}: metric {func} ran past the step time limit ({timeout_s:g} s)")
    return struct.unpack("<d", answer)[0]


def _metric(func: str, result: Any, expected: Any, options: dict[str, Any]) -> float:
    rules = expected if isinstance(expected, dict) else {}
    if func == "exact_match":
        return float(result == rules["expected"])
    if result is None:
        return 0.0
    if func == "check_include_exclude":
        include, exclude = rules.get("include", []), rules.get("exclude", [])
        return float(all(r in result for r in include) and all(r not in result for r in exclude))
    if func == "match_in_list":
        return float(result in rules["expected"])
    if func == "is_in_list":
        return float(rules["expected"] in result)
    if func == "literal_match":
        kind, ignore_case = options.get("type", "str"), options.get("ignore_case", False)
        if isinstance(result, str) and kind == "list":
            try:
                result = ast.literal_eval(result.strip())
            except (ValueError, SyntaxError):
                return 0.0
        if kind == "str":
            a, b = str(result), str(expected)
            return float(a.lower() == b.lower() if ignore_case else a == b)
        if kind == "list":
            if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
                return 0.0
            if len(result) != len(expected):
                return 0.0
            norm = (lambda s: str(s).lower()) if ignore_case else str
            return float([norm(s) for s in result] == [norm(s) for s in expected])
        return 0.0
    if func == "fuzzy_match":
        from rapidfuzz import fuzz

        return fuzz.ratio(str(result), str(rules["expected"])) / 100.0
    if func == "check_direct_json_object":
        if isinstance(result, str):
            result = json.loads(result.strip().replace("'", '"'))  # RecursionError: scores 0
        if not isinstance(result, dict):
            return 0.0
        want = rules["expected"]
        if not rules.get("expect_in_result", False):
            return float(all(result.get(k) == v for k, v in want.items()))
        for key, value in want.items():
            got = result.get(key)
            if isinstance(value, list):
                if not (isinstance(got, list) and any(v in got for v in value)):
                    return 0.0
            elif isinstance(value, str):
                if got is None or value not in got:
                    return 0.0
            else:
                return 0.0
        return 1.0
    if func == "compare_text_file":
        if not result or expected is None:
            return 0.0
        return float(_blank(result, options) == _blank(expected, options))
    if func == "diff_text_file":
        if expected is None:
            return 0.0
        return difflib.SequenceMatcher(a=result.splitlines(), b=expected.splitlines()).ratio()
    raise ValueError(f"unknown metric {func!r}")


def score(
    evaluator: dict[str, Any], sandbox, last_action_failed: bool = False, timeout_s: float = 30.0
) -> float:
    """OSWorld's ``DesktopEnv.evaluate`` on a normalized evaluator (postconfig already run);
    each metric within ``timeout_s`` (:func:`bounded_metric`)."""
    from pixelrl.envs.x11.tasks import TaskError

    funcs = evaluator["func"]
    if funcs == ["infeasible"]:
        return float(last_action_failed)
    if last_action_failed:
        return 0.0
    conj = evaluator.get("conj", "and")
    scores = []
    for i, (func, res, exp, opt) in enumerate(
        zip(funcs, evaluator["result"], evaluator["expected"], evaluator["options"])
    ):
        result, expected = get_state(res, sandbox), get_state(exp, sandbox) if exp else None
        where = f"evaluator.func[{i}]"
        allowed_s = sandbox.time_left(timeout_s, f"{where}: metric {func}")
        try:
            s = bounded_metric(func, result, expected, opt, allowed_s, where)
        except TaskError as e:  # cut short by the evaluation's budget, or by the step time
            raise (sandbox.budget_error(f"{where}: metric {func}") or e) from None
        if conj == "and" and s == 0.0:
            return 0.0
        if conj == "or" and s == 1.0:
            return 1.0
        scores.append(s)
    return sum(scores) / len(scores) if conj == "and" else max(scores)


# -- a folder of task files ---------------------------------------------------------------------
@dataclass
class Verdict:
    """Whether one task file would run here: ``task`` when it loads, else ``refusals``."""

    path: str
    task: Any = None
    refusals: list[Refusal] | None = None
    error: str | None = None  # not a task file at all (bad JSON, not our schema either)

    @property
    def runs(self) -> bool:
        return self.task is not None


def survey(folder: str | os.PathLike) -> list[Verdict]:
    """Every ``*.json`` under ``folder`` (recursively, sorted), loaded or refused with reasons;
    a task over the default :class:`~pixelrl.envs.x11.sandbox.SandboxLimits` budgets (its
    sleeps, steps, metrics, files read) is refused as ``over budget``."""
    from pixelrl.envs.x11.sandbox import SandboxLimits

    limits = SandboxLimits()
    return [_verdict(path, limits) for path in sorted(Path(folder).rglob("*.json"))]


def _verdict(path: Path, limits: Any) -> Verdict:
    from pixelrl.envs.x11.tasks import (
        TaskError,
        UnsupportedTaskError,
        check_task_limits,
        load_task,
    )

    try:
        task = load_task(path)
    except UnsupportedTaskError as e:
        return Verdict(str(path), refusals=e.refusals)
    except TaskError as e:
        return Verdict(str(path), error=str(e))
    except RecursionError:  # a structure deep enough for the checks themselves
        return Verdict(str(path), error=f"{path}: nested too deeply")
    try:
        check_task_limits(task, limits)
    except TaskError as e:  # it would run here, but not within the budgets
        detail = str(e).replace(f"{path}: ", "")
        return Verdict(str(path), refusals=[Refusal(str(path), "over budget", detail)])
    return Verdict(str(path), task=task)


def reason_counts(verdicts: list[Verdict]) -> dict[str, int]:
    """How many tasks each reason refuses (a task counts once per reason), most first."""
    counts: dict[str, int] = {}
    for v in verdicts:
        keys = {r.reason for r in v.refusals or []} | ({"not a task file"} if v.error else set())
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
