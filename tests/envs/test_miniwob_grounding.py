"""Grounding export: screens + a11y -> (screenshot, instruction, bbox) samples in the episode format."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pixelrl.envs.grounding import export_grounding, grounding_samples
from pixelrl.envs.gui import a11y_element
from pixelrl.envs.gui_action import parse_action


def test_samples_skip_ambiguous_nameless_tiny_and_offscreen_elements():
    a11y = [
        a11y_element(1, "button", "OK", [10, 10, 50, 30]),
        a11y_element(2, "button", "Cancel", [60, 10, 100, 30]),
        a11y_element(3, "button", "cancel", [60, 40, 100, 60]),  # same name: ambiguous
        a11y_element(4, "textbox", "", [10, 40, 50, 60]),  # no name, role not pointed at
        a11y_element(5, "text", "tiny", [0, 0, 2, 2]),
        a11y_element(6, "link", "Odio", [150, 10, 400, 30]),  # clipped to the screen
        a11y_element(7, "checkbox", "Milk", [10, 70, 50, 90]),
        a11y_element(8, "radio", "Daily", [60, 70, 100, 90]),
    ]
    samples = grounding_samples(a11y, (200, 100))
    assert [(s.instruction, s.bbox) for s in samples] == [
        ('Click the "OK" button.', (10, 10, 50, 30)),
        ('Click the link "Odio".', (150, 10, 200, 30)),
        ('Click the "Milk" checkbox.', (10, 70, 50, 90)),
        ('Click the "Daily" radio button.', (60, 70, 100, 90)),
    ]


@pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)
def test_export_from_miniwob_loads_as_a_dataset(tmp_path):
    pytest.importorskip("miniwob", reason="needs the web extra")
    from pixelrl.envs.recording import EpisodeDataset

    counts = export_grounding(
        "pixelrl/MiniWoB-click-button-v0", tmp_path / "g", range(2), progress=False
    )
    assert counts["screens"] == 2 and counts["samples"] >= 4
    data = EpisodeDataset(tmp_path / "g")
    assert len(data) == counts["samples"] and data.screen_size == (160, 210)
    rows = data.to_pandas()
    for _, row in rows.iterrows():
        x0, y0, x1, y1 = row["target_bbox"]
        click = parse_action(row["action"])
        assert x0 <= click.x < x1 and y0 <= click.y < y1 and row["success"]
        assert row["instruction"].startswith("Click")
        frame = data.frame(int(row["episode_index"]), 0)
        assert frame.shape == (210, 160, 3)
        assert np.ptp(frame[y0:y1, x0:x1]) > 0  # something is drawn where the target is
