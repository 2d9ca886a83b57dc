"""The processes a test started, and only those: another sandbox may run beside the test (another
test run on the same machine), so no check looks at the whole machine.

A process is named by its pid and its start time (``/proc/PID/stat`` field 22), so a pid the
kernel hands to a new process later is never taken for one of ours."""

from __future__ import annotations

import os
import time

Proc = tuple[int, int]  # (pid, start time in clock ticks since boot)


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    return int(fields[1]), fields[0], int(fields[19])


def tree(pid: int) -> set[Proc]:
    """``pid`` and every process below it now (children's children included)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        got = _stat(int(entry))
        if got is not None:
            children.setdefault(got[0], []).append(int(entry))
            starts[int(entry)] = got[2]
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p in starts:
            found.add((p, starts[p]))
            todo += children.get(p, [])
    return found


def cmdline(proc: Proc) -> list[str]:
    try:
        with open(f"/proc/{proc[0]}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def running(procs: set[Proc]) -> set[Proc]:
    """Those of ``procs`` still running (the same process, not a zombie)."""
    alive = set()
    for pid, start in procs:
        got = _stat(pid)
        if got is not None and got[2] == start and got[1] != "Z":
            alive.add((pid, start))
    return alive


def wait_gone(procs: set[Proc], timeout_s: float = 10.0) -> set[Proc]:
    """Wait until none of ``procs`` runs; those still running after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while running(procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running(procs)


def sleepers(procs: set[Proc]) -> set[Proc]:
    """The ``sleep 4321`` processes (a test's marker) among ``procs``."""
    return {p for p in procs if cmdline(p)[:2] == ["sleep", "4321"]}
