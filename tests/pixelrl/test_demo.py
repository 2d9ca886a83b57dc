"""`pixelrl demo`: the experts part end to end (the training parts are exercised by their own
short-run tests in tests/gui_agent and tests/embodied)."""

from __future__ import annotations

import pytest
from PIL import Image

from pixelrl.cli import main


def test_experts_part_solves_every_family_and_writes_the_contact_sheet(tmp_path, capsys):
    code = main(
        ["demo", "--parts", "experts", "--seeds", "1", "--size", "320x240", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "15/15 episodes solved" in out
    sheet = Image.open(tmp_path / "desktop_experts.png")
    assert sheet.width > 320 and sheet.height > 15 * 100  # a row per family


def test_unknown_part_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--parts", "experts,dance", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert (
        "pixelrl demo: error: argument --parts: unknown part(s) 'dance'" in capsys.readouterr().err
    )
