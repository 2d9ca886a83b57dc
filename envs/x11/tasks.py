"""X11 desktop tasks as data files, in the shape of OSWorld's task JSON.

A task file (``assets/x11_tasks/<Name>.json``)::

    {
      "id": "XcalcMultiply",                      # -> pixelrl/XDesktop-XcalcMultiply-v0
      "instruction": "Compute 6 x 7 with the calculator, ...",
      "max_steps": 15,                            # optional (OSWorld's default: 15)
      "config": [                                 # set-up steps, in order
        {"type": "write_file", "path": "{workdir}/note.txt", "content": ""},
        {"type": "launch", "command": ["xcalc", "-geometry", "+0+0"], "window": "^Calculator$"},
        {"type": "command", "command": ["..."]},   # runs to completion (30 s at most)
        {"type": "sleep", "seconds": 0.2}
      ],
      "evaluator": {
        "result": {"type": "clipboard", "selection": "primary"},   # the getter
        "func": "exact_match",                                      # the checker
        "expected": "42"
      },
      "solution": ["pyautogui.click(x=157, y=316)", "..."]         # a scripted expert (action text)
    }

Strings in ``config`` and ``result`` may use ``{workdir}`` (a fresh folder per episode),
``{apps}`` (``assets/x11_apps``), ``{python}`` (this interpreter) and ``{display}``.

Getters (``result.type``): ``file`` (``path``; text, or None when missing), ``window_title``
(``pattern``: title of the first window whose title matches, or None), ``clipboard``
(``selection``: ``clipboard`` or ``primary``; read through Tk inside the sandbox: Tk answers
``send`` from any client of the display, so a reader on the host would run the task's Tcl),
``command`` (``command``: its stdout). Checkers (``func``): ``exact_match``, ``contains``, ``regex_match``, ``number_match``
(``tolerance``), ``json_match`` (every key of ``expected`` has that value). A getter that finds
nothing (None) fails every checker.

Task files in OSWorld's own schema (UUID ids, ``parameters``, ``related_apps``, getters as
``expected``, ``postconfig``, ``options``) load as they are: see :mod:`pixelrl.envs.x11.osworld`.
What of them cannot run here is refused at load (:class:`UnsupportedTaskError`, every part
listed). Every command of a task, either schema, runs in the episode's sandbox
(:mod:`pixelrl.envs.x11.sandbox`), never on the host, within its limits (a wall-clock time for
each step, getter and metric: :class:`~pixelrl.envs.x11.sandbox.SandboxLimits`).

A task file is hostile input: at most :data:`MAX_TASK_BYTES`, valid UTF-8 JSON of sane depth;
sleeps are finite and within the step time; with a sandbox's limits (:func:`check_task_limits`)
its sleeps add up to no more than the set-up and evaluation budgets, it has at most
:data:`MAX_STEPS` steps and :data:`MAX_METRICS` metrics, and its getters name at most
``read_files`` files; regular expressions (window titles, ``regex_match``)
must compile and run under the ``regex`` engine with a time limit (:func:`search`), since a
pattern like ``^(a+)+$`` takes exponential time in Python's ``re``.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pixelrl.assets import ASSETS_DIR
from pixelrl.envs.gui import MAX_INSTRUCTION_LENGTH
from pixelrl.envs.gui_action import TEXT_CHARSET

ASSETS = ASSETS_DIR
TASK_DIR = ASSETS / "x11_tasks"
APPS_DIR = ASSETS / "x11_apps"
DEFAULT_MAX_STEPS = 15

SETUP_TYPES = {
    "launch": ("command",),
    "command": ("command",),
    "write_file": ("path",),
    "sleep": (),
}
GETTER_TYPES = {
    "file": ("path",),
    "window_title": ("pattern",),
    "clipboard": (),
    "command": ("command",),
}
CHECKERS = ("exact_match", "contains", "regex_match", "number_match", "json_match")
_TASK_ID = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
MAX_TASK_BYTES = 1 << 20  # a task file is a few kB; a larger one is refused unread
REGEX_TIMEOUT_S = 1.0  # one search of a task's pattern (a window title, a checker)
MAX_SLEEP_S = 30.0  # a sleep step at most (SandboxLimits.step_s bounds it again at run time)
MAX_STEPS = 200  # set-up steps of a task (config; OSWorld's postconfig apart); OSWorld's: < 20
MAX_METRICS = 32  # metrics of an OSWorld task (OSWorld's own tasks have fewer than 10)


class TaskError(ValueError):
    """A task file that does not follow the schema; the message names the file and field."""


class UnsupportedTaskError(TaskError):
    """An OSWorld task that needs what we cannot do here; ``refusals`` lists every part
    (:class:`~pixelrl.envs.x11.osworld.Refusal`: where, reason key, text)."""

    def __init__(self, message: str, refusals: list) -> None:
        super().__init__(message)
        self.refusals = refusals


@dataclass(frozen=True)
class X11Task:
    """One parsed task file (see the module doc for the fields)."""

    id: str
    instruction: str
    config: list[dict[str, Any]]
    evaluator: dict[str, Any]
    max_steps: int = DEFAULT_MAX_STEPS
    solution: list[str] = field(default_factory=list)
    path: str = ""
    schema: str = "pixelrl"  # or "osworld": steps and evaluator as pixelrl.envs.x11.osworld reads
    related_apps: list[str] = field(default_factory=list)
    source: str = ""  # OSWorld's "source" (where the task came from)


def _require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise TaskError(f"{where}: {message}")


def _check_command(value: Any, where: str) -> None:
    _require(
        isinstance(value, list) and value and all(isinstance(a, str) for a in value),
        where,
        "command must be a non-empty list of strings (argv; no shell)",
    )


def compile_pattern(pattern: Any, where: str) -> Any:
    """A task's regular expression, compiled by the ``regex`` engine, or :class:`TaskError`."""
    import regex

    _require(isinstance(pattern, str), where, "must be a regular expression (a string)")
    try:
        return regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, RecursionError, OverflowError) as e:
        raise TaskError(f"{where}: not a valid regular expression {pattern!r}: {e}") from None


