"""Issue 51: the task sandbox's budgets are whole, and its command server cannot be impersonated.

Real Xvfb, real bubblewrap, real cgroups where the machine has them (as root here: cgroup v1);
each test looks only at the sandboxes, processes and cgroups it started. Each attack gave, on the
code before issue 51, the result its test's comment names.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import time

import pytest

from pixelrl.envs.gui_action import Action
from pixelrl.envs.x11.display import XDisplay
from pixelrl.envs.x11.env import XDesktopEnv
from pixelrl.envs.x11.osworld import survey
from pixelrl.envs.x11.sandbox import MiB, Sandbox, SandboxError, SandboxLimits
from pixelrl.envs.x11.tasks import TaskError, parse_task

MISSING = [p for p in ("Xvfb", "bwrap") if shutil.which(p) is None]
needs_x11 = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {MISSING}: run scripts/install_system_deps.sh"
)
PIXELRL = [sys.executable, "-m", "pixelrl"]


@pytest.fixture
def display():
    d = XDisplay(size=(320, 240))
    yield d
    d.close()


def osworld(config: list, evaluator: dict) -> dict:
    return {"id": "hostile", "snapshot": "os", "instruction": "x", "source": "test",
            "config": config, "evaluator": evaluator}  # fmt: skip


def execute(command: str) -> dict:
    return {"type": "execute", "parameters": {"command": command, "shell": True}}


# -- memory: one budget for the whole sandbox ---------------------------------------------------
MEMFD = """
import os, sys, time
fd = os.memfd_create("x")
for i in range(int(sys.argv[1])):
    os.write(fd, b"a" * (16 << 20))
    print(16, flush=True)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@needs_x11
def test_memfd_and_shared_memory_stay_within_the_sandboxs_memory(display):
    # Before: memfd_create + write took 1 GiB of the host's memory under memory_bytes = 256 MiB
    # (RLIMIT_AS counts mapped pages only), and 4 processes x 96 MiB all held theirs.
    limits = SandboxLimits(memory_bytes=256 * MiB, home_bytes=32 * MiB, tmp_bytes=32 * MiB)
    box = Sandbox(display.name, limits)
    try:
        rc, out, err = box.run([sys.executable, "-c", MEMFD, "64", "0"])
        written = sum(int(n) for n in out.split() if n.isdigit()) * MiB
        assert rc != 0 and written < limits.memory_bytes, (rc, written, err[-300:], box.budget)
        # four processes of 96 MiB each (each well within RLIMIT_AS): not all of them hold
        four = f"for i in 1 2 3 4; do python3 -c '{MEMFD}' 6 3 & done; wait"
        rc, out, err = box.run(four, shell=True)
        assert 0 < out.count("held") < 4, (out.count("held"), box.budget)
        # /dev/shm is a tmpfs of tmp_bytes, part of the same memory
        rc, _, err = box.run("head -c 1000000000 /dev/zero > /dev/shm/x", shell=True)
        assert rc != 0 and "No space left" in err, err
        if box.cgroup is not None:  # what the host was charged, at most
            assert box.cgroup.peak_memory_bytes() <= limits.memory_bytes
        assert box.run(["true"])[0] == 0  # the sandbox itself lives on
    finally:
        box.close()


def test_tmpfs_sizes_must_fit_in_the_memory_budget():
    with pytest.raises(SandboxError, match=r"home_bytes \+ 2 x tmp_bytes .* below memory_bytes"):
        SandboxLimits(memory_bytes=256 * MiB)


