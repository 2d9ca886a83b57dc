"""Hostile task files (issue 37): what a task does stays in its sandbox and within its limits.

Every attack here is a real task run on a real Xvfb in real bubblewrap: nothing is mocked. Each
test checks the attack's effect is absent on the host (no file, no process, no folder, no memory
growth) and that its failure is a clear error within the limit. Each looks only at processes it
started (:mod:`own_processes`): the suite holds with another sandbox running beside it
(:func:`test_the_checks_hold_beside_another_sandbox`; issue 51).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from own_processes import running, sleepers, tree, wait_gone

from pixelrl.envs.gui_action import Action
from pixelrl.envs.x11.env import XDesktopEnv
from pixelrl.envs.x11.osworld import survey
from pixelrl.envs.x11.sandbox import Sandbox, SandboxError, SandboxLimits
from pixelrl.envs.x11.tasks import TaskError, load_task, parse_task

MISSING = [p for p in ("Xvfb", "bwrap") if shutil.which(p) is None]
needs_x11 = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {MISSING}: run scripts/install_system_deps.sh"
)
PIXELRL = [sys.executable, "-m", "pixelrl"]

# The Tk `send` escape of issue 37: the task's app owns the clipboard and, asked for it, sends
# Tcl to every other Tk interpreter of the display (the clipboard reader). MARK is a host path.
TK_SEND = """import tkinter
r = tkinter.Tk(); r.title('evil')
def h(o, l):
    me = r.tk.call('tk', 'appname')
    for n in r.tk.splitlist(r.tk.call('winfo', 'interps')):
        if n != me: r.tk.call('send', '-async', n, 'exec sh -c {SCRIPT}')
    return 'x'
