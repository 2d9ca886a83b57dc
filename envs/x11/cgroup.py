"""A sandbox's memory and processes as one budget: a cgroup of its own.

``RLIMIT_AS`` bounds one process's address space, not the pages it never maps (a memfd's, a tmpfs
file's, System V shared memory's) nor the sum over processes; ``RLIMIT_NPROC`` counts a uid's
processes machine-wide, so two sandboxes of one uid share it. A cgroup counts every page its
processes are charged for (anonymous, page cache, shmem: memfd, tmpfs, /dev/shm) and every
process and thread, whatever its uid. :func:`open_cgroup` makes one per sandbox:

- cgroup v2 (``/sys/fs/cgroup/cgroup.controllers``): a child of this process's own cgroup, where
  that cgroup offers (or may be given) the ``memory`` and ``pids`` controllers: delegation;
- cgroup v1 (``/sys/fs/cgroup/memory`` and ``/sys/fs/cgroup/pids``): a child of this process's
  cgroup in each hierarchy;
- neither, or no right to write them (an unprivileged user without delegation): None, with the
  reason; the sandbox then makes do with per-process limits (see :mod:`pixelrl.envs.x11.sandbox`).

The sandbox's first process enters the cgroup before it starts bwrap (:meth:`Cgroup.enter_argv`),
so no process of the task is ever outside it. Past the memory budget the kernel refuses the page
or kills a process of the cgroup (never one of the host); past the process budget ``fork`` fails.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "pixelrl-sandbox"
_OURS = re.compile(rf"^{PREFIX}-(\d+)-[0-9a-f]+$")
# Enter every cgroup named before "--", then exec the rest: writing 0 moves the writer itself.
_ENTER = (
    'for f; do [ "$f" = -- ] && break; echo 0 > "$f" || exit 125; shift; done; shift; exec "$@"'
)


class CgroupUnavailable(RuntimeError):
    """No cgroup can be made here; the message says why."""


@dataclass
class Cgroup:
    """One sandbox's cgroup: ``dirs`` holds one folder per hierarchy (one in v2, memory's and
    pids' in v1); ``mode`` says which (``cgroup v2`` / ``cgroup v1``)."""

    mode: str
    memory_dir: Path
    pids_dir: Path

    @property
    def dirs(self) -> list[Path]:
        return list(dict.fromkeys([self.memory_dir, self.pids_dir]))

    def enter_argv(self) -> list[str]:
        """A prefix for a command line: the command runs inside this cgroup from its start."""
        procs = [str(d / "cgroup.procs") for d in self.dirs]
        return ["/bin/sh", "-c", _ENTER, "pixelrl-cgroup", *procs, "--"]

    def pids(self) -> set[int]:
        """The processes in the cgroup now."""
        found: set[int] = set()
        for d in self.dirs:
            try:
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return found

    def peak_memory_bytes(self) -> int:
        """The most memory the cgroup has been charged for at once."""
        name = "memory.peak" if self.mode == "cgroup v2" else "memory.max_usage_in_bytes"
        return int((self.memory_dir / name).read_text())

    def oom_kills(self) -> int:
        """How many processes the kernel killed for the cgroup's memory budget (0 if unknown)."""
        name = "memory.events" if self.mode == "cgroup v2" else "memory.oom_control"
        try:
            for line in (self.memory_dir / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self, timeout_s: float = 2.0) -> None:
        """Kill what is left in the cgroup and remove its folders (idempotent)."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.pids()
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for d in self.dirs:
                try:
                    d.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
            if not any(d.exists() for d in self.dirs) or time.monotonic() > deadline:
                return
            time.sleep(0.02)


def _own_paths() -> dict[str, str]:
    """This process's cgroup path in each hierarchy (``""`` for v2's unified one)."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            paths[controller] = path
    return paths


def _sweep(parent: Path) -> None:
    """Remove empty cgroups of sandboxes whose host process died without removing them."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _OURS.match(entry.name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            try:
                entry.rmdir()  # fails, harmlessly, while a process is still in it
            except OSError:
                pass


def _make(parent: Path, name: str) -> Path:
    _sweep(parent)
    child = parent / name
    child.mkdir()
    return child


def _v2(root: Path, own: str, name: str, memory_bytes: int, processes: int) -> Cgroup:
    parent = root / own.lstrip("/")
    offered = set((parent / "cgroup.subtree_control").read_text().split())
    if not {"memory", "pids"} <= offered:
        try:
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError as e:
            raise CgroupUnavailable(
                f"cgroup v2 without the memory and pids controllers for {parent} ({e.strerror})"
            ) from None
    child = _make(parent, name)
    group = Cgroup("cgroup v2", child, child)
    try:
        (child / "memory.max").write_text(str(memory_bytes))
        if (child / "memory.swap.max").exists():
            (child / "memory.swap.max").write_text("0")
        (child / "pids.max").write_text(str(processes))
    except OSError:
        group.remove()
        raise
    return group


def _v1(root: Path, own: dict[str, str], name: str, memory_bytes: int, processes: int) -> Cgroup:
    memory = _make(root / "memory" / own["memory"].lstrip("/"), name)
    try:
        pids = _make(root / "pids" / own["pids"].lstrip("/"), name)
    except OSError:
        memory.rmdir()
        raise
    group = Cgroup("cgroup v1", memory, pids)
    try:
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():  # memory and swap together
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (pids / "pids.max").write_text(str(processes))
    except OSError:
        group.remove()
        raise
    return group


def open_cgroup(memory_bytes: int, processes: int, root: Path = CGROUP_ROOT) -> Cgroup:
    """A new cgroup of at most ``memory_bytes`` (swap included) and ``processes`` processes and
    threads, or :class:`CgroupUnavailable` saying why there is none."""
    name = f"{PREFIX}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        own = _own_paths()
        if (root / "cgroup.controllers").exists():
            return _v2(root, own.get("", "/"), name, memory_bytes, processes)
        if (root / "memory" / "tasks").exists() and (root / "pids" / "tasks").exists():
            if "memory" not in own or "pids" not in own:
                raise CgroupUnavailable("cgroup v1 without a memory or pids hierarchy for us")
            return _v1(root, own, name, memory_bytes, processes)
    except OSError as e:
        raise CgroupUnavailable(f"cannot make a cgroup: {e.strerror or e}") from None
    raise CgroupUnavailable(f"no cgroup v2 or v1 memory and pids hierarchy under {root}")