# -- processes: one budget per sandbox, not per uid ---------------------------------------------
@needs_x11
def test_a_fork_bomb_in_one_sandbox_leaves_another_its_processes(display):
    # Before: both ran as nobody under one RLIMIT_NPROC count; the bomb in `a` made `b`'s forks
    # fail ("Resource temporarily unavailable").
    limits = SandboxLimits(processes=40, home_bytes=8 * MiB, tmp_bytes=8 * MiB)
    b = Sandbox(display.name, limits)
    a = Sandbox(display.name, limits)
    try:
        a.run("for i in $(seq 200); do (sleep 4321 >/dev/null 2>&1 &) 2>/dev/null; done",
              shell=True)  # fmt: skip
        rc, out, err = b.run(
            "for i in $(seq 20); do sleep 0.2 & done; wait; echo forked", shell=True
        )
        assert rc == 0 and out == "forked\n", (err[-300:], b.budget)
    finally:
        a.close()
        b.close()


@needs_x11
@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="a uid of its own needs root")
def test_without_a_cgroup_the_sandbox_says_so_and_still_keeps_its_budgets(display, monkeypatch):
    # A machine without cgroup delegation: the sandbox runs as a uid of its own (its own
    # process count) and refuses memfd and System V shared memory, whose pages nothing counts.
    import pixelrl.envs.x11.sandbox as sandbox

    def no_cgroup(*args, **kwargs):
        raise sandbox.CgroupUnavailable("no delegation (test)")

    monkeypatch.setattr(sandbox, "open_cgroup", no_cgroup)
    limits = SandboxLimits(processes=40, home_bytes=8 * MiB, tmp_bytes=8 * MiB)
    b = Sandbox(display.name, limits)
    a = Sandbox(display.name, limits)
    try:
        assert a.cgroup is None and "no cgroup (no delegation (test))" in a.budget
        assert a.uid != b.uid and 0 not in (a.uid, b.uid)
        rc, out, err = a.run([sys.executable, "-c", MEMFD, "64", "0"])
        assert rc != 0 and "Function not implemented" in err and out == "", err
        shm = "import ctypes; print(ctypes.CDLL(None, use_errno=True).shmget(0, 1 << 20, 0o1600))"
        assert a.run(["python3", "-c", shm])[1] == "-1\n"
        a.run("for i in $(seq 200); do (sleep 4321 >/dev/null 2>&1 &) 2>/dev/null; done",
              shell=True)  # fmt: skip
        rc, out, err = b.run(
            "for i in $(seq 20); do sleep 0.2 & done; wait; echo forked", shell=True
        )
        assert rc == 0 and out == "forked\n", err[-300:]
    finally:
        a.close()
        b.close()


# -- the command server -------------------------------------------------------------------------
MALFORMED = {
    "run": [b"", b"not json", b"[]", b"null", b'"ok"', b"[" * 100000 + b"]" * 100000,
            b'{"ok": "yes"}', b'{"ok": true}', b'{"ok": false}', b'{"ok": false, "error": 1}',
            b'{"ok": true, "rc": "0", "stdout": "", "stderr": "", "dropped": 0}',
            b'{"ok": true, "rc": true, "stdout": "", "stderr": "", "dropped": 0}',
            b'{"ok": true, "rc": 0, "stdout": "%%%", "stderr": "", "dropped": 0}',
            b'{"ok": true, "rc": 0, "stdout": [], "stderr": "", "dropped": 0}',
            b'{"ok": true, "rc": 0, "stdout": "", "stderr": ""}'],
    "read": [b'{"ok": true}', b'{"ok": true, "data": 5}', b'{"ok": true, "data": "a"}'],
    "launch": [b'{"ok": true, "pid": "1"}', b'{"ok": true}'],
}  # fmt: skip


def test_every_malformed_reply_is_a_sandbox_error():
    # Before: json.loads and reply["rc"] on the host: RecursionError, KeyError: 'rc', TypeError.
    from pixelrl.envs.x11.sandbox import parse_reply

    for op, lines in MALFORMED.items():
        for line in lines:
            with pytest.raises(SandboxError, match=f"answered {op!r} with a malformed reply"):
                parse_reply(op, line)
    good = parse_reply(
        "run", b'{"ok": true, "rc": 0, "stdout": "YQ==", "stderr": "", "dropped": 0}'
    )
    assert good == {"ok": True, "rc": 0, "stdout": b"a", "stderr": b"", "dropped": 0}


