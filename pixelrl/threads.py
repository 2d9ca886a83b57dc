"""One thread policy for every command and recipe: how many threads torch and the screen reader's
ONNX Runtime sessions use.

Why: torch's default takes every core for itself, and on a machine that runs anything else its
threads fight (issue 57, on 2 cores): the tiny VLM's batch-1 evaluation of 200 episodes took
892 s with torch's default threads against 58 s with one (15x); beside two CPU-bound processes a
navigation agent's batch-8 evaluation took 10.7 s against 4.9 s with one thread; the MiniWoB++
recipe's behaviour cloning ran 0.43 steps/s against 2.2-3.5 under two other jobs. Our models
are small and their batches too: a thread waiting for a busy core costs more than it gives.

The rule (:func:`choose`), for ``--threads`` left out (or ``auto``) and ``torch_threads: 0``:

1. ``OMP_NUM_THREADS``, when the user set it, is their word: that many (at most the cores).
2. Otherwise start from the cores this process may run on (``os.sched_getaffinity``), shared
   by the ranks of this job on this machine (torchrun's ``LOCAL_WORLD_SIZE``) and less the env
   worker processes the job starts beside them (an async collector, local Ray env actors).
3. Take no more than the cores the rest of the machine leaves idle: the cores less the
   1-minute load average (``os.getloadavg``: processes running or waiting), rounded, per rank.
4. At least 1.

On an idle 2-core machine that is 2; with one other busy process or more, 1. An explicit count
(``--threads N``, ``torch_threads: N``) is used as given, at most the cores. The choice and its
reason make one line for a command's or run's header (``threads: 1 (auto: 2 cores, load
2.3)``) and a run folder's ``config.yaml`` keeps the count, so a rerun uses the same.

A phase in which the job's env workers wait (a recipe's warm start: the GUI recipes clone the
oracle before the first rollout) may take their cores back: :func:`while_workers_wait` applies
the rule again without the workers, the busy cores measured over half a second of
``/proc/stat`` (:func:`idle_cores_now`) rather than by the 1-minute load average, which still
counts the warm start's own recording processes that have just ended. A behaviour-cloning step
of the pointer policy takes 142 ms on two threads against 247 ms on one
(``bench/pointer_bc_step.py``, docs/results/desktop_ppo.md).

The vision and env packages do not import the spine: the screen reader takes its count as an
argument (``ScreenReader(threads=...)``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Threads:
    """A thread count and why it was chosen (``"auto: 2 cores, load 2.3"``)."""

    count: int
    why: str
    workers: int = 0  # env worker processes the rule left cores to (only when it chose)

    def __str__(self) -> str:
        return f"{self.count} ({self.why})"


_applied: Threads | None = None  # the process's choice (torch's threads are process-wide)
_interop_set = False


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask, else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _env_count(name: str) -> int | None:
    """A positive integer environment variable, else None (unset or not a count)."""
    text = os.environ.get(name, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def is_auto(requested: int | str | None) -> bool:
    """Whether ``requested`` asks for the policy: None, 0 or ``"auto"``."""
    return requested is None or requested == 0 or requested == "auto"


def auto_count(cores: int, load: float, ranks: int = 1, workers: int = 0) -> int:
    """The rule of the module doc: the cores a rank may have (``cores`` shared by ``ranks``,
    less ``workers`` env worker processes), no more than the idle ones (``cores - load``,
    rounded, per rank), at least 1."""
    share = cores // max(1, ranks) - max(0, workers)
    idle = round(max(0.0, cores - load) / max(1, ranks))
    return max(1, min(share, idle))


def choose(requested: int | str | None = None, workers: int = 0) -> Threads:
    """The thread count for ``requested`` (a count, or None / 0 / ``"auto"`` for the rule of the
    module doc), with ``workers`` env worker processes of this job beside this one."""
    cores = usable_cores()
    if not is_auto(requested):
        count = int(requested)
        if count > cores:
            return Threads(cores, f"asked {count}, at most the {cores} cores of this process")
        return Threads(count, "set")
    omp = _env_count("OMP_NUM_THREADS")
    if omp is not None:
        return Threads(min(omp, cores), f"OMP_NUM_THREADS={omp}")
    ranks = _env_count("LOCAL_WORLD_SIZE") or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    why = f"auto: {cores} cores, load {load:.1f}"
    if ranks > 1:
        why += f", {ranks} ranks"
    if workers:
        why += f", {workers} env workers"
    return Threads(auto_count(cores, load, ranks, workers), why, workers)


def idle_cores_now(seconds: float = 0.5) -> float | None:
    """The machine's idle cores over the next ``seconds``, from ``/proc/stat`` (Linux); None
    where it cannot be read. Unlike the load average it forgets a process the moment it ends."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]  # user .. steal
        return ticks[3] + ticks[4], sum(ticks)  # idle + iowait, all

    try:
        idle0, total0 = sample()
        time.sleep(seconds)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return (os.cpu_count() or 1) * (idle1 - idle0) / (total1 - total0)


@contextmanager
def while_workers_wait(requested: int | str | None = None) -> Iterator[Threads | None]:
    """The learner's threads for a phase in which this job's env workers wait (module doc),
    the earlier choice back after; yields the count in use. ``requested`` (a count) is used as
    given; by default (None / 0 / ``"auto"``) the rule runs again without the workers, at the
    machine's load of now. A set count, ``OMP_NUM_THREADS``, or a choice that left no cores to
    workers (or none applied yet) then stays as it is."""
    before = _applied
    if not is_auto(requested):
        use(choose(requested))
        try:
            yield _applied
        finally:
            if before is not None:
                use(before)
        return
    if before is None or not before.workers:
        yield before
        return
    cores = usable_cores()
    ranks = _env_count("LOCAL_WORLD_SIZE") or 1
    idle = idle_cores_now()
    if idle is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        why = f"auto: {cores} cores, load {load:.1f}"
    else:
        load = max(0.0, cores - idle)
        why = f"auto: {cores} cores, {min(idle, cores):.1f} idle now"
    why += f", {before.workers} env workers waiting"
    during = Threads(auto_count(cores, load, ranks, 0), why)
    use(during)
    try:
        yield during
    finally:
        use(before)


def use(threads: Threads, import_torch: bool = True) -> Threads:
    """Set torch's intra-op threads to ``threads.count`` (and its inter-op threads, which torch
    takes only once and before any parallel work: later calls leave them), remember the choice
    for :func:`applied`, and return it. With ``import_torch=False`` a process that has not
    loaded torch (``pixelrl serve``) does not load it now: ``OMP_NUM_THREADS`` tells a torch
    loaded later, unless the user set it."""
    import sys

    global _applied, _interop_set
    _applied = threads
    if not import_torch and "torch" not in sys.modules:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads.count))
        return threads
    import torch

    torch.set_num_threads(threads.count)
    if not _interop_set:
        try:
            torch.set_num_interop_threads(threads.count)
        except RuntimeError:  # parallel work already ran, or they were set: torch keeps them
            pass
        _interop_set = True
    return threads


def applied() -> Threads | None:
    """The choice :func:`use` last applied in this process, or None."""
    return _applied


def check_config_threads(value: object, key: str = "torch_threads") -> None:
    """``ValueError`` (one line) unless ``value`` is a thread count >= 0 (0: the policy)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return
    raise ValueError(
        f"{key} must be a thread count >= 1, or 0 for the thread policy (pixelrl.threads), "
        f"got {value!r}"
    )
