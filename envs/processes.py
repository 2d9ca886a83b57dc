"""Child processes that cannot outlive their env (X11: Xvfb, apps, actuator; web: chromedriver).

Every program the X11 env starts (Xvfb, the task's apps, the actuator) and the chromedriver of
the MiniWoB++ env run in a new session, so a process group id is the program's pid and killing
the group also kills what *it* started (Chrome under chromedriver, a helper an app forks).
Three nets catch a forgotten process:

- :meth:`ChildProcess.kill` from the env's ``close`` (and from ``step``/``reset`` on a crash);
- a :func:`weakref.finalize` per process, which also runs at interpreter exit (after a
  ``KeyboardInterrupt`` too), because ``finalize`` registers itself with :mod:`atexit`;
- ``PR_SET_PDEATHSIG`` on Linux: the kernel sends SIGTERM to the child when its parent dies,
  even on ``SIGKILL`` of the Python process, where no Python code runs.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Mapping, Sequence

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except OSError:
            pass


def own_group_popen_kwargs() -> dict:
    """``subprocess.Popen`` keyword arguments for a child in its own group that dies with us."""
    return {"start_new_session": True, "preexec_fn": _die_with_parent}


def kill_group(pid: int, grace_s: float = 2.0) -> None:
    """SIGTERM the process group ``pid``, then SIGKILL what is left after ``grace_s``."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        # Reap our direct child so its group can empty (a zombie still counts as a member).
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.02)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is in the process group ``pgid`` (Linux /proc)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def wait_groups_gone(pgids: list[int], timeout_s: float = 5.0) -> list[int]:
    """Wait until no process is left in ``pgids``; the groups still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [g for g in pgids if group_alive(g)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


class ChildProcess:
    """A program in its own process group, killed with its group on :meth:`kill` or at exit."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
        pass_fds: Sequence[int] = (),
        name: str | None = None,
    ) -> None:
        self.name = name or os.path.basename(argv[0])
        self.argv = list(argv)
        self.popen = subprocess.Popen(
            self.argv,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=tuple(pass_fds),
            **own_group_popen_kwargs(),
        )
        self.pid = self.popen.pid
        self._finalizer = weakref.finalize(self, kill_group, self.pid)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, grace_s: float = 2.0) -> None:
        """Stop the whole process group (idempotent) and reap the direct child."""
        if self._finalizer.detach() is not None:
            kill_group(self.pid, grace_s)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        try:
            self.popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def __repr__(self) -> str:
        return f"ChildProcess({self.name!r}, pid={self.pid}, alive={self.alive()})"


# The reaper: a tiny process that waits for its stdin to close (our exit, however it happens,
# closes the pipe) and then kills a process group we could not give PR_SET_PDEATHSIG to as a
# whole (chromedriver's: Chrome is started by chromedriver, not by us).
_REAPER = """
import os, signal, sys, time
pgid = int(sys.argv[1])
sys.stdin.buffer.read()
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        break
    time.sleep(1.0)
"""


class GroupReaper:
    """Kills the process group ``pgid`` when this process ends, even by SIGKILL; :meth:`release`
    (after the group was stopped the normal way) lets the reaper exit without killing."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(pgid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def release(self) -> None:
        """Close the pipe: the reaper kills the (by now empty) group and exits; reap it."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
