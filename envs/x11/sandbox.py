"""The sandbox every task command runs in: bubblewrap around the env's own Xvfb and apps.

Task files are untrusted input, and OSWorld's assume a throwaway VM (``sudo apt-get install``,
``mkdir /home/...``). So no step, launch or getter command of a task runs on the host: each
episode starts one :class:`Sandbox`, a ``bwrap`` (Debian's ``bubblewrap``) holding a small
command server (:data:`_SERVER`, our code, like OSWorld's in-VM server) that runs the task's
commands and apps, all in the same namespaces for the episode:

- the whole system read-only (``--ro-bind / /``); ``/root``, ``/home``, ``/run``, ``/var/tmp``
  and every top-level folder that is not the system's (checkouts, other projects, ``/opt``,
  mounts: :func:`hidden_roots`) hidden under empty tmpfs (no host secrets, no host sockets such
  as D-Bus), what this interpreter and pixelrl need shown again read-only; a private home
  (``/home/user``, ``{workdir}`` in task files) and a private ``/tmp``, each a size-capped tmpfs
  that lives in the sandbox's mount namespace only: nothing of an episode is ever on the host's
  disk, so nothing is left behind however the env ends (a killed parent included);
- no network (``--unshare-net``: no TCP, no abstract sockets, so no other X display either),
  its own pid, IPC and UTS namespaces; the only X socket inside is this env's display;
- never as root: run as root (as here), bwrap sets up the mounts and the command server drops
  to ``nobody`` (uid/gid 65534, no capabilities, ``no_new_privs``) before anything of the task
  runs; run as a user, bwrap uses a user namespace and everything runs as that user;
- one budget for the whole sandbox (:class:`SandboxLimits`): its memory (memfd, tmpfs and
  shared memory included) and its processes are a cgroup's of its own
  (:mod:`pixelrl.envs.x11.cgroup`). Where no cgroup can be made, the sandbox says so
  (:attr:`Sandbox.budget`) and runs as a uid of its own (root) so that its process limit is its
  own, with ``memfd_create`` and System V shared memory refused; memory is then bounded per
  process and per tmpfs only;
- a time budget for a task's set-up and one for its evaluation, and bytes and files its getters
  may read in total (:meth:`Sandbox.phase`): past one, a :class:`~pixelrl.envs.x11.tasks.TaskError`;
- a seccomp filter (:mod:`pixelrl.envs.x11.seccomp`): no new user namespaces, no ptrace, no
  io_uring, no kernel keyrings; and the command server is not dumpable, so the task's processes
  (its uid) cannot attach to it or take its pipes to the host;
- bwrap reads its options from a pipe (``--args``), so ``/proc/1/cmdline`` inside shows no host
  path, and ``mountinfo`` shows none either (the private folders are tmpfs, not host binds).

Killing the sandbox (``close``) kills every process of the episode: they live in its pid
namespace, which ends with it. Every answer of the command server is read with a size bound and
a time limit and checked field by field (:func:`parse_reply`); a server that dies or answers
anything malformed is a :class:`SandboxError`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import math
import os
import random
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from pixelrl.envs.processes import ChildProcess
from pixelrl.envs.x11.cgroup import Cgroup, CgroupUnavailable, open_cgroup
from pixelrl.envs.x11.tasks import TaskError

log = logging.getLogger(__name__)

BWRAP_INSTALL_HINT = (
    "install bubblewrap: `apt-get install bubblewrap` on Debian/Ubuntu "
    "(or run scripts/install_system_deps.sh)"
)
HOME = "/home/user"  # OSWorld's VM user's home, where task files point
NOBODY = 65534
OWN_UIDS = (1 << 20, 1 << 30)  # a root sandbox without a cgroup runs as a free uid from here
SANDBOX_PROCESSES = 3  # bwrap, its pid namespace's init, the command server
HIDDEN = ("/root", "/home", "/run", "/var/tmp")  # emptied inside (tmpfs)
# The system's top-level folders; every other one (checkouts, other projects, mounts, /opt, /srv)
# is emptied inside too, and a top-level file reads as empty: none of it is the task's to read.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/var", "/sys")
SYSTEM += ("/dev", "/proc", "/tmp", "/nix", "/gnu", "/snap")  # NixOS', Guix's, snaps' software
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MiB = 1 << 20


@dataclass(frozen=True)
class SandboxLimits:
    """What one episode's sandbox may use. Past a limit a command fails (a time-out, a full
    disk, a refused fork or allocation, a killed process) or the task stops with a
    :class:`~pixelrl.envs.x11.tasks.TaskError`, never the host.

    Attributes (defaults in brackets):
        step_s: wall-clock seconds of every set-up step, getter command and metric [30].
        setup_s: wall-clock seconds of a task's whole set-up: its steps, sleeps and waits for
            windows together [120].
        evaluation_s: wall-clock seconds of one evaluation: OSWorld's postconfig, every getter
            and every metric together [120].
        output_bytes: what is kept of a command's stdout and of its stderr, and of a file read
            [1 MiB].
        read_bytes / read_files: what the getters of one evaluation may read in total [16 MiB,
            100 files]; a task whose getters name more files is refused at load.
        home_bytes / tmp_bytes: size of the private home, and of /tmp and of /dev/shm each
            (tmpfs, i.e. memory, counted in ``memory_bytes``) [256 MiB each].
        processes: processes and threads of the whole sandbox, beyond its own three [256].
        memory_bytes: memory of the whole sandbox (every process, memfd, tmpfs and shared
            memory page together; a cgroup's), and the address space of each process [4 GiB].
    """

    step_s: float = 30.0
    setup_s: float = 120.0
    evaluation_s: float = 120.0
    output_bytes: int = 1 * MiB
    read_bytes: int = 16 * MiB
    read_files: int = 100
    home_bytes: int = 256 * MiB
    tmp_bytes: int = 256 * MiB
    processes: int = 256
    memory_bytes: int = 4096 * MiB

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                raise SandboxError(
                    f"sandbox limit {f.name} must be a finite number > 0, got {value!r}"
                )
            if f.type == "int" and value != int(value):
                raise SandboxError(f"sandbox limit {f.name} must be a whole number, got {value!r}")
        tmpfs = self.home_bytes + 2 * self.tmp_bytes  # home, /tmp, /dev/shm
        if tmpfs >= self.memory_bytes:
            raise SandboxError(
                f"sandbox limits: home_bytes + 2 x tmp_bytes (home, /tmp, /dev/shm: {tmpfs}) "
                f"must be below memory_bytes ({self.memory_bytes}): they are its memory"
            )

    @classmethod
    def parse(cls, value: SandboxLimits | dict[str, Any] | None) -> SandboxLimits:
        """Limits from an instance, a dict of some fields (the rest default) or None."""
        if value is None:
            return cls()
        if isinstance(value, SandboxLimits):
            return value
        if not isinstance(value, dict):
            raise SandboxError(f"sandbox limits must be a dict of fields, got {value!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise SandboxError(f"unknown sandbox limit(s) {unknown}; known: {known}")
        return cls(**value)


# The command server inside the sandbox: one JSON request a line on stdin, one reply a line on
# stdout. It runs the task's commands (never evaluates anything itself). Its first argument is
# the limits (JSON), which it sets on itself so that every process of the task inherits them.
# It runs as the task's uid, so it makes itself not dumpable first: then no process of the task
# may ptrace it, read its memory or take its pipes to the host (pidfd_getfd), and its /proc
# files belong to root; a program it starts is dumpable again from its exec on.
_SERVER = r"""
import base64, ctypes, json, os, resource, selectors, shlex, signal, stat, subprocess, sys, time
PR_SET_DUMPABLE = 4
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
    sys.exit("cannot make the command server undumpable")
out = os.fdopen(os.dup(1), "w"); devnull = os.open(os.devnull, os.O_RDWR); os.dup2(devnull, 1)
home = os.environ["HOME"]
limits = json.loads(sys.argv[1])
rlimits = [("RLIMIT_AS", limits["memory_bytes"]), ("RLIMIT_CORE", 0)]
if limits["nproc"] is not None:  # without a cgroup: the uid's processes, machine-wide
    rlimits.append(("RLIMIT_NPROC", limits["nproc"]))
for name, value in rlimits:
    resource.setrlimit(getattr(resource, name), (value, value))
CAP = limits["output_bytes"]
def argv(req):
    cmd, shell = req["command"], bool(req.get("shell", False))
    if isinstance(cmd, list) and shell:
        cmd = " ".join(shlex.quote(c) for c in cmd)
    elif isinstance(cmd, str) and not shell:
        cmd = shlex.split(cmd)
    return cmd, shell
def collect(p, data, timeout):
    # stdout and stderr, CAP bytes of each kept (the rest read and dropped), within timeout
    kept = {p.stdout.fileno(): bytearray(), p.stderr.fileno(): bytearray()}
    dropped = 0
    sel = selectors.DefaultSelector()
    for fd in kept:
        sel.register(fd, selectors.EVENT_READ)
    fin = p.stdin.fileno(); os.set_blocking(fin, False)
    if data:
        sel.register(fin, selectors.EVENT_WRITE)
    else:
        p.stdin.close()
    deadline = time.monotonic() + timeout
    while sel.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            return None, dropped
        for key, _ in sel.select(left):
            fd = key.fd
            if fd == fin:
                try:
                    data = data[os.write(fin, data[:65536]):]
                except BrokenPipeError:
                    data = b""
                if not data:
                    sel.unregister(fin); p.stdin.close()
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(fd)
                continue
            room = CAP - len(kept[fd])
            kept[fd] += chunk[:max(room, 0)]
            dropped += max(len(chunk) - max(room, 0), 0)
    try:
        p.wait(max(deadline - time.monotonic(), 0.001))
    except subprocess.TimeoutExpired:
        return None, dropped
    return (bytes(kept[p.stdout.fileno()]), bytes(kept[p.stderr.fileno()])), dropped
def first_to_go(pid):
    # past the sandbox's memory budget the kernel kills a process of it: the task's, not this
    # one. Its /proc files are writable from its exec on (dumpable), i.e. once Popen returns.
    try:
        with open(f"/proc/{pid}/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass  # it has ended already
def handle(req):
    op = req["op"]
    if op == "run":
        cmd, shell = argv(req)
        p = subprocess.Popen(cmd, shell=shell, cwd=home, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        first_to_go(p.pid)
        got, dropped = collect(p, base64.b64decode(req.get("input", "")), req["timeout"])
        if got is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
            return {"ok": False, "error": f"timed out after {req['timeout']} s"}
        so, se = got
        return {"ok": True, "rc": p.returncode, "stdout": base64.b64encode(so).decode(),
                "stderr": base64.b64encode(se).decode(), "dropped": dropped}
    if op == "launch":
        cmd, shell = argv(req)
        p = subprocess.Popen(cmd, shell=shell, cwd=home, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        first_to_go(p.pid)
        return {"ok": True, "pid": p.pid}
    if op == "read":
        # never block on a FIFO or a device: open without waiting, read regular files only
        fd = os.open(req["path"], os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {"ok": False, "error": "not a regular file"}
            data = bytearray()
            while len(data) < req["limit"]:
                chunk = os.read(fd, min(req["limit"] - len(data), 1 << 20))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        return {"ok": True, "data": base64.b64encode(bytes(data)).decode()}
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
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    out.write(json.dumps(reply) + "\n"); out.flush()
"""


class SandboxError(RuntimeError):
    """The sandbox cannot be started (bwrap missing or refused), stopped answering, or was
    asked for something outside its limits."""


def find_bwrap() -> str:
    found = shutil.which(os.environ.get("PIXELRL_BWRAP", "bwrap"))
    if found is None:
        raise SandboxError(
            f"bwrap not found: task commands run only in a sandbox; {BWRAP_INSTALL_HINT}"
        )
    return found


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def hidden_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(folders, files) of the host that show empty inside: :data:`HIDDEN`, and every top-level
    folder and file of ``/`` that is not the system's (:data:`SYSTEM`)."""
    folders, files = list(HIDDEN), []
    for name in sorted(os.listdir("/")):
        path = "/" + name
        if path in SYSTEM or path in HIDDEN or os.path.islink(path):
            continue
        if os.path.isdir(path):
            folders.append(path)
        elif os.path.isfile(path):
            files.append(path)
    return tuple(folders), tuple(files)


def bwrap_argv(
    display: str,
    limits: SandboxLimits | None = None,
    exposed: list[str] | None = None,
    root: bool | None = None,
) -> list[str]:
    """The bwrap options (without the program) of a sandbox on ``display``: private home and
    /tmp of the sizes in ``limits``, and the folders ``exposed`` shown read-only.

    ``exposed``: host folders hidden (:func:`hidden_roots`) that must show inside, read-only (this
    interpreter, when it lives under /root). The command that follows is the caller's."""
    limits = limits or SandboxLimits()
    root = os.geteuid() == 0 if root is None else root
    number = display.split(":")[-1].split(".")[0]
    socket = f"/tmp/.X11-unix/X{number}"
    argv = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    argv += ["--unshare-cgroup-try"] + ([] if root else ["--unshare-user"])
    argv += ["--die-with-parent", "--new-session", "--hostname", "pixelrl-sandbox"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/dev/shm"]
    hidden, hidden_files = hidden_roots()
    for folder in hidden:
        if os.path.isdir(folder):
            argv += ["--tmpfs", folder]
    for file in hidden_files:
        argv += ["--ro-bind", "/dev/null", file]
    argv += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    argv += ["--dir", "/tmp/.X11-unix"]
    if os.path.exists(socket):
        argv += ["--ro-bind", socket, socket]
    made: set[str] = set()

    def parents(path: str) -> list[str]:
        out: list[str] = []
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p not in made and _under(p, hidden + ("/tmp",)) and p not in hidden + ("/tmp",):
                made.add(p)
                out += ["--perms", "0755", "--dir", p]
        return out

    # 0777: as root the tmpfs belongs to root, and the task runs as nobody
    argv += parents(HOME) + ["--perms", "0777", "--size", str(limits.home_bytes), "--tmpfs", HOME]
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
    return argv


def drop_root_argv(uid: int = NOBODY) -> list[str]:
    """``setpriv`` to ``uid`` (and that gid; ``nobody`` by default) with no capabilities and
    ``no_new_privs`` (the command follows).

    A change of uid clears the parent-death signal (see :mod:`pixelrl.envs.processes`), so
    setpriv sets it again after the change."""
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    argv = [setpriv, "--reuid", str(uid), "--regid", str(uid), "--clear-groups"]
    argv += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--pdeathsig", "TERM"]
    return argv + ["--"]


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
    roots = hidden_roots()[0] + ("/tmp",)
    paths = sorted(p for p in wanted if _under(p, roots) and p not in roots and os.path.isdir(p))
    return [p for p in paths if not any(p != q and _under(p, (q,)) for q in paths)]


def _processes_of(uid: int) -> int:
    """How many processes of ``uid`` run on this machine now (RLIMIT_NPROC counts them all)."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += 1
        except OSError:
            pass
    return count


def _free_uid() -> int:
    """A uid from :data:`OWN_UIDS` that no process has now: the process limit of a sandbox
    without a cgroup is then its own (RLIMIT_NPROC counts a uid's processes machine-wide)."""
    while True:
        uid = random.randrange(*OWN_UIDS)
        if _processes_of(uid) == 0:
            return uid


# What each reply of the command server holds besides "ok" (and "error" when not ok), by op.
_REPLY_FIELDS: dict[str, dict[str, type]] = {
    "run": {"rc": int, "stdout": str, "stderr": str, "dropped": int},
    "launch": {"pid": int},
    "read": {"data": str},
    "write": {},
}
_BASE64_FIELDS = ("stdout", "stderr", "data")


def parse_reply(op: str, line: bytes) -> dict[str, Any]:
    """The command server's reply to ``op``, checked field by field, base64 fields decoded to
    bytes; :class:`SandboxError` for anything else (not JSON, nested too deep, a missing field
    or one of the wrong type). The host trusts nothing of a reply it has not checked here."""

    def bad(why: str) -> SandboxError:
        return SandboxError(f"the sandbox answered {op!r} with a malformed reply: {why}")

    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        raise bad("not JSON") from None
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise bad("not an object with a boolean 'ok'")
    if not reply["ok"]:
        if not isinstance(reply.get("error"), str):
            raise bad("a failure without an 'error' text")
        return {"ok": False, "error": reply["error"]}
    checked: dict[str, Any] = {"ok": True}
    for name, kind in _REPLY_FIELDS[op].items():
        value = reply.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise bad(f"{name!r} is not {kind.__name__}: {str(value)[:80]!r}")
        if name in _BASE64_FIELDS:
            try:
                value = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise bad(f"{name!r} is not base64") from None
        checked[name] = value
    return checked


_WARNED: set[str] = set()


def _say_budget(budget: str, weaker: bool) -> None:
    """Log how the sandbox's budget holds; a weaker one than a cgroup's is a warning, once."""
    if weaker and budget.split(":")[0] not in _WARNED:
        _WARNED.add(budget.split(":")[0])
        log.warning("task sandbox: %s", budget)
    else:
        log.info("task sandbox: %s", budget)


def _pipe_with(data: bytes) -> int:
    """The read end of a pipe that holds ``data`` and then ends (for bwrap's fd options)."""
    read_fd, write_fd = os.pipe()
    try:
        if len(data) > 65536:  # a pipe holds 64 KiB without a reader
            raise SandboxError("sandbox options too long")
        os.write(write_fd, data)
    finally:
        os.close(write_fd)
    return read_fd


@dataclass
class _Phase:
    """A stretch of a task with a time budget of its own, and what its getters may still read."""

    name: str  # "set-up" or "evaluation"
    field: str  # the SandboxLimits field of its time budget
    budget_s: float
    deadline: float
    bytes_left: int
    files_left: int

    def spent(self, what: str) -> TaskError:
        return TaskError(
            f"the task's {self.name} ran past its budget of {self.budget_s:g} s "
            f"(limits.{self.field}) at {what}"
        )


_PHASES = {"set-up": "setup_s", "evaluation": "evaluation_s"}


class Sandbox:
    """One episode's sandbox: a private home (``/home/user``) and /tmp on ``display``.

    :meth:`run` runs a command to completion, :meth:`launch` starts an app, :meth:`read` and
    :meth:`write` move file contents in and out, all inside; :meth:`close` ends it all.
    Within :meth:`phase`, every call shares that phase's budgets.

    ``budget`` says how the memory and process limits hold (a cgroup, or per process only)."""

    home = HOME

    def __init__(self, display: str, limits: SandboxLimits | dict | None = None) -> None:
        from pixelrl.envs.x11.seccomp import sandbox_filter

        self.display = display
        self.limits = SandboxLimits.parse(limits)
        self.root = os.geteuid() == 0
        self._dead: str | None = None
        self._pending = b""
        self._phase: _Phase | None = None
        self.cgroup: Cgroup | None = None
        try:
            self.cgroup = open_cgroup(
                self.limits.memory_bytes, self.limits.processes + SANDBOX_PROCESSES
            )
        except CgroupUnavailable as e:
            why = str(e)
        if self.cgroup is not None:
            self.uid = NOBODY if self.root else os.getuid()
            nproc = None  # the cgroup counts the sandbox's processes, whatever their uid
            self.budget = (
                f"{self.cgroup.mode}: {self.limits.memory_bytes // MiB} MiB of memory and "
                f"{self.limits.processes} processes for the whole sandbox"
            )
        else:
            self.uid = _free_uid() if self.root else os.getuid()
            nproc = _processes_of(self.uid) + self.limits.processes
            self.budget = (
                f"no cgroup ({why}): {self.limits.processes} processes of uid {self.uid}, "
                f"{self.limits.memory_bytes // MiB} MiB of memory a process, memfd and System V "
                "shared memory refused"
            )
        _say_budget(self.budget, weaker=self.cgroup is None)
        server_limits = dict(asdict(self.limits), nproc=nproc)
        options = bwrap_argv(display, self.limits, _exposed_paths(), self.root)
        command = drop_root_argv(self.uid) if self.root else []
        command += [sys.executable, "-I", "-c", _SERVER, json.dumps(server_limits)]
        args_fd = _pipe_with(b"".join(a.encode() + b"\0" for a in options))
        seccomp_fd = _pipe_with(sandbox_filter(shared_memory=self.cgroup is not None))
        argv = [find_bwrap(), "--args", str(args_fd), "--seccomp", str(seccomp_fd), "--"]
        if self.cgroup is not None:
            argv = self.cgroup.enter_argv() + argv
        try:
            self.process = ChildProcess(
                argv + command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(args_fd, seccomp_fd),
                name="sandbox",
            )
        except BaseException:
            self._remove_cgroup()
            raise
        finally:
            os.close(args_fd)
            os.close(seccomp_fd)
        try:
            reply = self._request({"op": "run", "command": ["true"], "timeout": 10}, 30.0)
        except SandboxError as e:
            self.close()
            raise SandboxError(f"the task sandbox did not start: {e}") from None
        if not reply["ok"]:
            self.close()
            raise SandboxError(f"the task sandbox did not start: {reply['error']}")

    def alive(self) -> bool:
        return self._dead is None and self.process.alive()

    # -- budgets of a task ------------------------------------------------------------------
    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Run a task's ``"set-up"`` or ``"evaluation"`` within its time budget
        (``limits.setup_s`` / ``limits.evaluation_s``) and, for the getters, ``read_bytes`` and
        ``read_files`` in total: past one, :meth:`run`, :meth:`read`, :meth:`wait` and
        :meth:`time_left` raise :class:`~pixelrl.envs.x11.tasks.TaskError`. A phase inside a
        phase is part of the outer one."""
        if self._phase is not None:
            yield
            return
        field = _PHASES[name]
        budget_s = getattr(self.limits, field)
        self._phase = _Phase(
            name,
            field,
            budget_s,
            time.monotonic() + budget_s,
            self.limits.read_bytes,
            self.limits.read_files,
        )
        try:
            yield
        finally:
            self._phase = None

    def time_left(self, seconds: float, what: str = "a step") -> float:
        """``seconds``, or less where the phase's budget ends sooner; a
        :class:`~pixelrl.envs.x11.tasks.TaskError` naming ``what`` once it has ended."""
        if self._phase is None:
            return seconds
        left = self._phase.deadline - time.monotonic()
        if left <= 0:
            raise self._phase.spent(what)
        return min(seconds, left)

    def budget_error(self, what: str) -> TaskError | None:
        """The phase's error when its budget has ended now (a step cut short by it), else None."""
        if self._phase is not None and time.monotonic() >= self._phase.deadline:
            return self._phase.spent(what)
        return None

    def wait(self, seconds: float, what: str = "a sleep") -> None:
        """Sleep ``seconds`` (a task's sleep step), within the phase's budget."""
        time.sleep(self.time_left(seconds, what))
        error = self.budget_error(what)
        if error is not None and seconds > 0:
            raise error

    # -- the command server -------------------------------------------------------------------
    def _fail(self, why: str) -> SandboxError:
        """Kill the sandbox (its state is unknown now) and the error that says why."""
        if self._dead is None:
            self._dead = why
            self.process.kill(grace_s=0.5)
            self._remove_cgroup()
        return SandboxError(why)

    def _request(self, req: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self._dead is not None:
            raise SandboxError(f"the sandbox is gone: {self._dead}")
        if not self.process.alive():
            raise self._fail(f"the sandbox exited: {self._stderr()}")
        try:
            self.process.popen.stdin.write((json.dumps(req) + "\n").encode())
            self.process.popen.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._fail(f"the sandbox exited: {self._stderr()}") from None
        # One line, read with a size bound: base64 of two capped streams and a little framing.
        bound = 3 * self.limits.output_bytes + (1 << 16)
        fd = self.process.popen.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                raise self._fail(
                    f"the sandbox did not answer within {timeout_s:.0f} s (request {req['op']!r})"
                )
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise self._fail(f"the sandbox exited: {self._stderr()}{self._oom_note()}")
            self._pending += chunk
            if len(self._pending) > bound:
                raise self._fail(f"the sandbox answered more than {bound} bytes")
        line, self._pending = self._pending.split(b"\n", 1)
        try:
            return parse_reply(req["op"], line)
        except SandboxError as e:
            raise self._fail(str(e)) from None

    def _oom_note(self) -> str:
        if self.cgroup is not None and self.cgroup.oom_kills() > 0:
            return f" after it ran out of memory ({self.budget})"
        return ""

    def _stderr(self) -> str:
        """The end of the sandbox's own stderr once it has exited (bwrap's or the server's)."""
        stream = self.process.popen.stderr
        if stream is None or stream.closed or self.process.alive():
            return "(no message)"
        fd = stream.fileno()
        if not select.select([fd], [], [], 0.5)[0]:
            return "(no message)"
        text = os.read(fd, 1 << 16).decode(errors="replace").strip()
        return text[-500:] or "(no message)"

    def run(
        self,
        command: list[str] | str,
        shell: bool = False,
        timeout_s: float | None = None,
        stdin: bytes = b"",
    ) -> tuple[int | None, str, str]:
        """(exit status or None on a time-out or a missing program, stdout, stderr); each stream
        keeps its first ``limits.output_bytes``. ``timeout_s`` defaults to ``limits.step_s``;
        within a :meth:`phase`, a command cut short by the phase's budget is a TaskError."""
        timeout_s = self.limits.step_s if timeout_s is None else timeout_s
        what = f"command {command!r}"
        allowed_s = self.time_left(timeout_s, what)
        reply = self._request(
            {
                "op": "run",
                "command": command,
                "shell": shell,
                "timeout": allowed_s,
                "input": base64.b64encode(stdin).decode(),
            },
            allowed_s + 10.0,
        )
        if not reply["ok"]:
            error = self.budget_error(what) if allowed_s < timeout_s else None
            if error is not None and reply["error"].startswith("timed out"):
                raise error
            return None, "", reply["error"]
        text = lambda b: b.decode("utf-8", errors="replace")  # noqa: E731
        return reply["rc"], text(reply["stdout"]), text(reply["stderr"])

    def launch(self, command: list[str] | str, shell: bool = False) -> None:
        """Start an app inside (it runs until the sandbox closes); FileNotFoundError if missing."""
        self.time_left(0.0, f"launch {command!r}")
        reply = self._request({"op": "launch", "command": command, "shell": shell}, 30.0)
        if not reply["ok"]:
            raise FileNotFoundError(reply["error"])

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """The regular file at ``path`` as the sandbox sees it (its first ``limit`` bytes, by
        default ``limits.output_bytes``), or None (missing, unreadable, a folder, a FIFO).
        Within a :meth:`phase`, reads share ``limits.read_bytes`` and ``read_files``."""
        limit = self.limits.output_bytes if limit is None else limit
        phase = self._phase
        if phase is not None:
            self.time_left(0.0, f"reading {path!r}")
            phase.files_left -= 1
            if phase.files_left < 0:
                raise TaskError(
                    f"the task's getters read more than {self.limits.read_files} files "
                    f"(limits.read_files) at {path!r}"
                )
            # one byte more than the budget holds tells a file that reaches past it
            limit = min(limit, phase.bytes_left + 1)
        reply = self._request({"op": "read", "path": path, "limit": limit}, 30.0)
        if not reply["ok"]:
            return None
        data = reply["data"][:limit]
        if phase is not None:
            phase.bytes_left -= len(data)
            if phase.bytes_left < 0:
                raise TaskError(
                    f"the task's getters read more than {self.limits.read_bytes} bytes "
                    f"(limits.read_bytes) at {path!r}"
                )
        return data

    def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` (absolute, or relative to the home) as the sandbox user."""
        reply = self._request(
            {"op": "write", "path": path, "data": base64.b64encode(data).decode()}, 30.0
        )
        if not reply["ok"]:
            raise OSError(reply["error"])

    def _remove_cgroup(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()

    def close(self) -> None:
        """Kill every process of the sandbox (its pid namespace ends with it) and remove its
        cgroup."""
        if self._dead is None:
            self._dead = "closed"
        self.process.kill(grace_s=1.0)
        self._remove_cgroup()