def search(pattern: str, text: str, where: str = "pattern") -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within :data:`REGEX_TIMEOUT_S`
    (:class:`TaskError` past it: the pattern backtracks without end on such text)."""
    try:
        return compile_pattern(pattern, where).search(text, timeout=REGEX_TIMEOUT_S) is not None
    except TimeoutError:
        raise TaskError(
            f"{where}: the regular expression {pattern!r} ran past {REGEX_TIMEOUT_S:g} s "
            f"on a text of {len(text)} characters (catastrophic backtracking)"
        ) from None


def check_sleep(seconds: Any, where: str, limit_s: float = MAX_SLEEP_S) -> float:
    """A sleep step's seconds: a finite number in [0, ``limit_s``], or :class:`TaskError`."""
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    _require(ok and math.isfinite(seconds), where, f"seconds must be a number, got {seconds!r}")
    _require(
        0 <= seconds <= limit_s,
        where,
        f"sleeps {seconds:g} s; a step may take 0 to {limit_s:g} s (the step time limit)",
    )
    return float(seconds)


def sleep_seconds(step: dict[str, Any], where: str, limit_s: float) -> float:
    """How long a ``sleep`` step sleeps (0.1 s when it does not say), checked against the limit."""
    return check_sleep(step.get("seconds", 0.1), where, limit_s)


def files_read(task: X11Task) -> int:
    """How many files the getters of one evaluation of ``task`` read (a ``multi`` list counts
    every path it names)."""
    if task.schema != "osworld":
        return int(task.evaluator["result"]["type"] == "file")
    ev = task.evaluator
    count = 0
    for getter in list(ev.get("result", [])) + list(ev.get("expected", [])):
        if isinstance(getter, dict) and getter.get("type") == "vm_file":
            paths = getter.get("path")
            count += len(paths) if getter.get("multi") and isinstance(paths, list) else 1
    return count


