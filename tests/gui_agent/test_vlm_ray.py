"""Multi-turn GRPO with its groups played in Ray actors (issue 24): the same episodes as in this
process, a refused action played as ``wait``, a failed worker's episode left out of its group."""

from __future__ import annotations

import csv
import os
import signal

import pytest
import torch

from pixelrl.config import Config
from pixelrl.envs.gui_action import Action, ActionError
from pixelrl.gui_agent.train_vlm import DEFAULTS
from pixelrl.gui_agent.vlm_episodes import group_envs, play_group
from pixelrl.rl.grpo import GRPOConfig

ray = pytest.importorskip("ray", reason="the Ray backend is the distributed extra")

ENV = {**DEFAULTS["env"], "id": "pixelrl/Desktop-FillForm-v0", "max_steps": 3}
CFG = Config({**DEFAULTS, "env": ENV})
GCFG = GRPOConfig(max_new_tokens=8)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def policy():
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    torch.manual_seed(0)
    return load_vlm("tiny-qwen2_vl", GUIActionCodec(), seed=0)


def _summary(episodes):
    return [([(t.completion.text, t.reward) for t in ep.turns], ep.success) for ep in episodes]


def test_a_group_in_ray_actors_plays_the_episodes_of_this_process(policy):
    torch.manual_seed(5)
    here = play_group(policy, CFG, seed=4, group_size=2, gcfg=GCFG)
    envs = group_envs(CFG, ENV["id"], 2)
    try:
        torch.manual_seed(5)
        there = play_group(policy, CFG, seed=4, group_size=2, gcfg=GCFG, envs=envs)
        assert envs.faults == 0
    finally:
        envs.close()
    assert _summary(there) == _summary(here) and len(there) == 2
    assert there[0].turns[0].key == there[1].turns[0].key  # one first screen: GiGPO's anchor


def test_a_refused_action_is_a_wait_or_the_callers_error():
    off_screen = Action.click(5000, 10)  # the env refuses it: the agent's mistake, not a fault
    envs = group_envs(CFG, ENV["id"], 2)
    try:
        envs.reset(seed=0)
        _, _, _, _, infos = envs.step([off_screen, Action.wait()])
        assert "action_error" in infos and infos["_action_error"].tolist() == [True, False]
        assert envs.faults == 0
    finally:
        envs.close()
    from pixelrl.envs.remote import RayVectorEnv

    plain = RayVectorEnv(ENV["id"], 1, 1, kwargs={"screen_size": (320, 240)})
    try:
        plain.reset(seed=0)
        with pytest.raises(ActionError, match="5000"):
            plain.step([off_screen])
        assert plain.faults == 0  # raised to the caller, as SyncVectorEnv would; no restart
    finally:
        plain.close()


def test_a_failed_worker_leaves_its_episode_out_of_the_group(policy):
    envs = group_envs(CFG, ENV["id"], 2)
    generate, calls = policy.generate, []

    def generate_then_kill(*args, **kwargs):  # worker 1 dies while the model thinks
        calls.append(1)
        if len(calls) == 2:
            os.kill(ray.get(envs.slots[1].actor.pid.remote()), signal.SIGKILL)
        return generate(*args, **kwargs)

    policy.generate = generate_then_kill
    try:
        episodes = play_group(policy, CFG, seed=4, group_size=2, gcfg=GCFG, envs=envs)
        if len(calls) < 2:
            pytest.skip("the episodes ended before the second turn")
        assert envs.faults == 1 and len(episodes) == 1
    finally:
        policy.generate = generate
        envs.close()


def test_multiturn_recipe_with_envs_in_ray_actors(tmp_path):
    from pixelrl.config import ConfigError
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    overrides = [
        "torch_threads=0", "env.max_steps=2", "env.max_fields=2", "grpo.steps=1",
        "grpo.num_samples=2", "grpo.seeds_per_step=1", "grpo.max_new_tokens=8",
        "eval.episodes=2", "eval.interval=0", "train.progress=false",
        "envs.backend=ray", "envs.per_worker=1",
    ]  # fmt: skip
    cfg = config_for(
        get_recipe("gui/multiturn-grpo").config, [*overrides, f"train.output_dir={tmp_path}"]
    )
    cfg.recipe = "gui/multiturn-grpo"
    train(cfg)
    with open(tmp_path / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]["env_faults"] == "0"
    assert 1 <= int(rows[0]["steps"]) <= 4

    bad = config_for(
        get_recipe("gui/multiturn-grpo").config,
        [*overrides, "envs.per_worker=3", f"train.output_dir={tmp_path / 'bad'}"],
    )
    bad.recipe = "gui/multiturn-grpo"
    with pytest.raises(ConfigError, match="per_worker=3 must divide grpo.num_samples=2"):
        train(bad)


def _by_seed(root):
    from pixelrl.envs.recording import EpisodeDataset

    data = EpisodeDataset(root)
    return {
        e.seed: (e.length, e.total_reward, e.success, list(data.steps(i)["action"]))
        for i, e in data.episodes.items()
    }


def test_sft_recording_through_ray_writes_the_episodes_of_this_process(tmp_path):
    from pixelrl.gui_agent.vlm_demos import record_expert_episodes

    base = {**DEFAULTS, "env": {**ENV, "families": ["fill-form"], "max_fields": 2, "max_steps": 0}}
    base["data"] = {**DEFAULTS["data"], "episodes": 5}
    base["train"] = {**DEFAULTS["train"], "progress": False}
    here = record_expert_episodes(Config(base), tmp_path / "sync")
    ray_cfg = {**base, "envs": {**DEFAULTS["envs"], "backend": "ray", "num_workers": 2}}
    there = record_expert_episodes(Config(ray_cfg), tmp_path / "ray")
    a, b = _by_seed(here / "fill-form"), _by_seed(there / "fill-form")
    assert len(a) == 5 and a == b  # the same seeds, steps, actions and rewards, one dataset
    assert all(success for _, _, success, _ in b.values())


def test_sft_recording_redoes_an_episode_a_fault_cut(tmp_path, monkeypatch):
    from pixelrl.envs import remote
    from pixelrl.gui_agent.vlm_demos import record_expert_episodes

    kills = []
    step = remote.RayVectorEnv.step

    def step_then_kill(self, actions):  # worker 0 dies once, in its first episode
        if not kills:
            kills.append(os.kill(ray.get(self.slots[0].actor.pid.remote()), signal.SIGKILL))
        return step(self, actions)

    monkeypatch.setattr(remote.RayVectorEnv, "step", step_then_kill)
    cfg = {**DEFAULTS, "env": {**ENV, "families": ["fill-form"], "max_fields": 2, "max_steps": 0}}
    cfg["data"] = {**DEFAULTS["data"], "episodes": 3}
    cfg["train"] = {**DEFAULTS["train"], "progress": False}
    cfg["envs"] = {**DEFAULTS["envs"], "backend": "ray", "num_workers": 2}
    root = record_expert_episodes(Config(cfg), tmp_path / "ray")
    got = _by_seed(root / "fill-form")
    assert len(kills) == 1 and len(got) == 3  # every seed once, none cut short
    assert all(success for _, _, success, _ in got.values())