r.selection_handle(h, selection='CLIPBOARD'); r.selection_own(selection='CLIPBOARD'); r.mainloop()
"""


def tk_send_task(script: str, selection: str = "clipboard") -> dict:
    return {
        "id": "TkSendEscape",
        "instruction": "Copy the code to the clipboard.",
        "max_steps": 3,
        "config": [
            {
                "type": "launch",
                "window": "^evil$",
                "command": ["{python}", "-c", TK_SEND.replace("SCRIPT", script)],
            }
        ],
        "evaluator": {
            "result": {"type": "clipboard", "selection": selection},
            "func": "exact_match",
            "expected": "x",
        },
        "solution": ["WAIT"],
    }


@pytest.fixture
def host_dir(tmp_path):
    """A host folder anyone may write to: only the sandbox can keep a task out of it."""
    d = tmp_path / "host"
    d.mkdir()
    d.chmod(0o777)
    return d


def task(config: list, evaluator: dict | None = None, name: str = "Hostile") -> dict:
    return {
        "id": name,
        "instruction": "Nothing to do.",
        "config": config,
        "evaluator": evaluator
        or {"result": {"type": "command", "command": ["true"]}, "func": "contains", "expected": ""},
    }


# -- 1. code execution outside the sandbox ----------------------------------------------------
@needs_x11
@pytest.mark.parametrize("selection", ["clipboard", "primary"])
def test_tk_send_to_the_clipboard_reader_runs_nothing_on_the_host(host_dir, selection):
    mark = host_dir / "TK_PWNED"
    data = tk_send_task(f"{{id > {mark}; cat /etc/shadow >> {mark}}}", selection)
    data["config"][0]["command"][2] = data["config"][0]["command"][2].replace(
        "'CLIPBOARD'", f"'{selection.upper()}'"
    )
    with XDesktopEnv(parse_task(data), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        env.step(Action.wait())
        # The reader ran inside, as the task's user: the Tcl ran there, where the host is absent.
        assert env.read_file(str(mark)) is None
    assert not mark.exists()


@needs_x11
def test_tk_send_escape_through_record_and_tasks_check(tmp_path, host_dir):
    mark = host_dir / "TK_PWNED"
    folder = tmp_path / "tasks"
    folder.mkdir()
    path = folder / "tk_min.json"
    path.write_text(json.dumps(tk_send_task(f"{{id > {mark}}}")))
    check = subprocess.run(
        [*PIXELRL, "tasks", "check", str(folder)], capture_output=True, text=True
    )
    assert check.returncode == 0 and "runs     tk_min.json" in check.stdout
    kwargs = json.dumps({"task": str(path), "screen_size": [320, 240]})
    run = subprocess.run(
        [*PIXELRL, "record", "--env", "pixelrl/XDesktop-TkCopyCode-v0", "--env-kwargs", kwargs,
         "--agent", "expert", "--episodes", "1", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert not mark.exists()


@needs_x11
def test_the_sandbox_shows_no_host_paths_and_makes_no_user_namespaces():
    probe = [
        "cat /proc/1/cmdline | tr '\\0' ' ' > ~/cmdline",
        "cat /proc/self/mountinfo > ~/mountinfo",
        "unshare -Ur true; echo $? > ~/unshare",
        "python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)' 2> ~/py-unshare; echo $? >> ~/unshare",
    ]
    config = [{"type": "command", "command": ["sh", "-c", "; ".join(probe)]}]
    with XDesktopEnv(parse_task(task(config)), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        cmdline = env.read_file("{workdir}/cmdline").decode()
        mountinfo = env.read_file("{workdir}/mountinfo").decode()
        unshare = env.read_file("{workdir}/unshare").decode().split()
    assert "--bind" not in cmdline and "--tmpfs" not in cmdline and "--args" in cmdline
    assert "pixelrl-x11" not in mountinfo and "/home/user" in mountinfo
    home = [line for line in mountinfo.splitlines() if " /home/user " in line][0]
    assert " tmpfs " in home  # the home is the sandbox's own memory, no host folder
    assert unshare == ["1", "1"], unshare


# -- 2. limits ---------------------------------------------------------------------------------
def test_absurd_sleeps_and_bad_patterns_are_refused_at_load(tmp_path):
    cases = {
        "sleep_forever": task([{"type": "sleep", "seconds": 1e9}]),
        "sleep_text": task([{"type": "sleep", "seconds": "abc"}]),
        "sleep_nan": task([{"type": "sleep", "seconds": float("nan")}]),
        "sleep_negative": task([{"type": "sleep", "seconds": -1}]),
        "window_unclosed": task(
            [],
            {
                "result": {"type": "window_title", "pattern": "(unclosed"},
                "func": "contains",
                "expected": "x",
            },
        ),  # fmt: skip
        "launch_unclosed": task([{"type": "launch", "command": ["xcalc"], "window": "(x"}]),
        "regex_unclosed": task(
            [],
            {
                "result": {"type": "command", "command": ["true"]},
                "func": "regex_match",
                "expected": "[a-",
            },
        ),  # fmt: skip
        "osworld_sleep": {
            "id": "x",
            "snapshot": "os",
            "instruction": "x",
            "config": [{"type": "sleep", "parameters": {"seconds": 1e9}}],
            "evaluator": {
                "func": "exact_match",
                "result": {"type": "rule", "rules": "a"},
                "expected": {"type": "rule", "rules": {"expected": "a"}},
            },
        },  # fmt: skip
    }
    for name, data in cases.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        with pytest.raises(TaskError):
            load_task(tmp_path / f"{name}.json")
    verdicts = {os.path.basename(v.path): v for v in survey(tmp_path)}
    assert not any(v.runs for v in verdicts.values())
    assert "1e+09" in verdicts["sleep_forever.json"].error
    assert "(unclosed" in verdicts["window_unclosed.json"].error


@needs_x11
def test_a_step_that_never_ends_is_a_task_error_within_the_limit():
    config = [{"type": "command", "command": ["sh", "-c", "sleep 4321"]}]
    env = XDesktopEnv(parse_task(task(config)), screen_size=(320, 240), limits={"step_s": 1})
    seen: set = set()  # the step's sleeper among what this test started, while the step runs

    def look() -> None:
        while not seen and time.monotonic() - start < 5:
            box = env.sandbox
            if box is not None:
                seen.update(sleepers(tree(box.process.pid)))
            time.sleep(0.05)

    try:
        start = time.monotonic()
        looker = threading.Thread(target=look)
        looker.start()
        with pytest.raises(TaskError, match=r"config\[0\].*timed out after 1"):
            env.reset(seed=0)
        assert time.monotonic() - start < 10
        looker.join()
    finally:
        env.close()
    assert seen and wait_gone(seen) == set()


def regex_task(pattern: str) -> dict:
    # 60 characters: ^(a|aa)+$ would backtrack over ~fib(61) = 2.5e12 paths (hours) if not cut, so
    # the bounds below can leave a loaded machine room (the 1-s cut took 6.4 s at load 9)
    return task([], {"result": {"type": "command", "command": ["printf", "a" * 60 + "!"]},
                     "func": "regex_match", "expected": pattern})  # fmt: skip


@needs_x11
def test_catastrophic_regexes_stop_within_a_second():
    # The issue's ^(a+)+$ (2.6 s at 26 characters in Python's re, doubling per character): the
    # regex engine answers it at once; ^(a|aa)+$ still backtracks there, and is cut at 1 s.
    with XDesktopEnv(parse_task(regex_task("^(a+)+$")), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        start = time.monotonic()
        _, reward, *_ = env.step(Action.wait())
        assert reward == 0.0 and time.monotonic() - start < 10
    with XDesktopEnv(parse_task(regex_task("^(a|aa)+$")), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        start = time.monotonic()
        with pytest.raises(TaskError, match="catastrophic backtracking"):
            env.step(Action.wait())
        assert time.monotonic() - start < 30
    window = {"result": {"type": "window_title", "pattern": "^(a|aa)+$"}, "func": "contains",
              "expected": "a"}  # fmt: skip
    app = f"import tkinter; r = tkinter.Tk(); r.title({'a' * 40 + '!'!r}); r.mainloop()"
    launch = [{"type": "launch", "command": ["{python}", "-c", app], "window": "!$"}]
    with XDesktopEnv(parse_task(task(launch, window)), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        with pytest.raises(TaskError, match="catastrophic backtracking"):
            env.step(Action.wait())


def osworld(config: list, evaluator: dict) -> dict:
    return {"id": "hostile", "snapshot": "os", "instruction": "x", "source": "test",
            "config": config, "evaluator": evaluator}  # fmt: skip


@needs_x11
def test_quadratic_metrics_are_cut_at_the_step_limit():
    # diff_text_file over many repeated lines is quadratic in Python's difflib: minutes here
    lines = "python3 -c \"print('\\n'.join('x%d' % (i % {m}) for i in range(60000)))\" > ~/{f}"
    config = [{"type": "execute", "parameters": {"command": lines.format(m=150, f="a"),
                                                 "shell": True}},
              {"type": "execute", "parameters": {"command": lines.format(m=149, f="b"),
                                                 "shell": True}}]  # fmt: skip
    ev = {"func": "diff_text_file", "result": {"type": "vm_file", "path": "/home/user/a"},
          "expected": {"type": "vm_file", "path": "/home/user/b"}}  # fmt: skip
    with XDesktopEnv(parse_task(osworld(config, ev)), screen_size=(320, 240),
                     limits={"step_s": 2}) as env:  # fmt: skip
        env.reset(seed=0)
        start = time.monotonic()
        with pytest.raises(TaskError, match=r"metric diff_text_file ran past .* \(2 s\)"):
            env.step(Action.done())
        assert time.monotonic() - start < 10
    # fuzzy_match is rapidfuzz's now: 8,000 characters took 11 s in pure Python
    fuzzy = {"func": "fuzzy_match", "expected": {"type": "rule", "rules": {"expected": "ab" * 4000}},
             "result": {"type": "vm_command_line", "command": "python3 -c \"print('ba' * 4000)\"",
                        "shell": True}}  # fmt: skip
    with XDesktopEnv(parse_task(osworld([], fuzzy)), screen_size=(320, 240)) as env:
        env.reset(seed=0)
        start = time.monotonic()
        _, reward, *_ = env.step(Action.done())
        assert 0.9 < reward < 1.0 and time.monotonic() - start < 5


@needs_x11
def test_a_flood_of_output_is_capped_and_costs_the_host_no_memory():
    flood = {"func": "check_include_exclude",
             "result": {"type": "vm_command_line", "command": "head -c 100000000 /dev/zero | tr '\\0' a",
                        "shell": True},
             "expected": {"type": "rule", "rules": {"include": ["a"]}}}  # fmt: skip
    limits = {"output_bytes": 1 << 20}
    with XDesktopEnv(parse_task(osworld([], flood)), screen_size=(320, 240), limits=limits) as env:
        env.reset(seed=0)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        _, reward, *_ = env.step(Action.done())
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        rc, out, _ = env.sandbox.run("head -c 5000000 /dev/zero", shell=True)
    assert reward == 1.0 and rc == 0 and len(out) == 1 << 20
    assert grown_mb < 60, f"the host grew by {grown_mb:.0f} MB reading a 100 MB output"


def bytes_under(path: str) -> int:
    """Bytes in the files under `path`; what vanishes while we look counts as nothing."""
    if not os.path.isdir(path) or os.path.islink(path):
        try:
            return os.lstat(path).st_size
        except OSError:
            return 0
    total = 0
    for folder, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(folder, f)).st_size
            except OSError:
                pass
    return total


@needs_x11
def test_disk_processes_and_memory_of_the_sandbox_are_bounded(host_dir):
    limits = SandboxLimits(home_bytes=8 << 20, tmp_bytes=8 << 20, processes=40,
                           memory_bytes=512 << 20)  # fmt: skip
    from pixelrl.envs.x11.display import XDisplay

    display = XDisplay(size=(320, 240))
    before = set(os.listdir("/tmp"))
    box = Sandbox(display.name, limits)
    server = tree(box.process.pid)
    try:
        # 500 MB into the home and /tmp: refused at 8 MB, in the sandbox's memory, not on disk
        for where in ("~/big", "/tmp/big"):
            rc, _, err = box.run(f"head -c 500000000 /dev/zero > {where}", shell=True)
            assert rc != 0 and "No space left" in err, err
        # other tests (xdist workers, a browser) may add to the host's /tmp meanwhile: what
        # this test checks is that none of the refused writes landed there
        assert not os.path.exists("/tmp/big")
        assert [
            n for n in set(os.listdir("/tmp")) - before if bytes_under(f"/tmp/{n}") >= 4 << 20
        ] == []
        # one process may not take more memory than memory_bytes
        rc, _, err = box.run([sys.executable, "-c", "b = bytearray(1 << 30)"])
        assert rc != 0 and "MemoryError" in err, err
        # a fork bomb stops at the process limit
        box.run("for i in $(seq 200); do (sleep 4321 >/dev/null 2>&1 &) 2>/dev/null; done",
                shell=True)  # fmt: skip
        procs = tree(box.process.pid)
        sleeping = len(sleepers(procs - server))
        assert 10 < sleeping <= 40, sleeping
    finally:
        box.close()
        display.close()
    assert wait_gone(procs | server) == set()


@needs_x11
def test_a_killed_parent_leaves_no_process_and_no_folder(tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        from pixelrl.envs.x11.env import XDesktopEnv
        from pixelrl.envs.x11.tasks import parse_task
        config = [{"type": "launch", "command": ["sh", "-c", "sleep 4321"]}]
        env = XDesktopEnv(parse_task({"id": "Killed", "instruction": "x", "config": config,
            "evaluator": {"result": {"type": "command", "command": ["true"]},
                          "func": "contains", "expected": ""}}), screen_size=(320, 240))
        env.reset(seed=0)
        print("ready", flush=True)
        time.sleep(600)
        """
    )
    before = set(os.listdir("/tmp"))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    procs = tree(child.pid)
    assert sleepers(procs), "the episode should be running"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert wait_gone(procs) == set()
    # only the sandbox's own names: other tests may make pixelrl-env-/pixelrl-rank- folders now
    assert {n for n in set(os.listdir("/tmp")) - before if n.startswith("pixelrl-sandbox")} == set()


