"""The tool-call dialect's config key in the command line's error contract (issue 55 item 1):
a wrong ``action_format`` is one line ``pixelrl train: error: ...``, exit status 2, no
traceback, nothing written (the cases run forked from one server: tests/pixelrl/cli_forks.py)."""

from __future__ import annotations

from cli_forks import error_table

TRAIN = ["train", "gui/sft", "train.output_dir=run"]
CASES = [
    ("train-action-format-unknown", [*TRAIN, "action_format=json"],
     "action_format: 'json'; known: uitars, pyautogui, toolcall"),
    ("train-toolcall-coordinates", [*TRAIN, "action_format=toolcall", "coordinates=relative1000"],
     "coordinates: action_format 'toolcall' takes screen pixels"),
    ("train-toolcall-marks", [*TRAIN, "action_format=toolcall", "prompt.screen_parse=true",
                              "prompt.mark_actions=true"], "action_format 'toolcall' has no mark actions"),
    ("train-toolcall-smolvlm", [*TRAIN, "action_format=toolcall", "model=tiny-smolvlm"],
     "toolcall needs a tool-calling chat template, which tiny-smolvlm has not"),
]  # fmt: skip


results, test_a_wrong_action_format_is_one_error_line = error_table(CASES)