# Inside the sandbox, as the task: find the command server and try every way to its host pipe
# (ptrace, pidfd_getfd, its /proc fd links); whatever works writes a forged reply there.
IMPERSONATE = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def argv(pid):
    return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
# the server runs python with its code; bwrap's own command line holds that code too
server = next(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
              and b"bwrap" not in argv(p)[0] and b"selectors" in b" ".join(argv(p)))
FORGED = b'{"ok": true}\n'
if libc.ptrace(16, server, 0, 0) == 0:  # PTRACE_ATTACH: it stops; let it go on at once
    os.waitpid(server, 0x40000000)  # __WALL
    libc.ptrace(17, server, 0, 0)  # PTRACE_DETACH
    print("ptrace ok")
else:
    print("ptrace", errno.errorcode[ctypes.get_errno()])
pidfd = os.pidfd_open(server)
for fd in range(3, 8):
    got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
    if got >= 0:
        try:
            os.write(got, FORGED)
            print("stole", fd)
        except OSError:
            pass
    else:
        print("pidfd_getfd", errno.errorcode[ctypes.get_errno()])
    try:
        with open(f"/proc/{server}/fd/{fd}", "wb", buffering=0) as f:
            f.write(FORGED)
            print("opened", fd)
    except OSError as e:
        print("open", errno.errorcode[e.errno])
"""


@needs_x11
def test_a_task_cannot_take_over_the_command_servers_pipes(display):
    # Before: the task wrote {"ok": true} into the server's pipe to the host, which raised
    # KeyError: 'rc' there (and any well-formed reply it liked would have been believed).
    box = Sandbox(display.name)
    try:
        rc, out, err = box.run([sys.executable, "-c", IMPERSONATE])
        assert rc == 0, err[-500:]
        assert "stole" not in out and "opened" not in out, out
        assert "ptrace EPERM" in out and "pidfd_getfd EPERM" in out and "open EACCES" in out, out
        assert box.run(["echo", "still ours"])[:2] == (0, "still ours\n")
    finally:
        box.close()


KERNEL_SURFACE = r"""
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
calls = {"io_uring_setup": (425, 8, params), "keyctl": (250, 0, -3, 1),
         "add_key": (248, b"user", b"pixelrl", b"x", 1, -2)}
for name, (nr, *args) in calls.items():
    rc = libc.syscall(nr, *args)
    print(name, rc if rc >= 0 else errno.errorcode[ctypes.get_errno()])
