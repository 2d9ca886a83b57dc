"""XDesktopEnv: one task on a real X desktop, driven through pyautogui and seen through mss.

Each episode (``reset``) stops the previous episode's apps, makes a fresh work folder, runs the
task's ``config`` steps (launching apps and waiting until their windows are mapped) and returns
the screenshot. ``step`` performs one :class:`~pixelrl.envs.gui_action.Action` through the env's actuator
process (pyautogui, fail-safe on, a time limit per action), lets the screen settle, and runs the
task's evaluator: success ends the episode with reward 1; ``done`` ends it with 1 or 0 (OSWorld's
rule), ``fail`` with 0, and the step limit truncates it.

The env starts a private Xvfb of ``screen_size`` (default 1280x800) and depth. To drive an
existing display instead pass ``display=":0", allow_existing_display=True``.

Processes: Xvfb, the apps and the actuator each run in their own process group and are killed on
``close``, when ``step``/``reset`` raise (a crash or Ctrl-C), and at interpreter exit.

Task files are untrusted: every step, app and getter command of a task runs in the episode's
sandbox (:mod:`pixelrl.envs.x11.sandbox`: bubblewrap, no network, read-only system, private home
and /tmp, only this env's display, never as root, within :class:`SandboxLimits`). Only the env's
own code runs outside it, and none of it interprets what the task's display or files hold: Xvfb
(as ``nobody`` when we are root), the actuator (pyautogui, mss, xdotool), the window reader
(python-xlib, a bounded walk) and the metrics (size-bounded, time-limited). The clipboard
is read inside the sandbox.

An app of the task can stop the X server answering anyone else (``XGrabServer``) or flood it, so
every request the env makes on the display runs in a helper process (the actuator, the window
reader) with a deadline: an action within ``action_timeout_s`` (past it the episode is
truncated), everything else within ``display_timeout_s``, past which the step or reset raises
:class:`~pixelrl.envs.x11.helper.DisplayTimeout` (a :class:`TaskError`) and the env's processes
are stopped. A held server thus ends a step within ``action_timeout_s + display_timeout_s``
(plus settling) and a window wait within ``window_timeout_s``.

Tasks in OSWorld's schema run their steps, ``postconfig`` and metrics as
:mod:`pixelrl.envs.x11.osworld` describes; they are evaluated when the agent says ``done`` or at
the step limit (like OSWorld), not after every step, and an ``infeasible`` task is solved by
``fail``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from typing import Any

import numpy as np

from pixelrl.envs.gui import a11y_element
from pixelrl.envs.gui_action import POINTER_KINDS, Action
from pixelrl.envs.processes import ChildProcess
from pixelrl.envs.real_gui import Outcome, RealGuiEnv
from pixelrl.envs.x11 import osworld
from pixelrl.envs.x11.actuator import Actuator
from pixelrl.envs.x11.display import XDisplay
from pixelrl.envs.x11.helper import ActionTimeout, DisplayTimeout
from pixelrl.envs.x11.sandbox import Sandbox, SandboxLimits
from pixelrl.envs.x11.tasks import (
    APPS_DIR,
    TaskError,
    X11Task,
    check,
    check_task_limits,
    get_result,
    resolve_task,
    sleep_seconds,
    substitute,
)
from pixelrl.envs.x11.windows import Windows, WindowTimeout

# Actions the actuator performs; wait/done/fail happen here.
INPUT_KINDS = POINTER_KINDS | {"type", "key", "hotkey", "key_down", "key_up"}


def _time_limit(name: str, value: Any) -> float:
    """``value`` as seconds: a finite number > 0, else a ValueError naming ``name``."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


