"""A helper process on a task's display: one JSON request a line, each answered by a deadline.

Every X request the host makes on a task's display runs in such a process (the actuator, the
window reader), never in the env's own: an app of the task can stop the X server answering
anyone else (``XGrabServer``) or make it slow to answer (a flood of windows), and a client
blocked in an X library waits without a time limit (python-xlib waits in ``select`` with none)
and cannot be interrupted, only killed. Past its deadline the helper's process group is killed and
the caller gets :class:`DisplayTimeout`; the next request starts a fresh helper.

Protocol: the helper writes one JSON object a line on stdout, first ``{"ready": true, ...}``
once it is connected, then one answer a request (a JSON line on stdin); its side of it is
:mod:`pixelrl.envs.x11.helper_loop`.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence

from pixelrl.envs.processes import ChildProcess
from pixelrl.envs.x11.tasks import TaskError

MAX_LINE_BYTES = 8 << 20  # an answer longer than this is a broken helper, not a big answer


class HelperError(RuntimeError):
    """The helper process died, could not start, or answered something that is not a reply."""


class DisplayTimeout(TaskError):
    """The task's display did not answer a host request in time (the helper was killed): an app
    of the task holds the X server (a grab) or keeps it too busy to answer."""


class ActionTimeout(DisplayTimeout):
    """An action did not finish within its time limit (the actuator was killed): the display
    held, or an action that takes long (typing a long text)."""


class Helper:
    """One helper process (``script`` run with ``args`` and ``DISPLAY=display_name``).

    ``name`` says what it is in errors ("actuator"); ``start_timeout_s`` bounds the wait for its
    ready line, which :attr:`hello` keeps.
    """

    def __init__(
        self,
        script: str,
        args: Sequence[str],
        display_name: str,
        start_timeout_s: float,
        name: str,
    ) -> None:
        self.name = name
        self.display_name = display_name
        self._buffer = bytearray()  # what was read of the next line(s)
        env = dict(os.environ, DISPLAY=display_name, PYTHONUNBUFFERED="1")
        self.process = ChildProcess(
            [sys.executable, script, *args],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            name=name,
        )
        self.hello = self._read(start_timeout_s, "start")
        if not self.hello.get("ready"):
            self.close()
            raise HelperError(f"the {name} did not start: {self.hello}")

    def _read(self, timeout_s: float, what: str) -> dict:
        """The next line as JSON, read by ``timeout_s`` or never (the helper is then killed)."""
        deadline = time.monotonic() + timeout_s
        fd = self.process.popen.stdout.fileno()
        end = self._buffer.find(b"\n")
        while end < 0:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], left)[0] if left > 0 else []
            if not ready:
                self.close()
                raise DisplayTimeout(
                    f"the {self.name} did not {what} within {timeout_s:.1f} s on the display "
                    f"{self.display_name} and was stopped (an app of the task may hold the X "
                    "server or flood it)"
                )
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = self.process.popen.poll()
                self.close()
                raise HelperError(f"the {self.name} exited (code {code}) during {what}")
            end = chunk.find(b"\n")
            if end >= 0:
                end += len(self._buffer)
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE_BYTES:
                self.close()
                raise HelperError(f"the {self.name} answered more than {MAX_LINE_BYTES} bytes")
        line, self._buffer = bytes(self._buffer[:end]), self._buffer[end + 1 :]
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            self.close()
            raise HelperError(f"the {self.name} answered {line[:200]!r}, not a JSON object")
        return reply

    def request(self, message: dict, timeout_s: float, what: str) -> dict:
        """Send ``message``; its answer within ``timeout_s``, else :class:`DisplayTimeout`."""
        if not self.alive():
            raise HelperError(f"the {self.name} is not running")
        try:
            self.process.popen.stdin.write((json.dumps(message) + "\n").encode())
            self.process.popen.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise HelperError(f"the {self.name} is gone: {e}") from None
        return self._read(timeout_s, what)

    def alive(self) -> bool:
        return self.process.alive() and not self.process.popen.stdout.closed

    def close(self) -> None:
        self.process.kill(grace_s=1.0)