"""


@needs_x11
@pytest.mark.skipif(__import__("platform").machine() != "x86_64", reason="x86_64 numbers")
def test_io_uring_and_kernel_keyrings_are_refused(display):
    # Before: io_uring_setup gave a ring (fd 3), keyctl the session keyring, add_key a key.
    box = Sandbox(display.name)
    try:
        rc, out, err = box.run([sys.executable, "-c", KERNEL_SURFACE])
    finally:
        box.close()
    assert rc == 0, err
    assert out.split("\n")[:3] == ["io_uring_setup ENOSYS", "keyctl EPERM", "add_key EPERM"], out


# -- time: one budget for a task's set-up, one for its evaluation --------------------------------
def sleeps_task(steps: int, seconds: float) -> dict:
    return {"id": "Sleepy", "instruction": "x",
            "config": [{"type": "sleep", "seconds": seconds}] * steps,
            "evaluator": {"result": {"type": "command", "command": ["true"]}, "func": "contains",
                          "expected": ""}}  # fmt: skip


def many_metrics(n: int, command: str) -> dict:
    getter = {"type": "vm_command_line", "command": command, "shell": True}
    rule = {"type": "rule", "rules": {"expected": "a\n"}}
    return osworld([], {"func": ["exact_match"] * n, "result": [getter] * n,
                        "expected": [rule] * n})  # fmt: skip


def multi_file(paths: int, gives: int, path: str = "/etc/hostname") -> dict:
    return osworld([], {"func": "exact_match", "expected": {"type": "rule", "rules": {"expected": ""}},
                        "result": {"type": "vm_file", "multi": True, "path": [path] * paths,
                                   "gives": list(range(gives))}})  # fmt: skip


def test_tasks_check_refuses_tasks_over_the_budgets(tmp_path):
    # Before: all four "runs" (250 h of sleeps, 6,000 x a 29 s command, 1,500 reads of a file,
    # a 95,000-path list).
    cases = {
        "sleeps.json": (sleeps_task(30000, 30), "sleeps add up to 900000 s, past the set-up "
                        "budget of 120 s (limits.setup_s)"),
        "metrics.json": (many_metrics(6000, "sleep 29; echo a"), "has 6000 metrics"),
        "multi.json": (multi_file(1500, 1500), "read 1500 files, past the budget of 100"),
        "paths.json": (multi_file(95000, 1, "/a"), "read 95000 files"),
        "fine.json": (sleeps_task(3, 30), None),
    }  # fmt: skip
    for name, (data, _) in cases.items():
        (tmp_path / name).write_text(json.dumps(data))
    run = subprocess.run([*PIXELRL, "tasks", "check", str(tmp_path)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    for name, (_, why) in cases.items():
        if why is None:
            assert f"runs     {name}" in run.stdout, run.stdout
        else:
            line = next(li for li in run.stdout.splitlines() if name in li)
            assert line.startswith("refused") and why in line, line
    assert "over budget" in run.stdout
    verdicts = {v.path.rsplit("/", 1)[-1]: v for v in survey(tmp_path)}
    assert [r.reason for r in verdicts["multi.json"].refusals] == ["over budget"]


@needs_x11
def test_a_set_up_past_its_budget_stops_there_with_a_task_error():
    # Before: the five 1 s commands ran to their end (no whole-set-up budget existed).
    config = [{"type": "command", "command": ["sleep", "1"]}] * 5
    data = {"id": "SlowSetUp", "instruction": "x", "config": config,
            "evaluator": {"result": {"type": "command", "command": ["true"]}, "func": "contains",
                          "expected": ""}}  # fmt: skip
    env = XDesktopEnv(parse_task(data), screen_size=(320, 240), limits={"setup_s": 2.5})
    try:
        start = time.monotonic()
        with pytest.raises(
            TaskError, match=r"set-up ran past its budget of 2.5 s \(limits.setup_s"
        ):
            env.reset(seed=0)
        assert time.monotonic() - start < 6
    finally:
        env.close()


@needs_x11
def test_an_evaluation_past_its_budget_stops_there_with_a_task_error():
    # Before: 20 metrics x a 1 s command took 20 s, all within their step time each.
    data = many_metrics(20, "sleep 1; echo a")
    with XDesktopEnv(parse_task(data), screen_size=(320, 240), limits={"evaluation_s": 2.5}) as env:
        env.reset(seed=0)
        start = time.monotonic()
        with pytest.raises(TaskError, match=r"evaluation ran past its budget of 2.5 s"):
            env.step(Action.done())
        assert time.monotonic() - start < 6


@needs_x11
def test_getters_read_within_one_budget_of_bytes():
    # Before: 50 reads of a 1 MiB file all went to the host (50 MiB; the 1,500: 1.56 GiB).
    make = execute("head -c 1048576 /dev/zero | tr '\\0' a > ~/big")
    ev = {"func": "exact_match", "expected": {"type": "rule", "rules": {"expected": ""}},
          "result": {"type": "vm_file", "multi": True, "path": ["/home/user/big"] * 50,
                     "gives": list(range(50))}}  # fmt: skip
    with XDesktopEnv(parse_task(osworld([make], ev)), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(TaskError, match=r"read more than 16777216 bytes \(limits.read_bytes\)"):
            env.step(Action.done())
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100, grown_mb
