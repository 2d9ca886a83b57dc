"""The pointer policy's gesture kinds (issue 54: drag, scroll_up, scroll_down) on the command
line: a kind that does not exist, or an expert kind the policy lacks (its cloning would drop the
task's drags), is one line ``pixelrl train: error: ...``, exit status 2, nothing written."""

from __future__ import annotations

from cli_forks import error_table

TRAIN = ["train", "gui/ppo", "train.output_dir=run"]
DRAG = [*TRAIN, "env.id=pixelrl/Desktop-DragToTarget-v0", "policy.bc_samples=4",
        "policy.bc_steps=1"]  # fmt: skip

# (id, argv after the program, text the error line must hold)
CASES = [
    ("kinds-misspelled", [*TRAIN, "policy.kinds=[click,dragg]"],
     "kinds: 'dragg' is not a pointer kind"),
    ("kinds-scroll-without-direction", [*TRAIN, "policy.kinds=[click,scroll]"],
     "scroll_up, scroll_down"),
    ("kinds-lack-the-experts-drag", DRAG,
     "pixelrl/Desktop-DragToTarget-v0: its expert plays drag actions, which policy.kinds "
     "(click) cannot take; add 'drag' to policy.kinds"),
]  # fmt: skip


results, test_a_wrong_gesture_kind_is_one_error_line_and_exit_2 = error_table(CASES)
