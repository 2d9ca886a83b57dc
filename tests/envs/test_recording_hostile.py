"""Recordings read as hostile (issue 51): a folder from anyone cannot choose a display or an env
option that reaches outside the env, cannot make a path template allocate or leave the folder,
and cannot make a small file decode into gigabytes. Each refusal is one line, exit 2, before
anything is made or decoded; the commands run as a user would type them, in subprocesses whose
peak memory is measured.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium
import pytest
import recording_toy_env  # noqa: F401  (registers pixelrl/RecordingToy*)
from recording_xvfb import DevicePerson, private_xvfb

from pixelrl.envs.recording import RecordEpisodes

GUI = "pixelrl/RecordingToyGUI-v0"
X11 = "pixelrl/XDesktop-TkCounterThree-v0"
# Peak resident memory a refused command may reach: the interpreter with pixelrl, numpy, Pillow
# and pyarrow imported (~100-140 MB here), far below what each attack took before (0.5-6 GB).
MAX_RSS_MB = 300
ADDRESS_SPACE_LIMIT = 4 << 30
HERE = Path(__file__).parent


def record_toy(root: Path) -> Path:
    """A genuine one-step recording of the toy GUI env, to be tampered with."""
    env = RecordEpisodes(gymnasium.make(GUI), root)
    env.reset(seed=0)
    env.step(env.unwrapped.expert_action())  # a click on the box: the episode ends
    env.close()
    return root


def edit_info(root: Path, change) -> None:
    path = root / "meta/info.json"
    info = json.loads(path.read_text())
    change(info)
    path.write_text(json.dumps(info))


def in_info(change):
    """A tampering of the recording at ``root`` that changes its ``meta/info.json``."""
    return lambda root: edit_info(root, change)


def png_bomb(path: Path, width: int, height: int) -> None:
    """A valid RGB PNG of ``width`` x ``height`` black pixels, streamed (never held decoded):
    12000x12000 is ~420 KB on disk and 432 MB decoded."""
    squeeze = zlib.compressobj(9)
    row = bytes(1 + 3 * width)  # filter byte 0, then black pixels
    data = b"".join(squeeze.compress(row) for _ in range(height)) + squeeze.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


# The child: pixelrl's CLI with the toy ids registered (as this process has them), reporting its
# own peak RSS (VmHWM of its own memory: a rusage's ru_maxrss would count the forked parent's).
CHILD = """
import atexit, sys, recording_toy_env
from pixelrl.cli import main

def report(path):
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM"))
    open(path, "w").write(peak.split()[1])

atexit.register(report, sys.argv[1])
sys.exit(main(sys.argv[2:]))
"""


def run_pixelrl(argv: list[str], cwd: Path) -> tuple[int, str, float]:
    """``pixelrl ARGV`` in a subprocess: exit status, stderr, peak RSS in MB."""
    env = dict(os.environ, PYTHONPATH=str(HERE), HF_HUB_OFFLINE="1")
    peak = tempfile.NamedTemporaryFile(dir=cwd, suffix=".peak", delete=False).name
    child = subprocess.run(
        [sys.executable, "-c", CHILD, peak, *argv],
        cwd=cwd,
        env=env,
        preexec_fn=_limit_memory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    text = Path(peak).read_text()
    return child.returncode, child.stderr, int(text) / 1024 if text else float("inf")


def _limit_memory() -> None:
    """In the child: an address-space cap, so that a regression fails the test instead of
    taking the memory of a machine that others share."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def bomb_template(info):
    info["features"]["screenshot"]["path"] = (
        "frames/episode_{episode:06d}/frame_{frame:>1500000000}.png"
    )


def attribute_template(info):
    info["features"]["screenshot"]["path"] = "frames/{key.__class__.__name__}/frame_{frame:06d}.png"


def absolute_template(info):
    info["features"]["screenshot"]["path"] = "/etc/{key}/frame_{frame:06d}.png"


def recorded_display(info):
    info["env_kwargs"] = {"display": ":77", "allow_existing_display": True}
    info["env_id"] = X11


