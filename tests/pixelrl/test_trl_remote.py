"""TRL environments whose envs live behind ``pixelrl serve`` (issue 55 item 4): a real server in
a subprocess on a free loopback port; the same seeds and tool calls give the same observations,
texts, refusals and rewards as the in-process environment."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("trl")
pytest.importorskip("openenv")

from pixelrl.trl_env import ToolError, environment_factory, train_dataset  # noqa: E402
from tests.pixelrl.test_serve import _start, _stop  # noqa: E402

CLICK = "pixelrl/Desktop-ClickButton-v0"
NAV = "pixelrl/PointNav-v0"
GUI_KW = {"screen_size": [320, 240]}
NAV_KW = {"width": 32, "height": 32}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    started = {}
    try:
        for env_id, kwargs in ((CLICK, GUI_KW), (NAV, NAV_KW)):
            folder = tmp_path_factory.mktemp(env_id.split("/")[1])
            started[env_id] = _start(folder, env_id, "--env-kwargs", json.dumps(kwargs))
        yield {env_id: url for env_id, (_, url) in started.items()}
    finally:
        for proc, _ in started.values():
            log = _stop(proc)
            assert "Traceback" not in log, log


def _play(env, seed: int, calls) -> list:
    """What the environment answers: the reset text, then each call's image, text or refusal,
    then the reward."""
    seen = [env.reset(seed=seed)]
    for name, kwargs in calls:
        try:
            image, text = getattr(env, name)(**kwargs)
            seen.append((np.asarray(image["image"]), text["text"]))
        except ToolError as e:
            seen.append(f"ToolError: {e}")
    seen.append(env.get_reward())
    return seen


def _gui_calls(info: dict) -> list:
    x0, y0, x1, y1 = info["target_bbox"]  # the local env's: the server keeps it
    return [
        ("click", {"x": 400, "y": 10}),  # off screen: the env refuses it
        ("hotkey", {"keys": "tab"}),
        ("click", {"x": (x0 + x1) // 2, "y": (y0 + y1) // 2}),
        ("done", {}),  # after the episode ended
    ]


NAV_CALLS = [("move_forward", {"steps": 3}), ("turn_left", {"times": 2}), ("stop", {}),
             ("move_forward", {"steps": 1})]  # fmt: skip


@pytest.mark.parametrize("env_id, kwargs", [(CLICK, GUI_KW), (NAV, NAV_KW)])
def test_a_served_env_answers_as_the_in_process_one(servers, env_id, kwargs):
    local = environment_factory(env_id, **kwargs)()
    remote = environment_factory(env_id, url=servers[env_id], **kwargs)()
    for seed in (2, 5):
        local.reset(seed=seed)
        calls = _gui_calls(local._info) if env_id == CLICK else NAV_CALLS
        here, there = _play(local, seed, calls), _play(remote, seed, calls)
        assert len(here) == len(there) == 6
        for a, b in zip(here, there):
            if isinstance(a, tuple):
                assert np.array_equal(a[0], b[0]) and a[1] == b[1]
            else:
                assert a == b
        assert any(isinstance(a, str) and a.startswith("ToolError") for a in here)
        assert here[-1] != 0 or env_id == NAV  # the click on the target scores
    remote._close()
    local._close()


def test_train_rows_from_a_served_env_are_the_same(servers):
    here = train_dataset(NAV, [3], **NAV_KW)
    there = train_dataset(NAV, [3], url=servers[NAV], **NAV_KW)
    assert np.array_equal(np.asarray(here[0]["image"]), np.asarray(there[0]["image"]))


def test_a_wrong_server_or_address_is_one_clear_error(servers):
    with pytest.raises(ValueError, match=f"serves '{NAV}', not '{CLICK}'"):
        environment_factory(CLICK, url=servers[NAV], **GUI_KW)().reset(seed=0)
    with pytest.raises(ValueError, match="url must be http://host:port"):
        environment_factory(NAV, url="localhost:1", **NAV_KW)()
    with pytest.raises(ConnectionError, match="no pixelrl serve at http://127.0.0.1:9"):
        environment_factory(NAV, url="http://127.0.0.1:9", **NAV_KW)().reset(seed=0)


def test_the_typed_openenv_client_plays_a_served_env(servers):
    """OpenEnv's way (issue 55 item 5): PixelrlEnv with the server's own action models; the
    observations are the local env's arrays, the rewards its rewards."""
    import gymnasium

    from pixelrl.envs.gui_action import Action
    from pixelrl.serve_client import GuiAction, NavAction, PixelrlEnv, PixelrlObservation

    local = gymnasium.make(CLICK, **GUI_KW)
    obs, info = local.reset(seed=4)
    x0, y0, x1, y1 = info["target_bbox"]
    with PixelrlEnv(base_url=servers[CLICK]).sync() as env:
        first = env.reset(seed=4)
        assert isinstance(first.observation, PixelrlObservation)
        assert np.array_equal(first.observation.fields["screenshot"], obs["screenshot"])
        assert first.observation.fields["instruction"] == obs["instruction"]
        text = GuiAction(action_text=f"pyautogui.moveTo({x0}, {y0})")
        expected = local.step(f"pyautogui.moveTo({x0}, {y0})")
        moved = env.step(text)
        assert np.array_equal(moved.observation.fields["screenshot"], expected[0]["screenshot"])
        click = env.step(GuiAction(kind="click", x=(x0 + x1) // 2, y=(y0 + y1) // 2))
        _, reward, _, _, info = local.step(Action.click((x0 + x1) // 2, (y0 + y1) // 2))
        assert (click.reward, click.done, click.observation.terminated) == (reward, True, True)
        assert click.observation.info["success"] is info["success"] is True
    local.close()
    with PixelrlEnv(base_url=servers[NAV]).sync() as env:
        env.reset(seed=1)
        step = env.step(NavAction(action=1))
        assert step.observation.fields["rgb"].shape == (32, 32, 3)
        assert step.observation.info["num_steps"] == 1


def test_the_manifest_names_the_client_and_models_openenv_reads():
    import importlib
    import importlib.resources

    import yaml

    manifest = yaml.safe_load((importlib.resources.files("pixelrl") / "openenv.yaml").read_text())
    template = {"spec_version", "name", "type", "runtime", "app", "port"}  # OpenEnv's template
    assert template <= set(manifest) and manifest["spec_version"] == 1
    client = importlib.import_module("pixelrl.serve_client")
    module, name = manifest["client"].split(":")
    assert getattr(importlib.import_module(module), name) is client.PixelrlEnv
    assert hasattr(client, manifest["action"]) and hasattr(client, manifest["observation"])
    module, name = manifest["app"].split(":")
    assert callable(getattr(importlib.import_module(module), name))


def test_openenv_validates_the_running_server_but_for_mcp(servers):
    """openenv-core's own runtime check: every criterion passes but the MCP endpoint, which the
    server drops on purpose (OpenEnv's /mcp sessions were never closed: pixelrl.serve)."""
    from openenv.cli._validation import validate_running_environment

    report = validate_running_environment(servers[CLICK], timeout_s=30)
    failed = [c["id"] for c in report["criteria"] if not c["passed"]]
    assert failed == ["mcp_endpoint"], report
    assert report["mode"] == "simulation"


def _openenv_pixelrl_installed() -> bool:
    import importlib.metadata

    try:
        importlib.metadata.distribution("openenv-pixelrl")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(
    not _openenv_pixelrl_installed(),
    reason="AutoEnv finds envs by installed distribution: pip install -e integrations/openenv-pixelrl",
)
def test_autoenv_finds_pixelrl_and_talks_to_a_running_serve(servers, tmp_path):
    """OpenEnv's AutoEnv, in a fresh process with its own temp folder (its discovery caches what
    it found in tempfile.gettempdir(), which a stale cache elsewhere would answer for)."""
    import os
    import subprocess
    import sys

    code = (
        "from openenv import AutoEnv\n"
        f"env = AutoEnv.from_env('pixelrl', base_url={servers[NAV]!r})\n"
        "print(type(env).__module__, type(env).__name__)\n"
        "with env.sync() as e:\n"
        "    r = e.reset(seed=1)\n"
        "    print(r.observation.fields['rgb'].shape, int(r.observation.info['num_steps']))\n"
        "info = AutoEnv.get_env_info('pixelrl')\n"
        "print(info['module'], info['action_class'], info['observation_class'])\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TMPDIR": str(tmp_path)})  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "pixelrl.serve_client PixelrlEnv",  # found through pixelrl.client, which re-exports it
        "(32, 32, 3) 0",
        "pixelrl.client GuiAction PixelrlObservation",
    ]
