"""``pixelrl serve`` (issue 39 item 2): envs behind openenv-core's server, stepped by OpenEnv's own
client (``GenericEnvClient``) over loopback. Each server is the real command in a subprocess on a
free port; clients are isolated (one env per session), seeded episodes are deterministic, and bad
or hostile requests get an error while the server keeps serving.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openenv.core")

import gymnasium  # noqa: E402

import pixelrl.envs  # noqa: E402,F401
from pixelrl.envs.gui_action import to_pyautogui  # noqa: E402
from pixelrl.serve import decode_image, is_loopback  # noqa: E402

CLICK = "pixelrl/Desktop-ClickButton-v0"
NAV = "pixelrl/PointNav-v0"
SCREEN = [320, 240]


def _start(tmp: Path, *argv: str):
    """``pixelrl serve ... --port 0`` in a subprocess; its URL from the first line it prints."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    log = tmp / "server.log"  # a file, not a pipe: a full pipe would stall the server
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pixelrl", "serve", *argv, "--port", "0"],
            cwd=tmp,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    proc.log = log
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("serving "):
                url = line.split(" on ")[1].split()[0]
                return proc, url
        if proc.poll() is not None:
            break
    proc.kill()
    proc.wait()
    raise AssertionError(f"the server did not start: {proc.log.read_text()}")


def _stop(proc) -> str:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()
    return proc.log.read_text()


@pytest.fixture(scope="module")
def desktop(tmp_path_factory):
    proc, url = _start(
        tmp_path_factory.mktemp("desktop"),
        CLICK,
        "--env-kwargs",
        json.dumps({"screen_size": SCREEN}),
    )
    yield url
    _stop(proc)


@pytest.fixture(scope="module")
def nav(tmp_path_factory):
    kwargs = {"width": 32, "height": 32}
    proc, url = _start(
        tmp_path_factory.mktemp("nav"), NAV, "--env-kwargs", json.dumps(kwargs), "--images",
        "lists", "--max-sessions", "3",
    )  # fmt: skip
    yield url
    _stop(proc)


def client(url: str):
    from openenv.core.generic_client import GenericEnvClient

    return GenericEnvClient(base_url=url, message_timeout_s=60).sync()


def local_reset(seed: int):
    env = gymnasium.make(CLICK, screen_size=tuple(SCREEN))
    obs, _ = env.reset(seed=seed)
    return env, obs


def error_of(call) -> str:
    with pytest.raises(RuntimeError) as caught:
        call()
    return str(caught.value)


# -- the GUI env -------------------------------------------------------------------------------
def test_openenv_client_plays_a_desktop_episode_exactly_as_in_process(desktop):
    env, local = local_reset(seed=5)
    with client(desktop) as c:
        r = c.reset(seed=5)
        assert r.done is False and r.reward is None
        shot = decode_image(r.observation["screenshot"])
        assert shot.shape == (240, 320, 3)
        assert np.array_equal(shot, local["screenshot"])  # lossless: the env's exact pixels
        assert r.observation["instruction"] == local["instruction"]
        assert set(r.observation["info"]) == {"success"}  # no a11y tree, no target box

        text = to_pyautogui(env.unwrapped.expert_action())
        local_obs, local_reward, *_ = env.step(text)
        r = c.step({"action_text": text})
        assert r.done is True and r.reward == local_reward == 1.0
        assert r.observation["terminated"] is True and r.observation["truncated"] is False
        assert r.observation["info"] == {"success": True}
        assert np.array_equal(decode_image(r.observation["screenshot"]), local_obs["screenshot"])
        state = c.state()
        assert state["step_count"] == 1 and state["done"] is True and state["seed"] == 5

        # an action after the episode ended: an error, then the session goes on
        assert "the episode is over" in error_of(lambda: c.step({"kind": "wait"}))
        assert c.reset(seed=6).done is False
        r = c.step({"kind": "move", "x": 10, "y": 20})  # Action's fields, not text
        assert r.done is False and r.reward == 0.0
    env.close()


def test_clients_are_isolated_and_the_same_seed_gives_the_same_episode(desktop):
    with client(desktop) as a, client(desktop) as b, client(desktop) as again:
        ra, rb, r0 = a.reset(seed=0), b.reset(seed=1), again.reset(seed=0)
        assert ra.observation["screenshot"] != rb.observation["screenshot"]
        assert ra.observation == r0.observation  # determinism across sessions
        for _ in range(3):
            a.step({"action_text": "pyautogui.moveTo(x=1, y=1)"})
        b.step({"kind": "wait"})
        assert a.state()["step_count"] == 3 and b.state()["step_count"] == 1
        assert again.state()["step_count"] == 0
        assert a.state()["episode_id"] != b.state()["episode_id"]
        # b's episode is its own: a's moves did not touch it
        _, local = local_reset(seed=1)
        r = b.step({"kind": "wait"})
        assert r.observation["instruction"] == local["instruction"]


