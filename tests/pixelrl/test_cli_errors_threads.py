"""``--threads`` and ``torch_threads`` wrong values (issue 57): one error line, exit 2, nothing
written (the contract of tests/pixelrl/test_cli_errors.py, whose runner this reuses)."""

from __future__ import annotations

from cli_forks import error_table
from test_cli_errors import CLICK, TRAIN  # tests/pixelrl, beside this file

from pixelrl.threads import usable_cores

TOO_MANY = str(usable_cores() + 1)
DATASET = ["--dataset", "episodes.json.gz", "--agent", "random"]

CASES = [
    ("eval-threads-0", ["eval", "--env", CLICK, "--policy", "p", "--threads", "0"],
     "--threads: must be > 0, got 0"),
    ("eval-threads-negative", ["eval", "--env", CLICK, "--policy", "p", "--threads", "-2"],
     "--threads: must be > 0, got -2"),
    ("eval-threads-text", ["eval", "--env", CLICK, "--policy", "p", "--threads", "two"],
     "--threads: expected an integer, got 'two'"),
    ("eval-threads-over-cores", ["eval", "--env", CLICK, "--policy", "p", "--threads", TOO_MANY],
     f"--threads: must be at most {usable_cores()}, the cores this process may run on"),
    ("bench-nav-threads-0", ["bench", "nav", *DATASET, "--threads", "0"],
     "--threads: must be > 0, got 0"),
    ("read-threads-float", ["read", "shot.png", "--threads", "1.5"],
     "--threads: expected an integer, got '1.5'"),
    ("serve-threads-over-cores", ["serve", CLICK, "--threads", TOO_MANY],
     f"--threads: must be at most {usable_cores()}"),
    ("record-threads-negative", ["record", "--env", CLICK, "--out", "o", "--threads", "-1"],
     "--threads: must be > 0, got -1"),
    ("train-torch-threads-negative", [*TRAIN, "torch_threads=-1"],
     "torch_threads must be a thread count >= 1, or 0 for the thread policy"),
    ("train-text-torch-threads-negative", ["train", "gui/sft", "torch_threads=-1",
                                           "train.output_dir=run"],
     "torch_threads must be a thread count >= 1, or 0 for the thread policy"),
    ("train-torch-threads-text", [*TRAIN, "torch_threads=two"], "torch_threads must be a number"),
]  # fmt: skip


results, test_a_threads_mistake_is_one_error_line_and_exit_2 = error_table(
    CASES
)  # no case names {data}