def check_task_limits(task: X11Task, limits: Any) -> None:
    """Refuse a task that cannot fit a sandbox's budgets (``limits``, a
    :class:`~pixelrl.envs.x11.sandbox.SandboxLimits`): a sleep past ``step_s``; more than
    :data:`MAX_STEPS` steps, or sleeps that add up past ``setup_s`` (the set-up) or
    ``evaluation_s`` (OSWorld's postconfig); more than :data:`MAX_METRICS` metrics; getters that
    read more than ``read_files`` files. What only running can tell (how long a command takes,
    how big a file is) is bounded at run time (:meth:`Sandbox.phase`)."""
    default_s = 0.0 if task.schema == "osworld" else 0.1  # each schema's default sleep
    phases = [("config", task.config, "set-up", "setup_s")]
    if task.schema == "osworld":
        phases.append(("evaluator.postconfig", task.evaluator.get("postconfig", []), "evaluation",
                       "evaluation_s"))  # fmt: skip
    for where, steps, phase, budget_name in phases:
        total = 0.0
        for i, step in enumerate(steps):
            if step.get("type") == "sleep":
                seconds = step.get("seconds", default_s)
                total += check_sleep(seconds, f"{task.path}: {where}[{i}]", limits.step_s)
        budget = getattr(limits, budget_name)
        _require(
            total <= budget,
            f"{task.path}: {where}",
            f"sleeps add up to {total:g} s, past the {phase} budget of {budget:g} s "
            f"(limits.{budget_name})",
        )
        _require(
            len(steps) <= MAX_STEPS,
            f"{task.path}: {where}",
            f"has {len(steps)} steps; a task may have at most {MAX_STEPS}",
        )
    if task.schema == "osworld":
        metrics = len(task.evaluator.get("func", []))
        _require(
            metrics <= MAX_METRICS,
            f"{task.path}: evaluator.func",
            f"has {metrics} metrics; a task may have at most {MAX_METRICS}",
        )
    files = files_read(task)
    _require(
        files <= limits.read_files,
        f"{task.path}: evaluator",
        f"its getters read {files} files, past the budget of {limits.read_files} "
        "(limits.read_files)",
    )


def _limit_and_solution(data: dict[str, Any], source: str) -> tuple[int, list[str]]:
    """The optional ``max_steps`` and ``solution`` fields both schemas share, checked."""
    max_steps = data.get("max_steps", DEFAULT_MAX_STEPS)
    _require(
        isinstance(max_steps, int) and max_steps >= 1,
        f"{source}: max_steps",
        "must be an integer >= 1",
    )
    solution = data.get("solution", [])
    _require(
        isinstance(solution, list) and all(isinstance(s, str) for s in solution),
        f"{source}: solution",
        "must be a list of action texts",
    )
    return max_steps, solution


def parse_osworld_task(data: Any, source: str = "<task>") -> X11Task:
    """An OSWorld task dict as an :class:`X11Task` (``schema="osworld"``), or
    :class:`UnsupportedTaskError` naming every part that cannot run here."""
    from pixelrl.envs.x11 import osworld

    norm, refusals = osworld.check_osworld(data, source)
    if refusals:
        raise UnsupportedTaskError(osworld.format_refusals(source, refusals), refusals)
    max_steps, solution = _limit_and_solution(data, source)
    _require(
        len(data["instruction"]) <= MAX_INSTRUCTION_LENGTH,
        f"{source}: instruction",
        f"is longer than {MAX_INSTRUCTION_LENGTH} characters",
    )
    apps = data.get("related_apps", [])
    return X11Task(
        id=data["id"],
        instruction=data["instruction"],
        config=norm["config"],
        evaluator=norm["evaluator"],
        max_steps=max_steps,
        solution=solution,
        path=source,
        schema="osworld",
        source=str(data.get("source", "")),
        related_apps=[str(a) for a in apps] if isinstance(apps, list) else [],
    )


