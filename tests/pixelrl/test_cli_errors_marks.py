"""The command line's error contract (tests/pixelrl/test_cli_errors.py) for mark actions'
config key, ``prompt.mark_actions`` (issue 53): one error line, exit status 2, nothing written."""

from __future__ import annotations

import pytest
from test_cli_errors import _run  # one subprocess a case, as a user types it

TRAIN = ["train", "gui/sft", "train.output_dir=run"]
CASES = [
    ("train-vlm-mark-actions-text", [*TRAIN, "prompt.mark_actions=maybe"],
     "prompt.mark_actions must be true or false"),
    ("train-vlm-mark-actions-no-parse", [*TRAIN, "prompt.mark_actions=true"],
     "prompt.mark_actions needs prompt.screen_parse=true"),
    ("eval-mark-actions-no-parse", ["eval", "--policy", "tiny-qwen2_vl", "--grounding", "2",
                                    "--mark-actions"], "--mark-actions needs --screen-parse"),
    ("train-vlm-mark-actions-nav", ["train", "embodied/vlm-sft", "prompt.mark_actions=true",
                                    "train.output_dir=run"], "unknown config key 'prompt.mark_actions'"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_mark_actions_mistake_is_one_error_line_and_exit_2(case, tmp_path):
    r = _run(case, tmp_path, tmp_path)
    text = r["out"] + r["err"]
    assert "Traceback" not in text, text
    assert r["rc"] == 2, text
    last = r["err"].strip().splitlines()[-1]
    assert last.startswith(f"pixelrl {case[1][0]}: error: ") and case[2] in last, last
    assert r["left"] == [], f"the failed command wrote {r['left']}"
