"""The navigation tool-call dialect's config key in the command line's error contract (issue 55):
a wrong ``action_format`` of the navigation VLM recipes is one line ``pixelrl train: error:
...``, exit status 2, no traceback, nothing written (forked cases: tests/pixelrl/cli_forks.py)."""

from __future__ import annotations

from cli_forks import error_table

SFT = ["train", "embodied/vlm-sft", "train.output_dir=run"]
GRPO = ["train", "embodied/vlm-grpo", "train.output_dir=run", "init="]
CASES = [
    ("nav-action-format-unknown", [*SFT, "action_format=json"],
     "action_format: 'json'; known: text, toolcall"),
    ("nav-action-format-gui-dialect", [*GRPO, "action_format=uitars"],
     "action_format: 'uitars'; known: text, toolcall"),
    ("nav-toolcall-smolvlm", [*SFT, "action_format=toolcall"],  # the recipe's tiny-smolvlm
     "toolcall needs a tool-calling chat template, which tiny-smolvlm has not"),
]  # fmt: skip


results, test_a_wrong_navigation_action_format_is_one_error_line = error_table(CASES)
