"""The pointer head's in-cell offset key (issue 53, ``pointer_offset``) in the command line's
error contract: a wrong value is one line ``pixelrl train: error: ...``, exit status 2, no
traceback, nothing written (the cases run forked from one server: tests/pixelrl/cli_forks.py)."""

from __future__ import annotations

from cli_forks import error_table

TRAIN = ["train", "gui/sft", "train.output_dir=run"]
POINTER = ["train", "gui/grounding-pointer-sft", "train.output_dir=run"]
CASES = [
    ("train-pointer-offset-without-head", [*TRAIN, "pointer_offset=true"],
     "pointer_offset: true needs pointer_head: true"),
    ("train-pointer-offset-two", [*POINTER, "pointer_offset=2"],
     "pointer_offset must be true or false, got 2"),
    ("train-pointer-offset-yes", [*POINTER, 'pointer_offset="yes"'],
     "pointer_offset must be true or false, got 'yes'"),
    ("train-pointer-ofset-typo", [*POINTER, "pointer_ofset=true"],
     "pointer_ofset"),
]  # fmt: skip


results, test_a_wrong_pointer_offset_is_one_error_line = error_table(CASES)
