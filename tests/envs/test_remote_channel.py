"""The Ray vector env's socket to its workers on this machine (pixelrl.envs.worker_channel): the
same batches as gymnasium's SyncVectorEnv whichever way the answers travel (socket and shared
memory, socket alone, Ray alone as from another machine), a refused action that leaves every
channel in step, and the worker's side of the socket in this process."""

from __future__ import annotations

import os
import socket
import sys
import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

ray = pytest.importorskip("ray")

import test_remote  # noqa: E402
from test_remote import Faulty, remote_and_local  # noqa: E402

from pixelrl.envs import shared_obs, worker_channel  # noqa: E402
from pixelrl.envs.gui_action import ActionError  # noqa: E402
from pixelrl.envs.remote import EnvWorker, RayVectorEnv  # noqa: E402

MIXED = "pixelrl/Desktop-Mixed-v0"  # a random task family an episode: varied infos to carry
KWARGS = {"screen_size": (320, 240), "max_steps": 4}


class Counter(Faulty):
    """Faulty (counts its steps) that refuses action 3: the agent's mistake, raised before it
    counts."""

    def step(self, action):
        if action == 3:
            raise ActionError("action 3 is refused")
        return super().step(action)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    for module in (sys.modules[__name__], test_remote):  # the actors cannot import them
        ray.cloudpickle.register_pickle_by_value(module)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("transport", ["socket+shm", "socket", "ray"])
def test_every_transport_gives_the_sync_vector_envs_batches(transport, monkeypatch, tmp_path):
    if transport != "socket+shm":  # observations pickled with the answer
        monkeypatch.setattr(shared_obs, "SHM_DIR", str(tmp_path / "no-shm"))
    if transport == "ray":  # as a worker on another machine: every call through Ray
        monkeypatch.setattr(worker_channel, "SOCKET_DIR", str(tmp_path / "no-socket"))
    remote, local = remote_and_local(MIXED, KWARGS, 2, 3)
    try:
        listeners = [slot.listener.directory for slot in remote.slots if slot.listener]
        assert data_equivalence(remote.reset(seed=11), local.reset(seed=11), exact=True)
        assert [slot.channel is not None for slot in remote.slots] == [transport != "ray"] * 2
        assert [slot.shared is not None for slot in remote.slots] == [transport == "socket+shm"] * 2
        assert not any(os.path.exists(path) for path in listeners)  # nothing left in /tmp
        single, ended = local.single_action_space, 0
        single.seed(5)
        for _ in range(10):  # Mixed's actions from the single space (the batched one is a Dict)
            actions = [single.sample() for _ in range(6)]
            batch = gym.vector.utils.concatenate(
                single, actions, gym.vector.utils.create_empty_array(single, 6)
            )
            a, b = remote.step(batch), local.step(batch)
            assert data_equivalence(a, b, exact=True)  # final_obs and final_info included
            ended += int((a[2] | a[3]).sum())
        assert ended >= 6 and remote.stats()["faults"] == 0
    finally:
        remote.close()
        local.close()


def test_a_refused_action_is_raised_and_every_channel_stays_in_step():
    envs = RayVectorEnv(Counter, num_workers=2, per_worker=1, step_timeout=30)
    try:
        envs.reset(seed=0)
        assert all(slot.channel is not None for slot in envs.slots)
        with pytest.raises(ActionError, match="action 3 is refused"):
            envs.step(np.array([3, 0]))  # worker 1 stepped: its answer is read, not left behind
        obs, rewards, *_ = envs.step(np.array([0, 0]))
        assert list(obs[:, 0]) == [1.0, 2.0] and list(rewards) == [1.0, 1.0]
        assert envs.faults == 0
    finally:
        envs.close()


def test_the_workers_side_serves_reset_and_step_only():
    worker = EnvWorker(Counter, 1)
    assert worker.open_channel("/nonexistent/pixelrl-socket") is False  # another machine
    ours, theirs = socket.socketpair()
    served = threading.Thread(target=worker._serve, args=(worker_channel.Channel(theirs),))
    served.start()
    driver = worker_channel.Channel(ours)
    driver.send(("reset", ([0], None, [True])))
    status, [(obs, info)] = driver.recv(timeout=30)
    assert status == "ok" and obs[0] == 0.0
    driver.send(("close", ()))  # not served: an error answer, and the channel goes on
    status, err = driver.recv(timeout=30)
    assert status == "error" and "not 'close'" in str(err)
    driver.send(("step", (np.array([0]), True)))
    status, ((obs, _), rewards, *_) = driver.recv(timeout=30)
    assert status == "ok" and obs[0, 0] == 1.0 and list(rewards) == [1.0]
    driver.close()  # the worker's loop ends with its driver
    served.join(timeout=30)
    assert not served.is_alive()
    worker.close()
