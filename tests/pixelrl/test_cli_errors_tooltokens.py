"""The tiny tokenizer's whole tool tokens in the command line's error contract (issue 55): a
wrong ``tokenizer.tool_tokens`` is one line ``pixelrl train: error: ...``, exit status 2, no
traceback, nothing written (the cases run forked from one server: tests/pixelrl/cli_forks.py)."""

from __future__ import annotations

from cli_forks import error_table

CASES = [
    ("train-tool-tokens-text", ["train", "embodied/vlm-sft-toolcall", "train.output_dir=run",
                                "tokenizer.tool_tokens=maybe"],
     "tokenizer.tool_tokens must be true or false, got 'maybe'"),
    ("train-tool-tokens-number", ["train", "gui/sft", "action_format=toolcall",
                                  "train.output_dir=run", "tokenizer.tool_tokens=2"],
     "tokenizer.tool_tokens must be true or false, got 2"),
]  # fmt: skip


results, test_a_wrong_tool_tokens_is_one_error_line = error_table(CASES)
