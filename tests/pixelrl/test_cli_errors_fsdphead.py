"""A pointer head with mark actions (issue 53 follow-up) in the command line's error contract
(tests/pixelrl/test_cli_errors.py): both name a click's point, so asking for both, in training
(``pointer_head=true``, or a model folder saved with its head) or in ``pixelrl eval``, is one
error line, exit status 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_forks import assert_one_error_line, run_cases

CLASH = "two ways to name a click's point (the pointer head's image cell, a mark's number)"
MARKS = ["prompt.screen_parse=true", "prompt.mark_actions=true", "train.output_dir=run"]
CASES = [
    ("train-pointer-head-and-marks", ["train", "gui/grounding-pointer-sft", *MARKS],
     f"pointer_head=true with prompt.mark_actions=true: {CLASH}"),
    ("train-saved-head-and-marks", ["train", "gui/grounding-sft", "init={data}/pointer", *MARKS],
     f"/pointer's pointer head with prompt.mark_actions=true: {CLASH}"),
    ("eval-saved-head-and-marks", ["eval", "--policy", "{data}/pointer", "--grounding", "2",
                                   "--screen-parse", "--mark-actions"],
     f"/pointer's pointer head with --mark-actions: {CLASH}"),
]  # fmt: skip


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    """The cases against a tiny model folder saved with its pointer head."""
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    data = tmp_path_factory.mktemp("data")
    codec = GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)
    load_vlm("tiny-smolvlm", codec, pointer_head=True).save(data / "pointer")
    return run_cases(CASES, tmp_path_factory.mktemp("cwd"), Path(data))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_pointer_head_with_mark_actions_is_one_error_line(case, results):
    name, argv, expected = case
    assert_one_error_line(results[name], argv, expected)