def recorded_xvfb_path(info):
    info["env_kwargs"] = {"screen_size": [640, 400], "xvfb_path": "/bin/sh"}
    info["env_id"] = "pixelrl/Desktop-ClickButton-v0"


def module_env_id(info):
    info["env_id"] = "recording_toy_env:ToyGUIEnv-v0"  # Gymnasium would import the module


def foreign_env_id(info):
    info["env_id"] = "CartPole-v1"


def zero_fps(info):
    info["fps"] = 0


def huge_declared_frames(info):
    info["features"]["screenshot"]["shape"] = [12000, 12000, 3]


def first_frame_bomb(root: Path) -> None:
    png_bomb(root / "frames/episode_000000/frame_000000.png", 12000, 12000)


def over_budget(root: Path) -> None:
    """A declared shape within a frame's limit, but 101 frames of it: 4.7 GiB to stack."""
    edit_info(root, lambda info: info["features"]["screenshot"].update(shape=[4096, 4096, 3]))
    manifest = root / "meta/episodes.jsonl"
    entry = json.loads(manifest.read_text())
    entry["length"] = 100
    manifest.write_text(json.dumps(entry) + "\n")
    import pyarrow.parquet as pq

    table = pq.read_table(root / entry["data_path"])
    rows = table.take([0] * 100).to_pydict()
    rows["frame_index"] = list(range(100))
    import pyarrow as pa

    pq.write_table(pa.table(rows, schema=table.schema), root / entry["data_path"])
    for t in range(101):
        (root / f"frames/episode_000000/frame_{t:06d}.png").write_bytes(b"x")


def padded_info(root: Path) -> None:
    path = root / "meta/info.json"
    path.write_text(path.read_text() + " " * (2 << 20))


def absolute_data_path(root: Path) -> None:
    manifest = root / "meta/episodes.jsonl"
    entry = json.loads(manifest.read_text())
    entry["data_path"] = str((root / entry["data_path"]).resolve())
    manifest.write_text(json.dumps(entry) + "\n")


# (id, command, how the recording is tampered with, text the error line holds)
CASES = [
    ("view-width-bomb", "view", in_info(bomb_template), "is not the png template"),
    ("view-attribute-template", "view", in_info(attribute_template), "is not the png template"),
    ("view-absolute-template", "view", in_info(absolute_template), "is not the png template"),
    ("replay-width-bomb", "replay", in_info(bomb_template), "is not the png template"),
    ("view-png-bomb", "view", first_frame_bomb, "a 12000x12000 RGB picture; the dataset declares 96x64"),
    ("replay-png-bomb", "replay", first_frame_bomb, "a 12000x12000 RGB picture; the dataset declares 96x64"),
    ("view-declared-huge", "view", in_info(huge_declared_frames), "each size an integer in 1..8192"),
    ("view-over-budget", "view", over_budget, "would take 4.7 GiB"),
    ("view-absolute-data-path", "view", absolute_data_path, "is not 'data/chunk-000/episode_000000.parquet'"),
    ("view-zero-fps", "view", in_info(zero_fps), "fps must be in (0, 1000]"),
    ("view-padded-info", "view", padded_info, "a pixelrl meta file is at most 1048576"),
    ("view-scale", "view --scale 1000", lambda root: None, "(--scale 1000) would take 34.3 GiB to render"),
    ("replay-display", "replay", in_info(recorded_display), "'allow_existing_display', 'display' may come from the command line only"),
    ("replay-xvfb-path", "replay", in_info(recorded_xvfb_path), "'xvfb_path' may come from the command line only"),
    ("replay-module-env-id", "replay", in_info(module_env_id), "is not a pixelrl env id"),
    ("replay-foreign-env-id", "replay", in_info(foreign_env_id), "'CartPole-v1' is not a pixelrl env id"),
]  # fmt: skip


@pytest.fixture(scope="module")
def toy_recording(tmp_path_factory) -> Path:
    return record_toy(tmp_path_factory.mktemp("toy") / "rec")