class XDesktopEnv(RealGuiEnv):
    """A task (file, id or :class:`X11Task`) on a private Xvfb or an allowed existing display.

    Args:
        task: a shipped task id (``"XcalcMultiply"``), a path to a task JSON, or an X11Task.
        screen_size: (W, H) of the private Xvfb.  depth: its colour depth.
        display / allow_existing_display: attach to an existing display (both needed).
        xvfb_path: the Xvfb binary (default ``$PIXELRL_XVFB`` or ``Xvfb`` on PATH).
        max_steps: step limit (default: the task's ``max_steps``).
        action_timeout_s: time limit of one action; past it the actuator is killed and the
            episode truncated with ``info["error"]``.
        settle_s: wait after an action before looking; then the env looks until two
            screenshots agree (at most ``settle_max_s``), so slow redraws are not half-seen.
        check_every_step: run the evaluator after every step (ends the episode on success);
            False evaluates only on ``done`` or at the step limit, like OSWorld. Default: True
            for pixelrl's own tasks, False for OSWorld's (their postconfig must run once).
        window_timeout_s: how long a launched app may take to map its window.
        display_timeout_s: the deadline of every other request on the display (a screenshot
            beyond its settling, the window list, parking the pointer, starting a helper); past
            it the step or reset raises :class:`~pixelrl.envs.x11.helper.DisplayTimeout`.
        limits: the sandbox's :class:`~pixelrl.envs.x11.sandbox.SandboxLimits`, or a dict of
            some of its fields (``{"step_s": 10}``): time of each step, getter and metric,
            of the whole set-up and of each evaluation, bytes and files the getters read,
            output kept, size of home and /tmp, the sandbox's processes and memory.
    """

    def __init__(
        self,
        task: str | os.PathLike | X11Task,
        screen_size: tuple[int, int] = (1280, 800),
        depth: int = 24,
        display: str | None = None,
        allow_existing_display: bool = False,
        xvfb_path: str | None = None,
        max_steps: int | None = None,
        action_timeout_s: float = 10.0,
        settle_s: float = 0.05,
        settle_max_s: float = 1.0,
        check_every_step: bool | None = None,
        window_timeout_s: float = 15.0,
        display_timeout_s: float = 10.0,
        a11y_text: bool = False,
        render_mode: str | None = None,
        limits: SandboxLimits | dict | None = None,
    ) -> None:
        self.task = resolve_task(task)
        self.limits = SandboxLimits.parse(limits)
        check_task_limits(self.task, self.limits)
        self._display_args = dict(
            size=tuple(screen_size),
            depth=depth,
            display=display,
            allow_existing_display=allow_existing_display,
            xvfb_path=xvfb_path,
        )
        self.display: XDisplay | None = None
        self._windows: Windows | None = None
        self._actuator: Actuator | None = None
        self._held: list[str] = []  # keys held by key_down, released before the next episode
        self._apps: list[ChildProcess] = []
        self._sandbox: Sandbox | None = None
        self.setup_errors: list[str] = []
        self._last_failed = False
        self.action_timeout_s = _time_limit("action_timeout_s", action_timeout_s)
        self.window_timeout_s = _time_limit("window_timeout_s", window_timeout_s)
        self.display_timeout_s = _time_limit("display_timeout_s", display_timeout_s)
        self._start_display()  # fail early (no Xvfb, refused display) and learn the screen size
        super().__init__(
            self.display.size,
            max_steps if max_steps is not None else self.task.max_steps,
            a11y_text=a11y_text,
            render_mode=render_mode,
        )
        self.settle_s = float(settle_s)
        self.settle_max_s = float(settle_max_s)
        if check_every_step is None:
            check_every_step = self.task.schema != "osworld"
        self.check_every_step = bool(check_every_step)

    # -- processes ----------------------------------------------------------------------------
    def _start_display(self) -> None:
        self.display = XDisplay(**self._display_args)
        try:
            self._windows = Windows(self.display.name, timeout_s=self.display_timeout_s)
        except BaseException:
            self._shutdown()
            raise

    def _ensure_running(self) -> None:
        if self.display is None or not self.display.alive():
            self._shutdown()
            self._start_display()
        if self._actuator is None or not self._actuator.alive():
            self._actuator = self._start_actuator()

    def _start_actuator(self) -> Actuator:
        return Actuator(self.display.name, self.display.size, self.display_timeout_s)

    def _stop_apps(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()  # every app and command of the task lives in it
            self._sandbox = None
        for app in reversed(self._apps):
            app.kill(grace_s=1.0)
        self._apps = []

    def _shutdown(self) -> None:
        self._stop_apps()
        if self._actuator is not None:
            self._actuator.close()
            self._actuator = None
        if self._windows is not None:
            self._windows.close()
            self._windows = None
        if self.display is not None:
            self.display.close()
            self.display = None

    @property
    def workdir(self) -> str | None:
        """This episode's work folder (``{workdir}`` in the task file): the sandbox's home,
        ``/home/user``, a tmpfs that only the sandbox sees (read it with :meth:`read_file`)."""
        return self._sandbox.home if self._sandbox is not None else None

    def read_file(self, path: str) -> bytes | None:
        """A file as the task's sandbox sees it now (``{workdir}/x`` or an absolute path), or
        None where there is no regular file."""
        if self._sandbox is None:
            return None
        return self._sandbox.read(substitute(path, self._variables()))

    @property
    def sandbox(self) -> Sandbox | None:
        """This episode's sandbox (where the task's commands run)."""
        return self._sandbox

    @property
    def processes(self) -> list[ChildProcess]:
        """Every live process this env started (Xvfb, actuator, apps) — for tests and tools."""
        procs = [p for p in self._apps if p.alive()]
        if self._actuator is not None and self._actuator.alive():
            procs.append(self._actuator.process)
        if self.display is not None and self.display.server is not None:
            procs.append(self.display.server)
        return procs

    # -- episode ------------------------------------------------------------------------------
    def _variables(self) -> dict[str, str]:
        return {
            "workdir": self.workdir or "",
            "apps": str(APPS_DIR),
            "python": sys.executable,
            "display": self.display.name,
        }

    def _begin(self, seed: int | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._stop_apps()
        self._ensure_running()
        self._sandbox = Sandbox(self.display.name, self.limits)
        self._apps = [self._sandbox.process]
        self._last_failed = False
        self.setup_errors = []
        # Park the pointer off the apps (next to, not in, a fail-safe corner): hover highlights
        # would otherwise make the first screenshot depend on where the last episode ended.
        width, height = self.display.size
        self._actuator.perform(
            {"kind": "move", "x": width - 2, "y": height - 2}, self.display_timeout_s
        )
        while self._held:  # a key the last episode left held would change this one's input
            self._actuator.perform(
                {"kind": "key_up", "keys": [self._held.pop()]}, self.display_timeout_s
            )
        with self._sandbox.phase("set-up"):  # one time budget for all of it (limits.setup_s)
            self._set_up()
        self._settle()
        info = {"task": self.task.id, "display": self.display.name}
        if self.setup_errors:
            info["setup_errors"] = list(self.setup_errors)
        return self.task.instruction, info

    def _set_up(self) -> None:
        """Run the task's set-up steps in its sandbox."""
        if self.task.schema == "osworld":
            osworld.seed_home(self._sandbox)
            for i, step in enumerate(substitute(self.task.config, self._variables())):
                error = osworld.run_step(
                    step, self._sandbox, self._windows, self.window_timeout_s, where=f"config[{i}]"
                )
                if error:  # OSWorld logs a failed step and goes on; so do we, in info
                    self.setup_errors.append(error)
            return
        variables = self._variables()
        for i, step in enumerate(self.task.config):
            step = substitute(step, variables)
            kind = step["type"]
            where = f"{self.task.path}: config[{i}]"
            if kind == "write_file":
                self._sandbox.write(step["path"], step.get("content", "").encode("utf-8"))
            elif kind == "sleep":
                self._sandbox.wait(sleep_seconds(step, where, self.limits.step_s), where)
            elif kind == "command":
                rc, _, err = self._sandbox.run(step["command"])
                if rc is None and err.startswith("timed out"):
                    raise TaskError(f"{where}: command {step['command']} {err}")
                if rc != 0:
                    raise RuntimeError(
                        f"{where}: command {step['command']} failed ({rc}): {err[-500:]}"
                    )
            elif kind == "launch":
                try:
                    self._sandbox.launch(step["command"])
                except FileNotFoundError:
                    raise RuntimeError(
                        f"{where}: cannot launch {step['command'][0]!r}: not installed "
                        "(see scripts/install_system_deps.sh)"
                    ) from None
                if step.get("window"):
                    try:
                        timeout_s = self._sandbox.time_left(self.window_timeout_s, where)
                        self._windows.wait_for(step["window"], timeout_s=timeout_s)
                    except WindowTimeout as e:
                        spent = self._sandbox.budget_error(where)  # the set-up's time is up
                        raise (spent or TaskError(f"{where}: {e}")) from None
                    except DisplayTimeout as e:
                        raise DisplayTimeout(f"{where}: {e}") from None

    def _act(self, action: Action) -> Outcome:
        info: dict[str, Any] = {}
        if action.kind in INPUT_KINDS:
            try:
                reply = self._actuator.perform(dataclasses.asdict(action), self.action_timeout_s)
            except ActionTimeout as e:
                # The stuck actuator was killed; a fresh one takes the last look. The app may be
                # mid-way through the action, so the episode ends here (truncated).
                self._actuator = self._start_actuator()
                return Outcome(truncated=True, info={"error": str(e)})
            if reply["ok"] and action.kind == "key_down" and action.keys[0] not in self._held:
                self._held.append(action.keys[0])
            elif reply["ok"] and action.kind == "key_up" and action.keys[0] in self._held:
                self._held.remove(action.keys[0])
            if not reply["ok"]:
                info["error"] = f"{reply['type']}: {reply['error']}"
                if reply["type"] == "FailSafeException":
                    # The pointer sat in a screen corner: pyautogui's emergency stop.
                    return Outcome(truncated=True, info=info)
            self._settle()  # look (and evaluate) only once the app has drawn the effect
        elif action.kind == "wait":
            time.sleep(max(self.settle_s, 0.5))
        last_step = self._steps >= self.max_steps
        if action.kind == "fail":
            if self.task.schema == "osworld":  # an infeasible task is solved by saying so
                self._last_failed = True
                reward = self.score()
                return Outcome(reward=reward, terminated=True, success=reward >= 1.0, info=info)
            return Outcome(terminated=True, info=info)
        if action.kind == "done" or self.check_every_step or last_step:
            reward = self.score()
            success = reward >= 1.0
            terminated = success or action.kind == "done"
            return Outcome(reward=reward, terminated=terminated, success=success, info=info)
        return Outcome(info=info)

    def score(self) -> float:
        """The task's score on the desktop as it is now: 0 or 1 for pixelrl's tasks; OSWorld's
        metric (some, like fuzzy_match, lie between) after running its ``postconfig``."""
        if self.task.schema != "osworld":
            return float(self.evaluate())
        ev = substitute(self.task.evaluator, self._variables())
        with self._sandbox.phase("evaluation"):  # one budget (limits.evaluation_s, read_*)
            for i, step in enumerate(ev["postconfig"]):
                error = osworld.run_step(
                    step, self._sandbox, self._windows, self.window_timeout_s, f"postconfig[{i}]"
                )
                if error:
                    self.setup_errors.append(f"postconfig: {error}")
            return osworld.score(
                ev,
                self._sandbox,
                last_action_failed=self._last_failed,
                timeout_s=self.limits.step_s,
            )

    def evaluate(self) -> bool:
        """Run the task's evaluator (getter + checker) on the desktop as it is now."""
        if self.task.schema == "osworld":
            return self.score() >= 1.0
        ev = substitute(self.task.evaluator, self._variables())
        with self._sandbox.phase("evaluation"):
            result = get_result(ev["result"], self._windows, self._sandbox)
        return check(ev["func"], result, ev["expected"], ev)

    # -- looking ------------------------------------------------------------------------------
    def _settle(self) -> None:
        """Wait until the screen stops changing; keep that screenshot for the observation."""
        self._settled = self._actuator.screenshot(
            self.settle_s, self.settle_max_s, self.display_timeout_s
        )

    def _screenshot(self) -> np.ndarray:
        """The settled screen (the actuator grabs with mss; see its module doc)."""
        shot, self._settled = getattr(self, "_settled", None), None
        if shot is None:
            shot = self._actuator.screenshot(
                self.settle_s, self.settle_max_s, self.display_timeout_s
            )
        return shot

    def screenshot(self) -> np.ndarray:
        """The screen now, without settling, H×W×3 uint8 (what ``bench/`` times)."""
        return self._actuator.screenshot(0.0, 0.0, self.display_timeout_s)

    def _a11y(self) -> list[dict[str, Any]]:
        # X apps here expose no accessibility tree; the windows are what we can name reliably.
        return [
            a11y_element(f"window-{w.id}", "window", w.title, w.bbox) for w in self._windows.list()
        ]
