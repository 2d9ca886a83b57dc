"""Fixtures shared by the GUI agent's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def recorded_click_button(tmp_path_factory):
    """Three episodes of the desktop's click-button expert, recorded as ``gui/sft`` records them
    (each row with the box the expert aimed at): the recording's folder."""
    from pixelrl.config import Config
    from pixelrl.gui_agent.train_vlm import DEFAULTS
    from pixelrl.gui_agent.vlm_demos import record_expert_episodes

    cfg = Config({**DEFAULTS, "env": {**DEFAULTS["env"], "families": ["click-button"]},
                  "data": {**DEFAULTS["data"], "episodes": 3},
                  "train": {**DEFAULTS["train"], "progress": False}})  # fmt: skip
    return record_expert_episodes(cfg, tmp_path_factory.mktemp("demos")) / "click-button"