BAD_GUI_ACTIONS = [
    ({"action_text": "__import__('os').system('touch pwned')"}, "invalid action"),
    ({"action_text": "pyautogui.click(x=5000, y=1)"}, "off-screen"),
    ({"action_text": "pyautogui.click(x=1, y=1)", "kind": "click"}, "VALIDATION_ERROR"),
    ({"kind": "teleport", "x": 1, "y": 1}, "VALIDATION_ERROR"),
    ({"kind": "click"}, "click needs x and y"),
    ({"kind": "click", "x": "1", "y": 2}, "VALIDATION_ERROR"),  # no coercion from text
    ({"kind": "key", "keys": ["nosuchkey"]}, "invalid action"),
    ({"bogus": 1}, "VALIDATION_ERROR"),
    ({}, "VALIDATION_ERROR"),
    ({"action": 1}, "VALIDATION_ERROR"),  # a navigation action on a GUI env
    ({"action_text": "x" * 20000}, "VALIDATION_ERROR"),
]


@pytest.mark.parametrize("action,expected", BAD_GUI_ACTIONS, ids=[str(i) for i in range(11)])
def test_a_bad_action_is_an_error_and_the_episode_goes_on(desktop, tmp_path, action, expected):
    with client(desktop) as c:
        c.reset(seed=2)
        assert expected in error_of(lambda: c.step(action))
        assert c.state()["step_count"] == 0  # nothing happened
        assert c.step({"kind": "wait"}).done is False
    assert not any(p.name == "pwned" for p in Path(tmp_path).parent.rglob("pwned"))


def test_bad_resets_and_steps_before_reset_are_errors(desktop):
    with client(desktop) as c:
        assert "no episode: reset first" in error_of(lambda: c.step({"kind": "wait"}))
        assert "seed must be an integer" in error_of(lambda: c.reset(seed=-1))
        assert "seed must be an integer" in error_of(lambda: c.reset(seed="zero"))
        assert "seed must be an integer" in error_of(lambda: c.reset(seed=True))
        assert "episode_id" in error_of(lambda: c.reset(seed=1, episode_id="e" * 300))
        assert c.reset(seed=1, episode_id="mine").done is False
        assert c.state()["episode_id"] == "mine"


def _ws(url: str):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + "/ws", max_size=2**26, open_timeout=30)


