"""The reader-cells key of the text recipes in the command line's error contract (issue 53): a
wrong ``reader_cells`` is one line ``pixelrl train: error: ...``, exit status 2, no traceback,
nothing written (the cases run forked from one server: tests/pixelrl/cli_forks.py)."""

from __future__ import annotations

from cli_forks import error_table

TRAIN = ["train", "gui/sft", "train.output_dir=run"]
POINTER = ["train", "gui/grounding-pointer-sft", "train.output_dir=run"]
CASES = [
    ("train-reader-cells-without-head", [*TRAIN, "reader_cells=true"],
     "reader_cells: true needs pointer_head: true"),
    ("train-reader-cells-two", [*POINTER, "reader_cells=2"],
     "reader_cells must be true or false, got 2"),
    ("train-reader-cells-yes", [*POINTER, 'reader_cells="yes"'],
     "reader_cells must be true or false, got 'yes'"),
    ("train-reader-cells-no-map", [*TRAIN, "model=tiny-llava", "pointer_head=true",
                                   "reader_cells=true"],
     "pointer_head: tiny-llava's image tokens have no known place on the screen"),
    ("train-read-recipe-no-head", ["train", "gui/grounding-pointer-read-sft",
                                   "train.output_dir=run", "pointer_head=false"],
     "reader_cells: true needs pointer_head: true"),
]  # fmt: skip


results, test_a_wrong_reader_cells_is_one_error_line = error_table(CASES)