def test_hostile_recordings_are_refused_in_one_line_with_little_memory(toy_recording, tmp_path):
    def run(case):
        name, command, tamper, expected = case
        root = tmp_path / name
        shutil.copytree(toy_recording, root)
        tamper(root)
        command, *options = command.split()
        argv = [command, str(root), *options]
        if command == "view":
            argv += ["--out", str(tmp_path / f"{name}.gif")]
        return case, *run_pixelrl(argv, tmp_path), root

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(run, CASES))
    failures = []
    for (name, command, _, expected), code, stderr, rss, _root in results:
        command = command.split()[0]
        # the error is one line; a left-out episode's warning may come before it
        lines = stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("pixelrl ")]
        ok = (
            code == 2
            and "Traceback" not in stderr
            and errors == lines[-1:]
            and lines[-1].startswith(f"pixelrl {command}: error: ")
            and expected in lines[-1]
            and rss < MAX_RSS_MB
            and not (tmp_path / f"{name}.gif").exists()
        )
        print(f"{name}: exit {code}, peak RSS {rss:.0f} MB")
        if not ok:
            failures.append(f"{name}: exit {code}, {rss:.0f} MB peak, stderr {stderr[-600:]!r}")
    assert not failures, "\n".join(failures)


@pytest.fixture
def xvfb():
    with private_xvfb() as name:
        yield name


def test_a_recording_naming_a_display_touches_nothing_there(toy_recording, xvfb, tmp_path):
    """The issue's attack: info.json names an existing display and allow_existing_display, and
    replay clicked and typed into it. Now refused before any env is made: no window appears
    on that display and its pointer does not move."""
    from Xlib import X
    from Xlib.display import Display

    root = tmp_path / "rec"
    shutil.copytree(toy_recording, root)

    def aim(info):
        info["env_id"] = X11
        info["env_kwargs"] = {"display": xvfb, "allow_existing_display": True}

    edit_info(root, aim)
    watcher = Display(xvfb)
    screen = watcher.screen().root
    screen.change_attributes(event_mask=X.SubstructureNotifyMask)
    watcher.sync()
    before = screen.query_pointer()
    code, stderr, _ = run_pixelrl(["replay", str(root)], tmp_path)
    after = screen.query_pointer()
    watcher.sync()
    windows = []
    while watcher.pending_events():
        event = watcher.next_event()
        if event.type in (X.CreateNotify, X.MapNotify):
            windows.append(event.type)
    watcher.close()
    assert windows == [], f"{len(windows)} windows created or mapped on {xvfb}"
    assert (after.root_x, after.root_y) == (before.root_x, before.root_y)
    assert code == 2 and stderr.strip().splitlines()[-1].startswith("pixelrl replay: error:")
    assert "'allow_existing_display', 'display' may come from the command line only" in stderr
    assert "Traceback" not in stderr


def test_input_injected_by_clients_is_not_the_persons(xvfb):
    """What a task's client injects (xdotool: XTEST; XSendEvent to a window) is neither
    recorded as the person's nor able to end the recording with the stop key."""
    from pixelrl.envs.gui_action import Action
    from pixelrl.envs.recording.human import HumanRecorder

    person = DevicePerson(xvfb)
    root = person.display.screen().root.id
    recorder = HumanRecorder(xvfb, screenshot_interval=0.05, stop_key="f12")
    with recorder:
        time.sleep(0.2)
        person.move(100, 100)
        person.click(pause=0.6)
        person.xdotool("mousemove", "200", "150", "click", "1")
        person.xdotool("type", "--delay", "10", "rm -rf ~")
        person.xdotool("key", "Return")
        person.xdotool("key", "--window", str(root), "F12")  # XSendEvent
        person.xdotool("key", "F12")  # XTEST
        stopped_by_injection = recorder.wait(timeout=0.5)
        person.key("F12")
        stopped_by_person = recorder.wait(timeout=5)
    person.close()
    assert not stopped_by_injection, "an injected F12 ended the recording"
    assert stopped_by_person, "the person's F12 was not seen"
    assert [a.action for a in recorder.actions()] == [Action.click(100, 100)]
    assert recorder.ignored >= 2 + 2 * len("rm -rf ~")  # the click's and the keys' events
    recorder.cleanup()


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_human_recorder_memory_stays_bounded_while_recording():
    """An idle 1280x800 display grabbed 20 times a second for 3 s: the recorder holds a few
    screenshots, not all 60 (180 MB; before, 15 s took 738 MiB and 300 s ~13 GiB)."""
    from pixelrl.envs.recording.human import HumanRecorder

    with private_xvfb("1280x800") as display:
        recorder = HumanRecorder(display, screenshot_interval=0.05)
        with recorder:
            time.sleep(0.5)  # warm: mss buffers, the first grabs
            start = rss_mb()
            time.sleep(3)
            grown = rss_mb() - start
    assert grown < 40, f"resident memory grew {grown:.0f} MB in 3 s of an idle display"
    recorder.cleanup()


