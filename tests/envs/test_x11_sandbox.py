"""The sandbox of task commands (bubblewrap): a task's ``execute`` step cannot write outside it,
reach another X display or the network, or run as root; its own display works; and every
process it starts ends with the episode. Real Xvfb, real bwrap, no mocks."""

from __future__ import annotations

import os
import shutil
import socket

import pytest
from own_processes import sleepers, tree, wait_gone

from pixelrl.envs.gui_action import Action
from pixelrl.envs.x11.display import XDisplay
from pixelrl.envs.x11.env import XDesktopEnv
from pixelrl.envs.x11.sandbox import (
    NOBODY,
    SandboxLimits,
    bwrap_argv,
    drop_root_argv,
    exposed_paths,
)
from pixelrl.envs.x11.tasks import APPS_DIR, parse_task

MISSING = [p for p in ("Xvfb", "xdotool", "bwrap") if shutil.which(p) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {MISSING}: run scripts/install_system_deps.sh"
)


def execute(command: str) -> dict:
    return {"type": "execute", "parameters": {"command": command, "shell": True}}


def hostile_task(outside: str, other_display: str, port: int) -> dict:
    return {
        "id": "sandbox-probe",
        "snapshot": "os",
        "instruction": "Nothing to do.",
        "source": "pixelrl test",
        "config": [
            execute(f"touch {outside}/pwned"),  # a host folder (under the host's /tmp)
            execute("echo x > /etc/pixelrl-pwned"),
            execute("touch {apps}/pwned"),  # visible inside, read-only
            execute("touch /var/tmp/pixelrl-pwned"),
            execute(f"DISPLAY={other_display} xdotool getmouselocation && touch ~/reached-display"),
            execute(
                "python -c \"import socket; socket.create_connection(('127.0.0.1', "
                f'{port}), timeout=2)" && touch ~/reached-network'
            ),
            execute("ls /root > ~/root.txt; ls /home > ~/home.txt"),
            execute("xdotool getmouselocation && touch ~/own-display"),  # the env's own: works
            execute("id -u > ~/uid.txt; (nohup sleep 4321 >/dev/null 2>&1 &)"),
        ],
        "evaluator": {
            "func": "check_include_exclude",
            "result": {"type": "vm_command_line", "command": "ls -a ~", "shell": True},
            "expected": {
                "type": "rule",
                "rules": {"include": ["own-display", "uid.txt"], "exclude": ["reached"]},
            },
        },
    }


def test_an_execute_step_cannot_leave_the_sandbox(tmp_path):
    outside = tmp_path / "host"
    outside.mkdir()
    outside.chmod(0o777)  # writable by anyone on the host: only the sandbox can stop the write
    other = XDisplay(size=(320, 240))  # another display on this machine
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        task = parse_task(hostile_task(str(outside), other.name, listener.getsockname()[1]))
        with XDesktopEnv(task, screen_size=(640, 480)) as env:
            _, info = env.reset(seed=0)
            # Every escape failed (its step said so) and the sandbox's own display worked.
            assert len(info["setup_errors"]) == 6, info["setup_errors"]
            _, listing, _ = env.sandbox.run(["ls", "-a", env.workdir])
            assert {"Desktop", "home.txt", "own-display", "root.txt"} <= set(listing.split())
            assert not [n for n in listing.split() if n.startswith("reached")]
            assert env.read_file("{workdir}/root.txt") == b""  # /root is empty inside
            assert env.read_file("{workdir}/home.txt") == b"user\n"
            uid = int(env.read_file("{workdir}/uid.txt"))
            assert uid == env.sandbox.uid and uid != 0
            if env.sandbox.cgroup is not None:  # else a uid of its own (see Sandbox.budget)
                assert uid == (NOBODY if os.geteuid() == 0 else os.geteuid())
            started = tree(env.sandbox.process.pid)
            assert sleepers(started), "the background process of the step should run until the end"
            _, reward, terminated, _, info = env.step(Action.done())
            assert (reward, terminated) == (1.0, True)
        assert list(outside.iterdir()) == []
        assert not os.path.exists("/etc/pixelrl-pwned")
        assert not os.path.exists(APPS_DIR / "pwned")
        assert not os.path.exists("/var/tmp/pixelrl-pwned")
        assert wait_gone(started) == set(), "a process the task started outlived the episode"
    finally:
        other.close()
        listener.close()


def test_a_checkout_under_tmp_is_exposed_but_never_tmp_itself(tmp_path):
    # a clone in /tmp/x: its venv and code are shown read-only; /tmp itself (the host's X
    # sockets: other displays) never is, whatever the interpreter's paths are
    checkout = tmp_path / "clone"
    (checkout / ".venv").mkdir(parents=True)
    wanted = {str(checkout), str(checkout / ".venv"), "/tmp", "/usr", "/root", str(tmp_path)}
    shown = exposed_paths(wanted)
    assert "/tmp" not in shown and "/root" not in shown and "/usr" not in shown
    assert shown == [str(tmp_path)]  # the outermost folder asked for below /tmp


def test_the_sandbox_command_line_hides_host_folders_and_drops_root():
    limits = SandboxLimits(home_bytes=5 << 20, tmp_bytes=7 << 20)
    text = " ".join(bwrap_argv(":5", limits, [], root=True))
    for part in [
        "--unshare-net",
        "--unshare-pid",
        "--ro-bind / /",
        "--tmpfs /root",
        "--tmpfs /home",
        "--tmpfs /run",
        f"--perms 1777 --size {7 << 20} --tmpfs /tmp",
        f"--perms 0777 --size {5 << 20} --tmpfs /home/user",
        "--clearenv",
        "--setenv DISPLAY :5",
    ]:
        assert part in text, part
    assert "--bind " not in text  # no host folder is writable inside
    assert "--unshare-user" not in text  # as root: the real nobody, not a mapped root
    user = " ".join(bwrap_argv(":5", limits, [], root=False))
    assert "--unshare-user" in user
    drop = " ".join(drop_root_argv())
    assert f"--reuid {NOBODY} --regid {NOBODY} --clear-groups" in drop and "--no-new-privs" in drop


def test_host_folders_beyond_the_system_show_empty_inside():
    # Issue 51 (low): checkouts, other projects' folders, /opt, /srv... were readable by the task.
    from pixelrl.envs.x11.sandbox import HOME, Sandbox, _exposed_paths

    system = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/var",
              "/sys", "/dev", "/proc", "/tmp"}  # fmt: skip
    top = [os.path.join("/", n) for n in sorted(os.listdir("/"))]
    folders = [p for p in top if os.path.isdir(p) and not os.path.islink(p) and p not in system]
    files = [p for p in top if os.path.isfile(p) and not os.path.islink(p)]
    assert "/root" in folders
    exposed = _exposed_paths() + [HOME]
    display = XDisplay(size=(320, 240))
    box = Sandbox(display.name)
    try:
        for folder in folders:
            shows = {os.path.relpath(p, folder).split("/")[0] for p in exposed
                     if p.startswith(folder + "/")}  # fmt: skip
            rc, out, _ = box.run(["ls", "-A", folder])
            assert rc == 0 and set(out.split()) == shows, (folder, out)
        for file in files:
            assert box.read(file) in (None, b""), file
        rc, out, _ = box.run(["sh", "-c", f"test -x $(command -v python) && ls {APPS_DIR}"])
        assert rc == 0 and out, "the interpreter and the shipped apps still show"
    finally:
        box.close()
        display.close()
