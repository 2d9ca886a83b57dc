"""Collection overlapping learning (``train.async``, :mod:`pixelrl.rl.async_collect`): the env
worker gives the sync collector's trajectories, its failures reach the trainer as errors, and the
trainer runs both ways."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from toy_nav import ToySpec, register_toy_recipe

from pixelrl.rl.async_collect import AsyncCollector, CollectOptions, CollectorError
from pixelrl.rl.collect import RolloutCollector
from pixelrl.rl.storage import RolloutStorage
from pixelrl.train import Trainer, config_for

RECIPE = register_toy_recipe()
FIELDS = ("actions", "logprobs", "values", "rewards", "masks", "valid")


def _storage(spec: ToySpec, policy, num_steps: int = 24) -> RolloutStorage:
    envs = spec.make_envs()
    storage = RolloutStorage(
        num_steps,
        envs.num_envs,
        envs.single_observation_space,
        envs.single_action_space,
        policy.initial_state(envs.num_envs),
    )
    envs.close()
    return storage


def _snapshot(storage: RolloutStorage, rollout) -> dict:
    T = storage.step
    out = {name: getattr(storage, name)[:T].clone() for name in FIELDS}
    out.update({f"obs/{k}": v[: T + 1].clone() for k, v in storage.obs.items()})
    out.update({f"state0/{k}": v.clone() for k, v in storage.state0.items()})
    out["next_value"] = rollout.next_value.clone()
    out["episodes"] = rollout.episodes
    out["frames"] = rollout.frames
    return out


@pytest.mark.timeout(120)
def test_async_collector_gives_the_sync_trajectories_for_a_fixed_policy():
    """Same seed, same (non-learning, sampling) policy: every stored tensor and every episode
    report is identical, rollout after rollout, including across the double buffer's swaps."""
    spec, seed = ToySpec(num_envs=4, max_episode_steps=15), 7
    torch.manual_seed(0)
    envs = spec.make_envs()
    policy = spec.make_policy(envs.single_observation_space, envs.single_action_space)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the worker's (CollectOptions.threads)
    try:
        torch.manual_seed(seed)
        np.random.seed(seed)
        storage = _storage(spec, policy)
        sync = RolloutCollector(envs, policy, storage, seed=seed)
        expected = [_snapshot(storage, sync.collect()) for _ in range(3)]
    finally:
        torch.set_num_threads(threads)
        envs.close()
    assert sum(len(r["episodes"]) for r in expected) > 4  # episodes end inside the rollouts

    collector = AsyncCollector(spec, CollectOptions(seed=seed, threads=1))
    try:
        assert collector.envs.num_envs == 4
        collector.start(policy, _storage(spec, policy))
        got = []
        for _ in range(3):
            rollout = collector.collect()
            got.append(_snapshot(collector.storage, rollout))
        assert collector.storage is not got and len({id(s) for s in collector.storages}) == 2
    finally:
        collector.close()
    for k, (want, have) in enumerate(zip(expected, got)):
        assert want["episodes"] == have["episodes"], k
        assert want["frames"] == have["frames"], k
        for key in want:
            if isinstance(want[key], torch.Tensor):
                assert torch.equal(want[key], have[key]), (k, key)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("hard", [False, True], ids=["raises", "killed"])
def test_a_crash_in_the_env_worker_is_a_clear_error_not_a_hang(hard):
    spec = ToySpec(num_envs=2, crash_at=30, hard=hard)
    torch.manual_seed(0)
    envs = spec.make_envs()
    policy = spec.make_policy(envs.single_observation_space, envs.single_action_space)
    envs.close()
    collector = AsyncCollector(spec, CollectOptions(seed=0))
    collector.start(policy, _storage(spec, policy, num_steps=8))
    tic = time.monotonic()
    with pytest.raises(CollectorError) as error:
        for _ in range(10):  # 30 env steps = 2 envs x 15 steps: the second rollout fails
            collector.collect()
    assert time.monotonic() - tic < 30
    message = str(error.value)
    if hard:
        assert "env worker process died (exit code -9)" in message
    else:
        assert "RuntimeError: toy env crashed on purpose at step 30" in message
        assert "worker traceback" in message and "in step" in message
    assert not collector._process.is_alive()
    collector.close()  # twice is fine


@pytest.mark.timeout(60)
def test_an_error_building_the_envs_in_the_worker_keeps_its_type():
    """A wrong env option is the recipe's own error (the CLI's one-line user error), as in
    process, with the worker's traceback in a note."""
    with pytest.raises(TypeError, match="widht") as error:
        AsyncCollector(ToySpec(num_envs=2, widht=3), CollectOptions(seed=0))
    assert any("env worker process" in note for note in error.value.__notes__)


@pytest.mark.timeout(200)
def test_trainer_runs_async_and_sync_and_the_lag_shows_in_behaviour_kl(tmp_path):
    """train.async=true trains the toy recipe through the env worker; train.async=false is the
    in-process path, whose rollouts come from the very weights that then learn from them. (The
    imitation teacher inside the worker: tests/embodied/test_embodied_train.py.)"""
    rows = {}
    for flag in ("true", "false"):
        cfg = config_for(
            RECIPE,
            [
                f"train.output_dir={tmp_path / flag}",
                f"train.async={flag}",
                "train.total_frames=768",  # 6 updates of 4 envs x 32 steps
                "train.final_eval=false",
            ],
        )
        trainer = Trainer(cfg)
        assert trainer.async_collect == (flag == "true")
        result = trainer.run()
        assert result["train"]["frames"] == 768 and result["train"]["update"] == 6
        assert (tmp_path / flag / "checkpoints" / "latest.pt").is_file()
        rows[flag] = [r["loss/behaviour_kl"] for r in trainer.history]
        if flag == "true":
            assert not trainer.collector._process.is_alive()  # closed with the run
    assert max(rows["false"]) < 1e-5
    assert max(rows["true"][1:]) > 10 * max(max(rows["false"]), 1e-7)  # one update behind
