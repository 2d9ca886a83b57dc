"""A Ray env worker's step answer, batched for the trip (issue 57 item 4): its infos packed into
one buffer and lists (pixelrl.envs.packed_infos) reach the driver as gymnasium's SyncVectorEnv
builds them, and the worker answers its channel on the thread its envs live on."""

from __future__ import annotations

import contextlib
import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import VectorEnv

from pixelrl.envs import packed_infos, worker_channel
from pixelrl.envs.remote import EnvWorker


class Layout:
    """``VectorEnv._add_info`` on a block of ``num_envs`` envs (what a worker builds)."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def env_info(rng: np.random.Generator, row: int) -> dict:
    """A varied info: numbers of several dtypes, text, lists, None, arrays, nested and empty
    dicts, and keys that only some envs have."""
    info: dict = {"success": bool(rng.integers(2)), "steps": int(rng.integers(100))}
    info["bbox"] = [row, 2, 3, 4]  # a list of the same length in every row: still one item each
    if rng.random() < 0.7:
        info["score"] = float(rng.random())
    if rng.random() < 0.5:
        info["family"] = ["click", "type", "drag"][int(rng.integers(3))]
    if rng.random() < 0.5:  # a list in a row must stay one item, not become a row of items
        info["a11y"] = [{"id": f"e{row}", "bbox": [1, 2, 3, 4]}] * int(rng.integers(1, 3))
    if rng.random() < 0.4:
        info["target"] = None
    if rng.random() < 0.4:
        info["pos"] = rng.random(3).astype(np.float32)  # an array: (n, 3) float32
    if rng.random() < 0.4:
        info["reward_f32"] = np.float32(rng.random())
    if rng.random() < 0.5:
        info["task"] = {"menu": "Format", "value": int(rng.integers(9))}
        if rng.random() < 0.5:
            info["task"]["deep"] = {"ok": True}
    if rng.random() < 0.3:
        info["extra"] = {}
    return info


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("blocks", [(1,), (3, 2), (2, 1, 4)])
def test_merged_packed_blocks_are_what_add_info_builds_env_by_env(seed, blocks):
    rng = np.random.default_rng(seed)
    n = sum(blocks)
    infos = [env_info(rng, row) for row in range(n)]
    expected: dict = {}
    whole = Layout(n)
    for row, info in enumerate(infos):
        expected = whole._add_info(expected, info, row)
    parts, first = [], 0
    for count in blocks:  # each worker's block, as the worker builds and packs it
        layout, block = Layout(count), {}
        for j in range(count):
            block = layout._add_info(block, infos[first + j], j)
        parts.append((first, packed_infos.pack(block)))
        first += count
    merged = packed_infos.merge(parts, n)
    assert data_equivalence(merged, expected, exact=True)
    assert list(merged) == list(expected)  # the same keys in the same order
    assert all(value.flags.writeable for value in _leaves(merged))


def test_a_block_unpacks_to_itself_and_the_buffer_holds_every_number():
    layout, block = Layout(3), {}
    for j in range(3):
        block = layout._add_info(block, {"x": j, "y": 0.5 * j, "name": f"e{j}"}, j)
    tree, buffer = packed_infos.pack(block)
    assert len(buffer) == 3 * 8 + 3 * 8 + 3 * 3  # x, y: int64 and float64; the masks: bool
    assert tree["name"] == ["e0", "e1", "e2"]  # objects travel as a list of themselves
    assert data_equivalence(packed_infos.unpack((tree, buffer), 3), block, exact=True)


def _leaves(tree: dict):
    for value in tree.values():
        yield from _leaves(value) if isinstance(value, dict) else [value]


class ThreadBound(gym.Env):
    """Records the thread of every call: an env bound to the thread that built it (a GL
    context) must see only that one."""

    observation_space = gym.spaces.Box(0, 1000, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.threads = {threading.get_ident()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.threads.add(threading.get_ident())
        return np.zeros(1, np.float32), {"where": "reset"}

    def step(self, action):
        self.threads.add(threading.get_ident())
        return np.ones(1, np.float32), 1.0, bool(action), False, {"where": "step"}


@contextlib.contextmanager
def served(count: int):
    """A worker of ``count`` ThreadBound envs in this process, and the driver's end of its
    channel (Ray's calls are the worker's methods called from this thread)."""
    worker = EnvWorker(ThreadBound, count)
    listener = worker_channel.Listener.create()
    assert listener is not None and worker.open_channel(listener.path)
    driver = listener.accept(timeout=30)
    try:
        yield worker, driver
    finally:
        driver.close()
        worker.close()


def test_the_worker_answers_its_channel_on_its_env_thread_and_ray_calls_still_run():
    with served(2) as (worker, driver):
        driver.send(("reset", ([0, 1], None, [True, True])))
        assert driver.recv(timeout=30)[0] == "ok"
        for action in ([0, 1], [1, 0]):
            driver.send(("step", (np.array(action), True)))
            status, (_, rewards, terminated, _, infos) = driver.recv(timeout=30)
            assert status == "ok" and list(terminated) == [bool(a) for a in action]
            infos = packed_infos.unpack(infos, 2)
            assert list(infos["_final_info"]) == [bool(a) for a in action]
            # a call through Ray (from this thread) between two channel requests
            assert worker.call("threads", (), {}) == [env.threads for env in worker.envs]
        threads = set().union(*(env.threads for env in worker.envs))
        assert len(threads) == 1 and threading.get_ident() not in threads


def test_a_request_the_worker_cannot_read_closes_its_channel_not_its_env_thread():
    with served(1) as (worker, driver):
        driver.sock.sendall(b"\0\0\0\0\0\0\0\5" + b"junk!")  # a length, then no pickle
        with pytest.raises(EOFError):  # the worker hung up on it
            driver.recv(timeout=30)
        assert worker.call("threads", (), {}) == [worker.envs[0].threads]  # calls through Ray
