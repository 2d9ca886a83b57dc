"""The GUI text recipes' held-out episodes key in the command line's error contract: a negative
``eval.episodes`` is one line ``pixelrl train: error: ...``, exit status 2, no traceback, nothing
written (0 is allowed: no held-out episodes; the cases run forked from one server:
tests/pixelrl/cli_forks.py)."""

from __future__ import annotations

from cli_forks import error_table

CASES = [
    ("train-miniwob-vlm-eval-episodes-negative",
     ["train", "gui/miniwob-vlm-pointer-sft", "train.output_dir=run", "eval.episodes=-1"],
     "eval.episodes must be >= 0 (0: no held-out episodes), got -1"),
    ("train-miniwob-vlm-pointer-offset-text",
     ["train", "gui/miniwob-vlm-pointer-sft", "train.output_dir=run", 'pointer_offset="on"'],
     "pointer_offset must be true or false, got 'on'"),
]  # fmt: skip


results, test_a_wrong_gui_eval_value_is_one_error_line = error_table(CASES)
