"""The Ray vector env on a real local Ray cluster (one for the module, 2 CPUs): same batches as
gymnasium's SyncVectorEnv, and the faults of pixelrl.envs.remote (killed actor, hung step,
a worker failing in a row)."""

from __future__ import annotations

import os
import signal
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

ray = pytest.importorskip("ray")

from pixelrl.envs import shared_obs  # noqa: E402
from pixelrl.envs.remote import EnvWorkerError, RayVectorEnv, make_registered  # noqa: E402

DESKTOP = "pixelrl/Desktop-ClickButton-v0"
DESKTOP_KWARGS = {"screen_size": (320, 240), "max_steps": 3}  # short episodes: autoresets happen


class Faulty(gym.Env):
    """Counts its steps; action 1 hangs, action 2 raises (what a stuck or crashing browser does)."""

    observation_space = gym.spaces.Box(0, 1000, (1,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if action == 1:
            time.sleep(120)
        if action == 2:
            raise RuntimeError("the browser crashed")
        self.steps += 1
        return np.array([self.steps], np.float32), 1.0, False, False, {}


class Tagged(Faulty):
    """Faulty whose observations start at its tag: which factory built an env shows."""

    def __init__(self, tag: int):
        self.tag = tag

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs + self.tag, info

    def step(self, action):
        obs, *rest = super().step(action)
        return (obs + self.tag, *rest)


class Big(Faulty):
    """Faulty with a 128 KiB observation: large enough to travel through shared memory."""

    observation_space = gym.spaces.Box(0, 255, (128 * 1024,), np.uint8)

    def reset(self, *, seed=None, options=None):
        _, info = super().reset(seed=seed, options=options)
        return np.zeros(128 * 1024, np.uint8), info

    def step(self, action):
        obs, *rest = super().step(action)
        return (np.full(128 * 1024, obs[0], np.uint8), *rest)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # The actors are fresh processes that cannot import this test module: send Faulty by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def remote_and_local(
    env_id: str, kwargs: dict, workers: int, per_worker: int
) -> tuple[RayVectorEnv, gym.vector.SyncVectorEnv]:
    """The same envs in Ray actors and in this process, as the trainers run them."""
    remote = RayVectorEnv(env_id, num_workers=workers, per_worker=per_worker, kwargs=kwargs)
    local = gym.vector.SyncVectorEnv(
        [lambda: make_registered(env_id, kwargs) for _ in range(workers * per_worker)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    return remote, local


@pytest.mark.parametrize("shared", [True, False], ids=["shared-memory", "object-store"])
def test_same_batches_as_sync_vector_env_for_the_same_seeds(shared, monkeypatch, tmp_path):
    if not shared:  # as for a worker on another machine: every observation through Ray
        monkeypatch.setattr(shared_obs, "SHM_DIR", str(tmp_path / "no-shm"))
    remote, local = remote_and_local(DESKTOP, DESKTOP_KWARGS, 2, 2)
    try:
        assert remote.num_envs == 4
        assert remote.single_observation_space == local.single_observation_space
        assert remote.action_space == local.action_space
        assert remote.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
        assert all((slot.shared is not None) == shared for slot in remote.slots)
        a, b = remote.reset(seed=7), local.reset(seed=7)
        # each worker has mapped its file: no name is left behind in /dev/shm
        assert not any(
            slot.shared and os.path.exists(slot.shared.spec.path) for slot in remote.slots
        )
        assert remote.observation_space.contains(a[0])
        assert data_equivalence(a, b, exact=True)
        remote.action_space.seed(3)
        ended = 0
        for _ in range(4):  # max_steps=3: every env ends and is reset in step 3
            actions = remote.action_space.sample()
            a, b = remote.step(actions), local.step(actions)
            assert remote.observation_space.contains(a[0])
            assert data_equivalence(a, b, exact=True)  # final_obs and final_info included
            assert a[0]["screenshot"].flags.writeable  # a batch of its own, as SyncVectorEnv's
            ended += int((a[2] | a[3]).sum())
        assert ended >= 4
        assert remote.stats()["faults"] == 0
        assert remote.get_attr("screen_size") == local.get_attr("screen_size") == ((320, 240),) * 4
    finally:
        remote.close()
        local.close()


def _pid(env: RayVectorEnv, worker: int) -> int:
    return ray.get(env.slots[worker].actor.pid.remote())


@pytest.mark.parametrize("env_cls", [Faulty, Big])
def test_a_killed_actor_is_replaced_and_its_episode_truncated_with_env_fault(env_cls):
    env = RayVectorEnv(env_cls, num_workers=2, per_worker=1, step_timeout=30)
    try:
        assert (env.slots[0].shared is not None) == (env_cls is Big)
        env.reset(seed=0)
        obs, *_ = env.step(np.array([0, 0]))
        before = obs.copy()
        os.kill(_pid(env, 0), signal.SIGKILL)
        obs, rewards, terminated, truncated, info = env.step(np.array([0, 0]))
        assert list(truncated) == [True, False] and not terminated.any()
        assert info["env_fault"][0] and list(info["_env_fault"]) == [True, False]
        assert info["env_fault_reason"][0].startswith("died")
        assert rewards[0] == 0.0 and rewards[1] == 1.0
        # the episode ends on its last real observation; the next one starts fresh, not stale
        assert np.array_equal(info["final_obs"][0], before[0])
        assert obs[0, 0] == 0.0 and obs[1, 0] == 2.0
        assert env.stats() == {"faults": 1, "restarts": 1, "removed_workers": 0, "num_envs": 2}
        obs, *_ = env.step(np.array([0, 0]))  # the replacement steps on
        assert list(obs[:, 0]) == [1.0, 3.0] and list(obs[:, -1]) == [1.0, 3.0]
    finally:
        env.close()


def test_a_hung_step_times_out_and_the_worker_is_replaced():
    env = RayVectorEnv(Faulty, num_workers=2, per_worker=1, step_timeout=2)
    try:
        env.reset(seed=0)
        start = time.monotonic()
        obs, _, _, truncated, info = env.step(np.array([1, 0]))  # env 0 sleeps 120 s
        assert time.monotonic() - start < 60
        assert list(truncated) == [True, False]
        assert info["env_fault_reason"][0].startswith("timeout")
        assert list(obs[:, 0]) == [0.0, 1.0]
        assert env.fault_reasons == {"timeout": 1}
    finally:
        env.close()


def test_a_worker_failing_in_a_row_is_taken_out_then_the_vector_shrinks():
    env = RayVectorEnv(Faulty, num_workers=2, per_worker=1, max_failures=2)
    try:
        env.reset(seed=0)
        _, _, _, truncated, info = env.step(np.array([2, 0]))
        assert truncated[0] and "env_removed" not in info and env.num_envs == 2
        _, _, _, truncated, info = env.step(np.array([2, 0]))
        assert truncated[0] and info["env_removed"][0]
        assert info["env_fault_reason"][0] == "error: RuntimeError: the browser crashed"
        assert env.num_envs == 1 and env.action_space.shape == (1,)
        obs, rewards, *_ = env.step(np.array([0]))
        assert list(obs[:, 0]) == [3.0] and list(rewards) == [1.0]
        assert env.stats() == {"faults": 2, "restarts": 1, "removed_workers": 1, "num_envs": 1}
    finally:
        env.close()


def test_below_min_envs_is_a_clear_error():
    env = RayVectorEnv(Faulty, num_workers=2, per_worker=1, max_failures=1, min_envs=2)
    try:
        env.reset(seed=0)
        with pytest.raises(EnvWorkerError, match=r"only 1 envs left, fewer than min_envs=2"):
            env.step(np.array([2, 0]))
    finally:
        env.close()


def test_the_collector_drops_the_lost_step_of_a_killed_worker():
    from pixelrl.rl.collect import AutoresetStepper

    env = RayVectorEnv(Faulty, num_workers=2, per_worker=1, step_timeout=30)
    try:
        stepper = AutoresetStepper(env, ["obs"])
        stepper.reset(seed=0)
        os.kill(_pid(env, 1), signal.SIGKILL)
        step = stepper.step(np.array([0, 0]))
        assert list(step.fault) == [False, True] and list(step.valid) == [True, False]
        assert step.final_info["env_fault"][1]  # the episode's stats say why it ended
    finally:
        env.close()


def test_ppo_trains_with_envs_in_ray_actors(tmp_path):
    import toy_nav

    from pixelrl.train import Trainer, config_for

    ray.cloudpickle.register_pickle_by_value(toy_nav)  # the actors cannot import test helpers
    overrides = ["envs.backend=ray", "envs.per_worker=2", "env.num_envs=4"]
    overrides += ["train.total_frames=256", "train.eval_episodes=4", f"train.output_dir={tmp_path}"]
    trainer = Trainer(config_for(toy_nav.register_toy_recipe(), overrides))
    assert type(trainer.envs).__name__ == "RayVectorEnv" and len(trainer.envs.slots) == 2
    result = trainer.run()
    assert result["train"]["frames"] == 256 and result["train"]["envs/faults"] == 0
    assert result["eval"]["episodes"] == 4


def test_one_factory_per_env_and_a_replacement_builds_its_own():
    import functools

    fns = [functools.partial(Tagged, tag) for tag in (10, 20, 30, 40)]
    with pytest.raises(ValueError, match="3 env factories for 2 workers x 2 envs"):
        RayVectorEnv(fns[:3], num_workers=2, per_worker=2)
    env = RayVectorEnv(fns, num_workers=2, per_worker=2, step_timeout=30)
    try:
        obs, _ = env.reset(seed=0)
        assert list(obs[:, 0]) == [10, 20, 30, 40]
        os.kill(_pid(env, 1), signal.SIGKILL)
        obs, _, _, truncated, _ = env.step(np.zeros(4, np.int64))
        assert list(truncated) == [False, False, True, True]
        assert list(obs[:, 0]) == [11, 21, 30, 40]  # the fresh actor built envs 30 and 40 again
    finally:
        env.close()


def _episodes(root):
    from pixelrl.envs.recording import EpisodeDataset

    data = EpisodeDataset(root)
    return {
        e.seed: (e.length, e.total_reward, e.success, list(data.steps(i)["action"]))
        for i, e in data.episodes.items()
    }


def test_pixelrl_record_in_ray_workers_writes_the_in_process_dataset(tmp_path, capsys):
    from pixelrl.cli import main

    common = ["record", "--env", "pixelrl/Desktop-FillForm-v0", "--agent", "expert"]
    common += ["--episodes", "5", "--seed", "10"]
    assert main([*common, "--out", str(tmp_path / "here")]) == 0
    assert main([*common, "--out", str(tmp_path / "ray"), "--ray-workers", "2"]) == 0
    here, there = _episodes(tmp_path / "here"), _episodes(tmp_path / "ray")
    assert sorted(there) == list(range(10, 15)) and there == here
    # --resume completes a cut run: the seeds it lacks, none twice
    more = [*common[:-4], "--episodes", "7", "--seed", "10", "--resume", "--ray-workers", "2"]
    assert main([*more, "--out", str(tmp_path / "ray")]) == 0
    assert sorted(_episodes(tmp_path / "ray")) == list(range(10, 17))
    # an agent that plays in this process is a one-line error
    code = main(["record", "--env", DESKTOP, "--agent", "human", "--episodes", "1",
                 "--out", str(tmp_path / "h"), "--ray-workers", "2"])  # fmt: skip
    assert (
        code == 2 and "--ray-workers records the expert or random agent" in capsys.readouterr().err
    )