def test_hostile_websocket_messages_are_errors_and_the_server_keeps_serving(desktop):
    from websockets.exceptions import ConnectionClosed

    with _ws(desktop) as ws:  # malformed messages: an error each, the session goes on
        for raw in [
            "{not json",
            '{"type": "fly"}',
            '{"type": "step"}',
            '{"type": "step", "data": 5}',
        ]:
            ws.send(raw)
            reply = json.loads(ws.recv(timeout=30))
            assert reply["type"] == "error", (raw, reply)
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
    # JSON that is not an object, 100,000 nested brackets, a binary frame that is not UTF-8:
    # OpenEnv answers with an error and ends that session (others are untouched)
    for raw in ["[]", "null", "[" * 100_000, b"\xff\xfe\xfd"]:
        with _ws(desktop) as ws:
            ws.send(raw)
            reply = json.loads(ws.recv(timeout=30))
            assert reply["type"] == "error", (raw[:10], reply)
    with _ws(desktop) as ws:  # 2 MiB: over the 1 MiB cap, the server closes that connection
        ws.send(json.dumps({"type": "step", "data": {"action_text": "a" * (2 << 20)}}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with client(desktop) as c:  # still serving
        assert c.reset(seed=0).done is False


def test_hostile_http_requests_are_4xx_and_the_server_keeps_serving(desktop):
    import httpx

    with httpx.Client(base_url=desktop, timeout=60, trust_env=False) as http:
        step = {"action": {"kind": "wait"}}
        r = http.post("/step", json=step)  # HTTP is stateless in OpenEnv: no episode
        assert r.status_code == 422 and "no episode" in r.json()["detail"]
        assert http.post("/step", json={"action": {"kind": "fly"}}).status_code == 422
        assert http.post("/step", content=b"\xff\xfe{").status_code == 400
        assert http.post("/step", content=b"[" * 100_000).status_code in (400, 422)
        assert http.post("/step", content=b"x" * (2 << 20)).status_code == 413
        r = http.post("/reset", json={"seed": 4})
        assert r.status_code == 200 and r.json()["observation"]["instruction"]
        assert http.get("/health").json()["status"] == "healthy"
        assert http.get("/metadata").json()["name"] == CLICK
        assert "action_text" in http.get("/schema").json()["action"]["properties"]


# -- the navigation env ----------------------------------------------------------------------------
def test_nav_env_over_openenv_lists_actions_and_measures(nav):
    local = gymnasium.make(NAV, width=32, height=32)
    expected, _ = local.reset(seed=7)
    with client(nav) as c, client(nav) as twin:
        r = c.reset(seed=7)
        assert r.observation == twin.reset(seed=7).observation
        rgb = np.asarray(r.observation["rgb"], dtype=np.uint8)
        depth = np.asarray(r.observation["depth"], dtype=np.float32)
        assert rgb.shape == (32, 32, 3) and depth.shape == (32, 32, 1)
        assert np.array_equal(rgb, expected["rgb"]) and np.array_equal(depth, expected["depth"])
        assert len(r.observation["pointgoal_with_gps_compass"]) == 2

        assert "not one of the env's actions" in error_of(lambda: c.step({"action": 7}))
        assert "VALIDATION_ERROR" in error_of(lambda: c.step({"action": 1.5}))
        assert "VALIDATION_ERROR" in error_of(lambda: c.step({"action_text": "click()"}))
        assert "unknown action" in error_of(lambda: c.step({"action": "jump"}))
        r = c.step({"action": "move_forward"})
        assert r.done is False and isinstance(r.reward, float)
        r = c.step({"action": 0})  # stop: the episode ends with its measures
        assert r.done is True and r.observation["terminated"] is True
        assert {"success", "spl", "soft_spl", "distance_to_goal"} <= set(r.observation["info"])
        assert twin.state()["step_count"] == 0
    local.close()


def test_sessions_past_max_sessions_are_refused_until_one_leaves(nav):
    first = [client(nav) for _ in range(3)]
    for c in first:
        c.reset(seed=0)
    with _ws(nav) as extra:  # the fourth: OpenEnv's capacity error, then the server closes it
        reply = json.loads(extra.recv(timeout=30))
        assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
    first[0].close()
    deadline = time.monotonic() + 30
    while True:  # the server frees the slot once it sees the close
        late = client(nav)
        try:
            assert late.reset(seed=1).done is False
            break
        except Exception:
            late.close()
            assert time.monotonic() < deadline
            time.sleep(0.2)
    for c in [*first[1:], late]:
        c.close()


def test_png_mode_sends_nav_frames_exactly_in_a_fraction_of_the_bytes():
    from pixelrl.serve import EnvSlots, GymEnvironment, make_spec

    local = gymnasium.make(NAV, width=32, height=32)
    expected, _ = local.reset(seed=3)
    sizes = {}
    for images in ("png", "lists"):
        spec = make_spec(NAV, {"width": 32, "height": 32}, images=images)
        env = GymEnvironment(spec, EnvSlots(1))
        obs = env.reset(seed=3)
        for key in ("rgb", "depth"):
            got = decode_image(getattr(obs, key))
            if images == "lists":  # nested lists carry no dtype
                got = got.astype(expected[key].dtype)
            assert got.dtype == expected[key].dtype and np.array_equal(got, expected[key])
        sizes[images] = len(json.dumps(obs.model_dump()))
        env.close()
    local.close()
    assert sizes["png"] * 3 < sizes["lists"]


# -- listening -----------------------------------------------------------------------------------
def test_loopback_only_unless_asked():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("no.such.")


def test_a_port_in_use_is_one_error_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        p = subprocess.run(
            [sys.executable, "-m", "pixelrl", "serve", CLICK, "--port", str(port)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last == f"pixelrl serve: error: cannot listen on 127.0.0.1:{port}: the port is in use"


def test_a_refused_message_says_why(desktop):
    """OpenEnv's clients show only a reply's message: it carries the model's first reasons."""
    with client(desktop) as c:
        c.reset(seed=2)
        said = error_of(lambda: c.step({"kind": "click", "x": "1", "y": 2}))
        assert "VALIDATION_ERROR" in said and "Invalid message: " in said, said
        assert "valid integer" in said.split("Invalid message: ")[1], said
