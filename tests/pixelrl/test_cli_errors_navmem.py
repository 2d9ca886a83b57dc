"""``prompt.frames`` (issue 53: the navigation VLM's last K frames as separate images) and
``prompt.gps_compass`` (where it stands from its start, in words) on the command line: a wrong value is one line ``pixelrl train: error: ...`` naming the key, exit
status 2, no traceback, nothing written."""

from __future__ import annotations

from cli_forks import error_table

SFT = ["train", "embodied/vlm-sft", "env.id=pixelrl/ObjectNav-v0", "train.output_dir=run"]

# (id, argv after the program, text the error line must hold)
CASES = [
    ("frames-zero", [*SFT, "prompt.frames=0"], "'prompt.frames' must be an integer >= 1, got 0"),
    ("frames-negative", [*SFT, "prompt.frames=-2"],
     "'prompt.frames' must be an integer >= 1, got -2"),
    ("frames-not-int", [*SFT, "prompt.frames=2.5"],
     "'prompt.frames' must be an integer >= 1, got 2.5"),
    ("frames-text", [*SFT, "prompt.frames=four"], "prompt.frames must be a number"),
    ("frames-with-memory-frames", [*SFT, "prompt.frames=4", "prompt.memory_frames=2"],
     "'prompt.memory_frames' stitches earlier frames into one picture"),
    ("gps-compass-not-bool", [*SFT, "prompt.gps_compass=maybe"], "prompt.gps_compass"),
    ("gps-compass-pointnav", [*SFT, "env.id=pixelrl/PointNav-v0", "prompt.gps_compass=true"],
     "'prompt.gps_compass' reads the gps and compass sensors of ObjectNav and InstructNav"),
]  # fmt: skip


results, test_a_wrong_prompt_frames_is_one_error_line_and_exit_2 = error_table(CASES)