def parse_task(data: Any, source: str = "<task>") -> X11Task:
    """Validate a task dict and return it as an :class:`X11Task`, or :class:`TaskError`.

    A dict in OSWorld's schema goes to :func:`parse_osworld_task`."""
    from pixelrl.envs.x11.osworld import looks_like_osworld

    if looks_like_osworld(data):
        return parse_osworld_task(data, source)
    _require(isinstance(data, dict), source, "a task is a JSON object")
    for key in ("id", "instruction", "config", "evaluator"):
        _require(key in data, source, f"missing field {key!r}")
    unknown = set(data) - {"id", "instruction", "config", "evaluator", "max_steps", "solution"}
    _require(not unknown, source, f"unknown field(s) {sorted(unknown)}")
    _require(
        isinstance(data["id"], str) and bool(_TASK_ID.match(data["id"])),
        f"{source}: id",
        f"must be CamelCase letters and digits, got {data['id']!r}",
    )
    _require(
        isinstance(data["instruction"], str) and data["instruction"].strip() != "",
        f"{source}: instruction",
        "must be a non-empty string",
    )
    bad = sorted(set(data["instruction"]) - set(TEXT_CHARSET))
    _require(not bad, f"{source}: instruction", f"holds characters outside TEXT_CHARSET: {bad!r}")
    _require(
        len(data["instruction"]) <= MAX_INSTRUCTION_LENGTH,
        f"{source}: instruction",
        f"is longer than {MAX_INSTRUCTION_LENGTH} characters",
    )
    _require(isinstance(data["config"], list), f"{source}: config", "must be a list of steps")
    for i, step in enumerate(data["config"]):
        where = f"{source}: config[{i}]"
        _require(
            isinstance(step, dict) and "type" in step, where, "a step is an object with a type"
        )
        kind = step["type"]
        _require(
            kind in SETUP_TYPES, f"{where}.type", f"unknown {kind!r}; one of {sorted(SETUP_TYPES)}"
        )
        for key in SETUP_TYPES[kind]:
            _require(key in step, where, f"a {kind} step needs {key!r}")
        if kind in ("launch", "command"):
            _check_command(step["command"], f"{where}.command")
        if kind == "launch" and "window" in step:
            compile_pattern(step["window"], f"{where}.window")
        if kind == "sleep":
            check_sleep(step.get("seconds", 0.1), f"{where}.seconds")
        if kind == "write_file":
            _require(isinstance(step["path"], str), f"{where}.path", "must be a string")
            _require(
                isinstance(step.get("content", ""), str), f"{where}.content", "must be a string"
            )
    ev = data["evaluator"]
    _require(isinstance(ev, dict), f"{source}: evaluator", "must be an object")
    for key in ("result", "func", "expected"):
        _require(key in ev, f"{source}: evaluator", f"missing field {key!r}")
    result = ev["result"]
    _require(
        isinstance(result, dict) and "type" in result,
        f"{source}: evaluator.result",
        "a getter object with a type",
    )
    _require(
        result["type"] in GETTER_TYPES,
        f"{source}: evaluator.result.type",
        f"unknown {result['type']!r}; one of {sorted(GETTER_TYPES)}",
    )
    for key in GETTER_TYPES[result["type"]]:
        _require(
            key in result, f"{source}: evaluator.result", f"a {result['type']} getter needs {key!r}"
        )
    if result["type"] == "command":
        _check_command(result["command"], f"{source}: evaluator.result.command")
    if result["type"] == "window_title":
        compile_pattern(result["pattern"], f"{source}: evaluator.result.pattern")
    if result["type"] == "file":
        _require(isinstance(result["path"], str), f"{source}: evaluator.result.path", "a string")
    if result["type"] == "clipboard":
        _require(
            result.get("selection", "clipboard") in ("clipboard", "primary"),
            f"{source}: evaluator.result.selection",
            "must be 'clipboard' or 'primary'",
        )
    _require(
        ev["func"] in CHECKERS,
        f"{source}: evaluator.func",
        f"unknown {ev['func']!r}; one of {CHECKERS}",
    )
    if ev["func"] == "json_match":
        _require(
            isinstance(ev["expected"], dict),
            f"{source}: evaluator.expected",
            "json_match expects an object",
        )
    else:
        _require(
            isinstance(ev["expected"], (str, int, float)) and not isinstance(ev["expected"], bool),
            f"{source}: evaluator.expected",
            f"{ev['func']} expects a string or a number",
        )
    if ev["func"] == "regex_match":
        compile_pattern(str(ev["expected"]), f"{source}: evaluator.expected")
    if ev["func"] == "number_match":
        try:
            _require(
                math.isfinite(float(ev["expected"])), f"{source}: evaluator.expected", "finite"
            )
            _require(
                math.isfinite(float(ev.get("tolerance", 0))) and float(ev.get("tolerance", 0)) >= 0,
                f"{source}: evaluator.tolerance",
                "must be a number >= 0",
            )
        except (ValueError, TypeError):
            raise TaskError(
                f"{source}: evaluator.expected: number_match expects a number"
            ) from None
    max_steps, solution = _limit_and_solution(data, source)
    return X11Task(
        id=data["id"],
        instruction=data["instruction"],
        config=data["config"],
        evaluator=ev,
        max_steps=max_steps,
        solution=solution,
        path=source,
    )


