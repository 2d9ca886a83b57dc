"""Shared-memory observation buffers of the Ray vector env (pixelrl.envs.shared_obs): layout,
the two sides of a mapping, and the fallbacks that keep observations travelling through Ray."""

from __future__ import annotations

import errno
import os

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

from pixelrl.envs import shared_obs
from pixelrl.envs.shared_obs import SharedBuffers, leaves_of

SPACE = gym.spaces.Dict(
    {
        "instruction": gym.spaces.Text(64),
        "screenshot": gym.spaces.Box(0, 255, (60, 80, 3), np.uint8),
        "sensors": gym.spaces.Dict(
            {
                "depth": gym.spaces.Box(0, 10, (60, 80, 1), np.float32),
                "gps": gym.spaces.Box(-1, 1, (2,), np.float32),
            }
        ),
    }
)


def _obs(value: int) -> dict:
    return {
        "instruction": f"obs {value}",
        "screenshot": np.full((60, 80, 3), value, np.uint8),
        "sensors": {
            "depth": np.full((60, 80, 1), value / 10, np.float32),
            "gps": np.array([value, -value], np.float32),
        },
    }


def test_only_large_boxes_are_shared_and_laid_out_aligned():
    leaves = leaves_of(SPACE, count=8)
    # 8 x 14,400 B of screenshots and 8 x 19,200 B of depth; 8 x 8 B of gps stays in Ray's answer
    assert [leaf.keys for leaf in leaves] == [("screenshot",), ("sensors", "depth")]
    assert leaves[0].shape == (8, 60, 80, 3) and leaves[1].dtype == "<f4"
    assert leaves[1].offset >= leaves[0].nbytes and leaves[1].offset % 64 == 0
    assert [leaf.keys for leaf in leaves_of(SPACE, count=4)] == [("sensors", "depth")]
    assert leaves_of(SPACE, count=1) == []  # 14 KiB + 19 KiB: cheap enough through Ray
    assert leaves_of(SPACE["sensors"]["gps"], count=100_000)[0].keys == ()  # a Box observation


def test_worker_writes_driver_reads_both_copies_and_final_observations():
    driver = SharedBuffers.create(SPACE, 8)
    assert driver is not None
    worker = SharedBuffers.attach(driver.spec)
    driver.unlink()  # what the vector env does once the worker answered: the mapping lives on
    assert not os.path.exists(driver.spec.path)
    try:
        for copy in (0, 1):
            batch = worker.place(gym.vector.utils.create_empty_array(SPACE, 8), copy)
            items = [_obs(10 * copy + i) for i in range(8)]
            batch = gym.vector.utils.concatenate(SPACE, items, batch)
            answer = worker.strip(batch)
            assert answer["screenshot"] is None and answer["sensors"]["depth"] is None
            assert answer["sensors"]["gps"] is not None  # small: travels in the answer
            stripped_final = worker.put_final(_obs(99), copy, row=2)
            assert stripped_final["screenshot"] is None
            got = driver.place(answer, copy)
            expected = gym.vector.utils.concatenate(
                SPACE, items, gym.vector.utils.create_empty_array(SPACE, 8)
            )
            assert data_equivalence(got, expected, exact=True)
            final = driver.take_final(stripped_final, copy, row=2)
            assert data_equivalence(final, _obs(99), exact=True)
            worker.finals[copy][0][2] = 0  # the block is reused: what the driver took is a copy
            assert final["screenshot"].max() == 99
        # copy 1 was written after copy 0: copy 0's rows are still the first step's
        assert driver.views[0][0][3].max() == 3 and driver.views[1][0][3].max() == 13
    finally:
        driver.unlink()


def test_a_worker_on_another_machine_does_not_find_the_file():
    driver = SharedBuffers.create(SPACE, 8)
    driver.unlink()
    assert SharedBuffers.attach(driver.spec) is None
    assert SharedBuffers.attach(None) is None


def test_no_shm_or_no_room_means_no_sharing_and_no_file_left(monkeypatch, tmp_path):
    monkeypatch.setattr(shared_obs, "SHM_DIR", str(tmp_path / "missing"))
    assert SharedBuffers.create(SPACE, 8) is None
    assert SharedBuffers.create(gym.spaces.Discrete(3), 4) is None  # nothing large to share

    # a full tmpfs (Docker's 64 MB /dev/shm): posix_fallocate fails at start, not a SIGBUS later
    monkeypatch.setattr(shared_obs, "SHM_DIR", str(tmp_path))

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shared_obs.os, "posix_fallocate", full)
    assert SharedBuffers.create(SPACE, 8) is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this system")
def test_the_file_is_big_enough_for_two_copies_of_two_blocks():
    driver = SharedBuffers.create(SPACE, 8)
    try:
        last = driver.spec.leaves[-1]
        assert driver.spec.size >= last.offset + last.nbytes
        assert os.path.getsize(driver.spec.path) == 4 * driver.spec.size
    finally:
        driver.unlink()
