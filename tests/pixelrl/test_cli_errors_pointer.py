"""The pointer head's config key in the command line's error contract (issue 53): a wrong value
is one line ``pixelrl train: error: ...``, exit status 2, nothing written (as
tests/pixelrl/test_cli_errors.py's cases, run by its ``_run``)."""

from __future__ import annotations

import pytest
from test_cli_errors import _run  # one subprocess a case, as a user types it

CASES = [
    ("train-pointer-head-text", ["train", "gui/sft", "pointer_head=maybe", "train.output_dir=run"],
     "pointer_head must be true or false, got 'maybe'"),
    ("train-pointer-head-llava", ["train", "gui/sft", "pointer_head=true", "model=tiny-llava",
                                  "train.output_dir=run"],
     "pointer_head: tiny-llava's image tokens have no known place on the screen"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_wrong_pointer_head_is_one_error_line(case, tmp_path):
    r = _run(case, tmp_path, tmp_path)
    text = r["out"] + r["err"]
    assert "Traceback" not in text and r["rc"] == 2, text
    last = r["err"].strip().splitlines()[-1]
    assert last.startswith("pixelrl train: error: ") and case[2] in last, last
    assert r["left"] == [], f"the failed command wrote {r['left']}"
