"""Grounding GRPO's rewards (``gui/grounding-grpo``, ``grpo.reward``) as named, weighted terms
(:mod:`pixelrl.rl.rewards`) over :mod:`pixelrl.vision.rewards`' functions.

Each reward is called ``reward(texts, boxes, screen_size, sigma_scale)`` and returns one value a
text. ``click_gaussian`` is three terms; the papers' composites (UI-R1, GUI-R1, SE-GUI, GUI-G²)
are one term each, their formulas in :mod:`pixelrl.vision.rewards`.
"""

from __future__ import annotations

import numpy as np

from pixelrl.rl.rewards import Reward, RewardTerm
from pixelrl.vision import rewards as vr


# The click_gaussian terms, each called (texts, boxes, screen_size, sigma_scale) like any
# grounding reward: click-in-box, the GUI-G² Gaussian point reward (σ = ``sigma_scale`` × box
# size; ½ in GUI-G², larger gives a denser signal to a model that rarely lands near the box yet)
# and the format reward.
def _in_box(texts, boxes, screen_size, sigma_scale: float) -> np.ndarray:
    return vr.point_in_box(vr.parse_points(texts, screen_size), boxes)


def _gaussian(texts, boxes, screen_size, sigma_scale: float) -> np.ndarray:
    return vr.gaussian_point_reward(vr.parse_points(texts, screen_size), boxes, sigma_scale)


def _format(texts, boxes, screen_size, sigma_scale: float) -> np.ndarray:
    return vr.format_reward(texts, screen_size)


def _recipe(name: str) -> tuple[RewardTerm, ...]:
    """A paper's composite reward (:mod:`pixelrl.vision.rewards`) as one term."""

    def fn(texts, boxes, screen_size, sigma_scale: float = 0.5):
        extra = {"sigma_scale": sigma_scale} if name == "gui_g2_reward" else {}
        return getattr(vr, name)(texts, boxes, screen_size=screen_size, **extra)

    return (RewardTerm(name.removesuffix("_reward"), fn),)


# grpo.reward -> its terms; each called (texts, boxes, screen_size, sigma_scale)
GROUNDING_REWARDS = {
    "click_gaussian": Reward(
        (
            RewardTerm("in_box", _in_box),
            RewardTerm("gaussian", _gaussian),
            RewardTerm("format", _format, 0.5),
        )
    ),
    "ui_r1": Reward(_recipe("ui_r1_reward")),
    "gui_r1": Reward(_recipe("gui_r1_reward")),
    "se_gui": Reward(_recipe("se_gui_reward")),
    "gui_g2": Reward(_recipe("gui_g2_reward")),
}


def click_gaussian_reward(texts, boxes, screen_size, sigma_scale: float = 0.5) -> np.ndarray:
    """``r = R_in_box + R_gauss + 0.5 · R_format`` ∈ [0, 2.5]: :data:`GROUNDING_REWARDS`'
    ``click_gaussian``."""
    return GROUNDING_REWARDS["click_gaussian"](texts, boxes, screen_size, sigma_scale)
