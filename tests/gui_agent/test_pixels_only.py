"""Pixels only (issue 41, item 3): the pointer policy's observation path sees the screenshot and
the instruction, never the accessibility tree or the DOM, which stay privileged (rewards,
oracles, benchmark ground truth).

Shown by construction: the env's privileged parts (``info["a11y"]``, ``obs["a11y_text"]``,
``info["dom_elements"]``) are replaced by poison that raises when touched, and the training
wrapper and the policy still run; the policy's observation holds the image and the hashed
instruction only. The screen reader takes an image and nothing else.
"""

from __future__ import annotations

import inspect

import gymnasium as gym
import numpy as np
import pytest
import torch

import pixelrl.envs  # noqa: F401
from pixelrl.gui_agent.pointer_env import PointerEnv, PointerSpec
from pixelrl.gui_agent.pointer_policy import PointerPolicy


class Touched(AssertionError):
    pass


class Poison:
    """Raises on any use: iteration, indexing, length, truth, comparison, attributes, text."""

    def _fail(self, *args, **kwargs):
        raise Touched("privileged data (a11y tree / DOM) reached the observation path")

    __iter__ = __getitem__ = __len__ = __bool__ = __contains__ = __eq__ = __str__ = _fail
    __hash__ = __format__ = __getattr__ = __array__ = __float__ = __int__ = _fail


class Poisoned(gym.Wrapper):
    """Replaces every privileged part of observations and infos by :class:`Poison`."""

    def _poison(self, obs, info):
        obs = {**obs, "a11y_text": Poison()}
        info = {**info, "a11y": Poison(), "dom_elements": Poison(), "target_bbox": Poison()}
        return obs, info

    def reset(self, **kwargs):
        return self._poison(*self.env.reset(**kwargs))

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs, info = self._poison(obs, info)
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("reader", [False, True], ids=["pixels", "pixels+reader"])
def test_the_pointer_policy_sees_pixels_and_the_instruction_only(reader):
    """With ``reader`` the reader's maps come from the screenshot and the instruction too."""
    if reader:
        pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    keys = {"image", "instruction", "read"} if reader else {"image", "instruction"}
    spec = PointerSpec(image_size=(160, 120), texts=("hello",), reader=reader)
    raw = gym.make("pixelrl/Desktop-ClickButton-v0", screen_size=(320, 240), a11y_text=True)
    env = PointerEnv(Poisoned(raw), spec)
    assert set(env.observation_space.spaces) == keys
    policy = PointerPolicy.from_spaces(env.observation_space, env.action_space, spec)
    obs, info = env.reset(seed=0)
    for _ in range(3):
        assert set(obs) == keys
        assert obs["image"].dtype == np.uint8 and obs["instruction"].dtype == np.int64
        assert not reader or obs["read"].max() > 0  # it read the button's label
        batch = {k: torch.as_tensor(v)[None] for k, v in obs.items()}
        with torch.no_grad():
            step = policy.act(batch, None)
        obs, _, terminated, truncated, info = env.step(step.actions[0].numpy())
        if terminated or truncated:
            obs, info = env.reset()
    env.close()
    # the poison is live: touching it fails (so the loop above never did)
    try:
        len(info["a11y"])
    except Touched:
        pass
    else:
        raise AssertionError("the poison does not bite")


def test_the_screen_reader_takes_an_image_and_nothing_else():
    from pixelrl.vision.reader import ScreenReader

    assert list(inspect.signature(ScreenReader.read).parameters) == ["self", "image"]