# -- 3. errors that say what happened ---------------------------------------------------------
@needs_x11
def test_a_task_that_kills_its_command_server_is_a_sandbox_error():
    kill_all = [{"type": "execute", "parameters": {"command": "kill -9 -1", "shell": True}}]
    ev = {"func": "exact_match", "result": {"type": "vm_command_line", "command": "echo a",
                                            "shell": True},
          "expected": {"type": "rule", "rules": {"expected": "a\n"}}}  # fmt: skip
    with XDesktopEnv(parse_task(osworld(kill_all, ev)), screen_size=(320, 240)) as env:
        with pytest.raises(SandboxError, match="sandbox"):
            env.reset(seed=0)
            env.step(Action.done())


@needs_x11
def test_a_fifo_or_a_device_reads_as_nothing_at_once():
    config = [{"type": "execute", "parameters": {"command": "mkfifo ~/fifo", "shell": True}}]
    for path in ("/home/user/fifo", "/dev/zero"):
        ev = {"func": "exact_match", "result": {"type": "vm_file", "path": path},
              "expected": {"type": "rule", "rules": {"expected": "x"}}}  # fmt: skip
        with XDesktopEnv(parse_task(osworld(config, ev)), screen_size=(320, 240)) as env:
            env.reset(seed=0)
            start = time.monotonic()
            _, reward, terminated, *_ = env.step(Action.done())
            assert (reward, terminated) == (0.0, True) and time.monotonic() - start < 5