def read_task_file(path: str | os.PathLike) -> Any:
    """The JSON of a task file, read as hostile input: a regular file (never a FIFO or a
    device, which would block), at most :data:`MAX_TASK_BYTES`, UTF-8, of sane depth."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise TaskError(f"{path}: no such task file") from None
    except OSError as e:
        raise TaskError(f"{path}: cannot read: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TaskError(f"{path}: not a regular file")
        raw = f.read(MAX_TASK_BYTES + 1)
    if len(raw) > MAX_TASK_BYTES:
        raise TaskError(f"{path}: larger than {MAX_TASK_BYTES} bytes; a task file is a few kB")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TaskError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise TaskError(f"{path}: not valid JSON: {e}") from None
    except RecursionError:
        raise TaskError(f"{path}: JSON nested too deeply") from None


def load_task(path: str | os.PathLike) -> X11Task:
    """Read and validate one task file."""
    data = read_task_file(path)
    try:
        return parse_task(data, str(path))
    except RecursionError:
        raise TaskError(f"{path}: nested too deeply") from None


def task_files(task_dir: str | os.PathLike = TASK_DIR) -> list[Path]:
    """The shipped task files, sorted by name."""
    return sorted(Path(task_dir).glob("*.json"))


def resolve_task(task: str | os.PathLike | X11Task) -> X11Task:
    """A task from an :class:`X11Task`, a path to a JSON file, or a shipped task's id."""
    if isinstance(task, X11Task):
        return task
    candidate = Path(task)
    if candidate.suffix == ".json" or candidate.exists():
        return load_task(candidate)
    shipped = TASK_DIR / f"{task}.json"
    if shipped.exists():
        return load_task(shipped)
    known = ", ".join(p.stem for p in task_files())
    raise TaskError(f"unknown X11 task {str(task)!r}; shipped tasks: {known}")


# -- placeholders -----------------------------------------------------------------------------
def substitute(value: Any, variables: dict[str, str]) -> Any:
    """``value`` with ``{name}`` placeholders in its strings replaced (no format(): no surprises)."""
    if isinstance(value, str):
        for name, replacement in variables.items():
            value = value.replace("{" + name + "}", replacement)
        return value
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


# -- getters ----------------------------------------------------------------------------------
# Runs inside the sandbox, as the task's user: Tk would run any Tcl another client of the display
# sends it (``send``), so this reader must never run on the host.
_CLIPBOARD_READER = """
import sys, tkinter
root = tkinter.Tk(); root.withdraw()
for target in ("UTF8_STRING", "STRING"):  # old Xt apps (xcalc) offer only STRING
    try:
        sys.stdout.write(root.selection_get(selection=sys.argv[1], type=target))
        break
    except tkinter.TclError:
        pass
else:
    sys.exit(3)
"""


def get_result(getter: dict[str, Any], windows, sandbox) -> str | None:
    """What ``getter`` reads off the desktop now, as text; None when there is nothing to read.

    The task's paths and commands are read and run inside ``sandbox`` (a
    :class:`~pixelrl.envs.x11.sandbox.Sandbox`, within its limits), never on the host."""
    kind = getter["type"]
    if kind == "file":
        data = sandbox.read(getter["path"])
        try:
            return None if data is None else data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if kind == "window_title":
        for w in windows.list():
            if search(getter["pattern"], w.title, "evaluator.result.pattern"):
                return w.title
        return None
    if kind == "clipboard":
        selection = getter.get("selection", "clipboard").upper()
        rc, out, _ = sandbox.run([sys.executable, "-I", "-c", _CLIPBOARD_READER, selection])
        return out if rc == 0 else None
    if kind == "command":
        rc, out, _ = sandbox.run(getter["command"])
        return None if rc is None else out
    raise TaskError(f"unknown getter type {kind!r}")


# -- checkers ---------------------------------------------------------------------------------
def check(func: str, result: str | None, expected: Any, evaluator: dict[str, Any]) -> bool:
    """Whether ``result`` satisfies the checker ``func`` against ``expected``."""
    if result is None:
        return False
    strip = evaluator.get("strip", True)
    text = result.strip() if strip else result
    if func == "exact_match":
        return text == (str(expected).strip() if strip else str(expected))
    if func == "contains":
        return str(expected) in text
    if func == "regex_match":
        return search(str(expected), text, "evaluator.expected")
    if func == "number_match":
        try:
            value = float(text)
        except ValueError:
            return False
        return math.isclose(value, float(expected), abs_tol=float(evaluator.get("tolerance", 1e-9)))
    if func == "json_match":
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return False
        return isinstance(data, dict) and all(data.get(k) == v for k, v in expected.items())
    raise TaskError(f"unknown checker {func!r}")


class SolutionExpert:
    """The x11 family's expert: the task file's ``solution`` (action text), a step a call from
    each reset, its last step repeated once spent."""

    def __init__(self, env: Any) -> None:
        self.solution: list[str] = list(env.unwrapped.task.solution)
        if not self.solution:
            raise ValueError(f"task {env.unwrapped.task.id!r} has no solution to play")
        self.k = 0

    def reset(self) -> None:
        self.k = 0

    def act(self) -> str:
        self.k += 1
        return self.solution[min(self.k - 1, len(self.solution) - 1)]