def test_an_expert_that_does_not_fit_the_screen_is_one_line(tmp_path):
    """The issue's case: XcalcMultiply's scripted solution clicks at 1280x800 coordinates;
    recorded on a 320x240 screen, the first off-screen click ends the command in one line."""
    if not (shutil.which("Xvfb") and shutil.which("xcalc")):
        pytest.skip("needs Xvfb and xcalc (scripts/install_system_deps.sh installs them)")
    argv = ["record", "--env", "pixelrl/XDesktop-XcalcMultiply-v0", "--agent", "expert",
            "--env-kwargs", '{"screen_size": [320, 240]}', "--episodes", "1", "--out", "o"]  # fmt: skip
    code, stderr, _ = run_pixelrl(argv, tmp_path)
    last = stderr.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in stderr, stderr[-800:]
    assert last.startswith("pixelrl record: error: --agent expert played 'pyautogui.click(")
    assert "is off-screen: the screen is 320x240" in last


def test_the_command_line_gives_what_a_recording_may_not():
    """replay --env-kwargs: the only way to name a display; the recording keeps its episode
    options, and a value the env id fixes (an X11 task) stays the id's."""
    from pixelrl.envs.recording import DatasetError
    from pixelrl.envs.recording.env_options import recordable_kwargs, replay_kwargs

    recorded = {"screen_size": [320, 240], "display": ":5", "task": "/tmp/evil.json"}
    with pytest.raises(DatasetError, match="'display' may come from the command line only"):
        replay_kwargs(X11, recorded, None, "info.json")
    assert replay_kwargs(X11, recorded, {"display": ":9"}, "info.json") == {
        "screen_size": [320, 240],
        "display": ":9",
    }
    with pytest.raises(DatasetError, match="not a size up to 8192"):
        replay_kwargs(X11, {"screen_size": [100000, 2]}, None, "info.json")
    # what the recorder writes: the episode's options, not the host's
    assert recordable_kwargs(X11, {**recorded, "task": "TkCounterThree"}) == {
        "task": "TkCounterThree",
        "screen_size": [320, 240],
    }


@pytest.mark.parametrize(
    "screenshot_file, expected",
    [
        ("/etc/passwd", "is outside"),
        ("../outside.png", "is outside"),
        ("bomb.png", "12000x12000 is larger than a frame may be"),
        ("notes.txt", "not a PNG or JPEG screenshot"),
    ],
)
def test_an_osworld_trajectory_reads_only_its_own_bounded_screenshots(
    tmp_path, screenshot_file, expected
):
    """import_osworld reads a folder from anyone: a screenshot named outside it, a PNG bomb or
    another format is one clear error before anything is decoded or written."""
    from PIL import Image

    from pixelrl.envs.recording import DatasetError
    from pixelrl.envs.recording.interop import import_osworld

    folder = tmp_path / "task"
    folder.mkdir()
    Image.new("RGB", (64, 48)).save(folder / "initial_state.png")
    Image.new("RGB", (64, 48)).save(tmp_path / "outside.png")
    png_bomb(folder / "bomb.png", 12000, 12000)
    (folder / "notes.txt").write_text("%!PS-Adobe-3.0 EPSF-3.0\n")
    step = {"action": "pyautogui.click(1, 2)", "screenshot_file": screenshot_file}
    (folder / "traj.jsonl").write_text(json.dumps(step) + "\n")
    with pytest.raises(DatasetError, match=expected):
        import_osworld(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()