def test_tasks_check_reports_broken_files_and_goes_on(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "latin1.json").write_bytes(b'{"id": "caf\xe9"}')
    (tmp_path / "huge.json").write_text(json.dumps({"id": "x" * (2 << 20)}))
    os.mkfifo(tmp_path / "fifo.json")  # reading it would block forever
    (tmp_path / "good.json").write_text(
        json.dumps(task([{"type": "sleep", "seconds": 0.1}], name="Good"))
    )
    run = subprocess.run(
        [*PIXELRL, "tasks", "check", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout
    assert "runs     good.json" in lines
    for name, why in [("deep.json", "nested too deeply"), ("latin1.json", "not UTF-8"),
                      ("huge.json", "larger than"), ("fifo.json", "not a regular file")]:  # fmt: skip
        assert f"invalid  {name}" in lines and why in lines, (name, lines)
    assert "1 of 5 task files would run here" in lines


@needs_x11
def test_wrong_sandbox_limits_are_one_line_errors(tmp_path):
    for kwargs, text in [
        ({"task": "TkCounterThree", "limits": {"stp_s": 1}}, "unknown sandbox limit(s) ['stp_s']"),
        ({"task": "TkCounterThree", "limits": {"step_s": -1}}, "step_s must be a finite number"),
        ({"task": "TkCounterThree", "limits": {"processes": 1.5}}, "processes must be a whole"),
        ({"task": "TkCounterThree", "limits": {"memory_bytes": 1 << 28}}, "below memory_bytes"),
        ({"task": "TkCounterThree", "limits": {"setup_s": 0}}, "setup_s must be a finite number"),
    ]:
        run = subprocess.run(
            [*PIXELRL, "record", "--env", "pixelrl/XDesktop-TkCounterThree-v0",
             "--env-kwargs", json.dumps(kwargs), "--out", str(tmp_path / "o")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and text in run.stderr, run.stderr
        assert "Traceback" not in run.stderr


@needs_x11
def test_an_app_cannot_take_more_than_its_share_of_the_x_servers_memory():
    # Pixmaps live in Xvfb, outside the sandbox's limits: the server has a bound of its own.
    from Xlib import display as xdisplay

    from pixelrl.envs.x11.display import XVFB_MEMORY_BYTES, XDisplay

    server = XDisplay(size=(320, 240))
    client = xdisplay.Display(server.name)
    errors = []
    client.set_error_handler(lambda error, request: errors.append(type(error).__name__))
    try:
        root = client.screen().root
        for _ in range(12):  # 12 x 256 MB
            pixmap = root.create_pixmap(8000, 8000, 24)
            pixmap.fill_rectangle(pixmap.create_gc(foreground=0), 0, 0, 8000, 8000)
            client.sync()
        with open(f"/proc/{server.server.pid}/status") as f:
            rss = int([line for line in f if line.startswith("VmRSS")][0].split()[1]) * 1024
        assert "BadAlloc" in errors and server.alive()
        assert rss <= XVFB_MEMORY_BYTES
    finally:
        client.close()
        server.close()


# -- 4. beside another sandbox (issue 51) -----------------------------------------------------
NEIGHBOUR = """
import os, sys, time
from pixelrl.envs.x11.display import XDisplay
from pixelrl.envs.x11.sandbox import Sandbox
if os.fork():  # the parent leaves: the neighbour is nobody's child in the test
    os._exit(0)
os.setsid()
display = XDisplay(size=(320, 240))
box = Sandbox(display.name)
box.run("for i in 1 2 3; do (sleep 4321 >/dev/null 2>&1 &); done", shell=True)
print(os.getpid(), box.process.pid, flush=True)
time.sleep(float(sys.argv[1]))
"""


@needs_x11
def test_the_checks_hold_beside_another_sandbox(tmp_path, host_dir):
    """Another run's sandbox (not this test's child), with sleepers of the same marker, while
    the checks of this module that count processes run: they look only at what they started,
    so they hold. (The whole module beside another run: `pytest tests/envs/test_x11_security.py`
    in two shells at once.)"""
    starter = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, "120"], stdout=subprocess.PIPE,
                               text=True)  # fmt: skip
    with starter.stdout:
        host, bwrap = (int(pid) for pid in starter.stdout.readline().split())
    starter.wait()
    theirs = tree(bwrap)
    try:
        assert len(sleepers(theirs)) == 3
        test_a_step_that_never_ends_is_a_task_error_within_the_limit()
        test_disk_processes_and_memory_of_the_sandbox_are_bounded(host_dir)
        test_a_killed_parent_leaves_no_process_and_no_folder(tmp_path)
        assert running(theirs) == theirs, "the checks touched the other sandbox"
    finally:
        os.kill(host, signal.SIGTERM)  # the neighbour started here; it takes its sandbox along
    assert wait_gone(theirs) == set()
