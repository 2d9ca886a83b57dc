"""The command line's error contract, case by case (issue 27): a user mistake ends in one line
``pixelrl VERB: error: ...`` naming the bad value, exit status 2, no traceback, nothing written.

Each case runs in a process of its own, forked from a server that imported torch once
(``cli_forks.py``: 1.3 s of CPU less a case); three also run as a user types them.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_forks import assert_one_error_line, case_argv, run_cases, user_env

PIXELRL = [sys.executable, "-m", "pixelrl"]
CLICK = "pixelrl/Desktop-ClickButton-v0"
X11 = "pixelrl/XDesktop-TkCounterThree-v0"
TRAIN = ["train", "embodied/pointnav-small", "train.output_dir=run"]

# (id, argv after the program, text the error line must hold); {data} is the fixture folder.
CASES = [
    # unknown or unprefixed env ids, with the nearest ones
    ("record-unknown-env", ["record", "--env", "pixelrl/Desktop-ClickButon-v0", "--out", "o"],
     "'pixelrl/Desktop-ClickButon-v0'; did you mean pixelrl/Desktop-ClickButton-v0"),
    ("record-unprefixed-env", ["record", "--env", "Desktop-ClickButton-v0", "--out", "o"],
     "did you mean pixelrl/Desktop-ClickButton-v0"),
    ("eval-unknown-env", ["eval", "--env", "pixelrl/Desktop-ClickButon-v0", "--policy", "p"],
     "'pixelrl/Desktop-ClickButon-v0'"),
    ("grounding-unknown-env", ["-g", "pixelrl/Desktop-ClickButon-v0", "o"],
     "'pixelrl/Desktop-ClickButon-v0'"),
    ("train-unknown-env", [*TRAIN, "env.id=pixelrl/PointNav-v9"],
     "'pixelrl/PointNav-v9'; did you mean pixelrl/PointNav-v0"),
    # env options the env refuses
    ("record-screen-out-of-range",
     ["record", "--env", CLICK, "--env-kwargs", '{"screen_size": [100, 100]}', "--out", "o"],
     "100x100"),
    ("record-misspelled-kwarg",
     ["record", "--env", CLICK, "--env-kwargs", '{"screen_sise": [640, 400]}', "--out", "o"],
     "'screen_sise'"),
    ("record-kwargs-not-json", ["record", "--env", CLICK, "--env-kwargs", "{size: 1", "--out", "o"],
     "{size: 1"),
    # config values, found before any env is built
    ("train-lr-text", [*TRAIN, "ppo.lr=abc"], "ppo.lr must be a number"),
    ("train-num-envs-0", [*TRAIN, "env.num_envs=0"], "env.num_envs must be > 0, got 0"),
    ("train-minibatches-over-envs", [*TRAIN, "env.num_envs=1", "ppo.num_minibatches=4"],
     "ppo.num_minibatches (4) cannot exceed env.num_envs (1)"),
    ("train-frames-negative", [*TRAIN, "train.total_frames=-100"], "got -100"),
    ("train-tasks-ignored", [*TRAIN, "env.tasks=[click-button]"],
     "recipe 'embodied/pointnav-small' trains on one env (env.id) and would ignore env.tasks"),
    # counts and sizes, at parse time
    ("record-episodes-negative", ["record", "--env", CLICK, "--episodes", "-3", "--out", "o"],
     "--episodes: must be > 0, got -3"),
    ("record-episodes-zero", ["record", "--env", CLICK, "--episodes", "0", "--out", "o"],
     "got 0"),
    ("eval-episodes-negative", ["eval", "--env", CLICK, "--policy", "p", "--episodes", "-5"],
     "got -5"),
    ("eval-batch-zero", ["eval", "--env", CLICK, "--policy", "p", "--batch", "0"],
     "--batch: must be > 0, got 0"),
    ("eval-batch-huge", ["eval", "--env", CLICK, "--policy", "p", "--batch", "1000"],
     "--batch: must be at most 256"),
    ("eval-grounding-negative", ["eval", "--policy", "p", "--grounding", "-4"], "got -4"),
    ("eval-screen-negative", ["eval", "--policy", "p", "--screen-size", "-1", "240"], "got -1"),
    ("bench-episodes-negative",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop", "--episodes", "-2"],
     "got -2"),
    ("bench-paths-negative",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop", "--paths", "-1"],
     "got -1"),
    ("bench-batch-zero",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop", "--batch", "0"],
     "--batch: must be > 0, got 0"),
    ("bench-batch-text",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop", "--batch", "all"],
     "'all'"),
    ("bench-batch-huge",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop", "--batch", "8000"],
     "--batch: must be at most 256 (episodes played together, an env each), got 8000"),
    ("grounding-seeds-negative", ["-g", CLICK, "o", "--seeds", "-3"], "got -3"),
    ("view-negative-fps", ["view", "{data}/demos", "--fps", "-3", "--out", "v.gif"], "got -3"),
    ("view-scale-zero", ["view", "{data}/demos", "--scale", "0", "--out", "v.gif"], "got 0"),
    ("demo-steps-negative", ["demo", "--parts", "gui", "--gui-steps", "-5"], "got -5"),
    # names that do not exist
    ("eval-missing-checkpoint", ["eval", "--env", CLICK, "--policy", "runs/gui-ppo-20260101"],
     "no such checkpoint: runs/gui-ppo-20260101"),
    ("eval-missing-absolute", ["eval", "--env", CLICK, "--policy", "/nonexistent/gui-ppo"],
     "no such checkpoint: /nonexistent/gui-ppo"),
    ("record-checkpoint-missing",
     ["record", "--env", CLICK, "--agent", "checkpoint", "runs/nope", "--out", "o"],
     "no such checkpoint: runs/nope"),
    ("record-unknown-agent", ["record", "--env", CLICK, "--agent", "expret", "--out", "o"],
     "'expret'; did you mean 'expert'"),
    ("bench-unknown-agent",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expret"], "'expret'"),
    ("bench-missing-dataset", ["bench", "nav", "--dataset", "nope.json.gz", "--agent", "stop"],
     "nope.json.gz"),
    ("view-missing-episode", ["view", "{data}/demos", "--episode", "7", "--out", "v.gif"],
     "episode 7"),
    ("replay-missing-dir", ["replay", "no_such_dir"], "no_such_dir"),
    ("demo-unknown-part", ["demo", "--parts", "expert"], "'expert'"),
    ("demo-bad-size", ["demo", "--size", "1280x"], "'1280x'"),
    # episode files
    ("bench-truncated-dataset",
     ["bench", "nav", "--dataset", "{data}/cut.json.gz", "--agent", "expert"], "cut.json.gz"),
    ("bench-scene-ids-without-options",
     ["bench", "nav", "--dataset", "{data}/old.json.gz", "--agent", "expert"],
     "'apartment:seed=3'"),
    ("bench-geodesic-negative",
     ["bench", "nav", "--dataset", "{data}/geodesic_negative.json.gz", "--agent", "expert"],
     "episodes[0] (episode_id '0'): info.geodesic_distance must be a finite number >= 0 (m), "
     "got -5"),
    ("bench-geodesic-text",
     ["bench", "nav", "--dataset", "{data}/geodesic_text.json.gz", "--agent", "expert"],
     "info.geodesic_distance must be a finite number >= 0 (m), got 'far'"),
    ("bench-radius-negative",
     ["bench", "nav", "--dataset", "{data}/radius_negative.json.gz", "--agent", "expert"],
     "episodes[1].goals[0].radius must be a finite number >= 0 (m) or null, got -1"),
    ("bench-task-contradicts-file",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--task", "objectnav"],
     "--task objectnav does not match new.json.gz: its episodes are pointnav episodes"),
    # bench nav's --agent and --env-option
    ("bench-agent-swallows-option",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert", "width=64"],
     "--env-option width=64"),
    ("bench-unknown-env-option",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop",
      "--env-option", "widht=64"], "'widht'; did you mean 'width'"),
    ("bench-episode-source-option",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "stop",
      "--env-option", "apartment={rooms: [1, 2]}"], "'apartment'"),
    # nav env option values (issue 37)
    ("bench-forward-step-inf",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--env-option", "forward_step=.inf"], "forward_step must be a finite number > 0, got inf"),
    ("bench-width-absurd",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--env-option", "width=100000"], "width must be an integer in [1, 4096] px, got 100000"),
    ("bench-look-actions-text",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--env-option", 'look_actions="yes"'], "look_actions must be true or false, got 'yes'"),
    ("bench-tilt-angle-out-of-range",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--env-option", "tilt_angle=-400"], "tilt_angle must be a finite number in (0, 90]"),
    ("bench-success-distance-negative",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--env-option", "success_distance=-1"], "success_distance must be a finite number > 0"),
    ("bench-success-distance-nan",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "expert",
      "--env-option", "success_distance=.nan"], "success_distance must be a finite number > 0"),
    ("train-forward-step-inf", [*TRAIN, "env.kwargs.forward_step=.inf"],
     "forward_step must be a finite number > 0, got inf"),
    # the navigation VLM agent (issue 21)
    ("bench-vlm-agent-missing",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "vlm", "runs/nope"],
     "no such agent folder: runs/nope"),
    ("bench-vlm-not-an-agent",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "vlm", "{data}/demos"],
     "is not a navigation VLM agent"),
    ("bench-vlm-cut-weights",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "vlm", "{data}/agent_cut"],
     "agent_cut: cannot load the model: Error while deserializing header"),
    ("bench-vlm-random-weights",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "vlm", "{data}/agent_random"],
     "agent_random: cannot load the model: Error while deserializing header"),
    ("bench-vlm-max-repeat-text",
     ["bench", "nav", "--dataset", "{data}/new.json.gz", "--agent", "vlm", "{data}/agent_many"],
     "'max_repeat' must be an integer >= 1, got 'many'"),
    ("eval-cut-weights", ["eval", "--policy", "{data}/gui_cut", "--grounding", "2"],
     "gui_cut: cannot load the model folder: Error while deserializing header"),
    ("eval-nav-vlm-agent", ["eval", "--policy", "{data}/agent_many", "--grounding", "2"],
     "is a navigation VLM agent (it has pixelrl_nav_agent.json), not a GUI policy; benchmark "
     "it with: pixelrl bench nav --dataset EPISODES.json.gz --agent vlm"),
    ("demo-size-too-small", ["demo", "--size", "10x10"],
     "10x10 is outside the desktop's screen sizes, 320x240 to 1920x1080"),
    ("train-vlm-unknown-model", ["train", "embodied/vlm-sft", "model=tiny-gpt5",
                                 "train.output_dir=run"], "unknown tiny model 'tiny-gpt5'"),
    ("train-vlm-steps-zero", ["train", "embodied/vlm-sft", "sft.steps=0", "train.output_dir=run"],
     "sft.steps must be > 0, got 0"),
    ("train-vlm-not-nav", ["train", "embodied/vlm-sft", "env.id=pixelrl/Desktop-ClickButton-v0",
                           "train.output_dir=run"], "not a navigation task"),
    # issue 42: schedules, validation, early stopping, the format guard, stop-aware rewards
    ("train-vlm-sft-schedule", ["train", "embodied/vlm-sft", "sft.lr_schedule=step",
                                "train.output_dir=run"],
     "sft.lr_schedule: 'step'; known: constant, linear, cosine"),
    ("train-vlm-sft-warmup-whole-run", ["train", "embodied/vlm-sft", "sft.warmup_ratio=1",
                                        "train.output_dir=run"],
     "sft.warmup_ratio must be in [0, 1), got 1"),
    ("train-vlm-grpo-schedule", ["train", "embodied/vlm-grpo", "grpo.lr_schedule=exp",
                                 "train.output_dir=run"], "grpo.lr_schedule: 'exp'"),
    ("train-vlm-grpo-warmup-text", ["train", "embodied/vlm-grpo", "grpo.warmup_ratio=some",
                                    "train.output_dir=run"],
     "grpo.warmup_ratio must be a number (like its default 0.1), got 'some'"),
    ("train-vlm-grpo-warmup-negative", ["train", "embodied/vlm-grpo", "grpo.warmup_ratio=-0.1",
                                        "train.output_dir=run"],
     "grpo.warmup_ratio must be in [0, 1), got -0.1"),
    ("train-vlm-format-floor-one", ["train", "embodied/vlm-grpo", "grpo.format_floor=1",
                                    "train.output_dir=run"],
     "grpo.format_floor must be in [0, 1), got 1"),
    ("train-vlm-format-floor-text", ["train", "embodied/vlm-grpo", "grpo.format_floor=high",
                                     "train.output_dir=run"],
     "grpo.format_floor must be a number (like its default 0.5), got 'high'"),
    ("train-vlm-patience-negative", ["train", "embodied/vlm-grpo", "eval.patience=-2",
                                     "train.output_dir=run"], "eval.patience must be >= 0, got -2"),
    ("train-vlm-val-episodes-negative", ["train", "embodied/vlm-sft", "eval.val_episodes=-1",
                                         "train.output_dir=run"],
     "eval.val_episodes must be >= 0, got -1"),
    ("train-vlm-val-measure-typo", ["train", "embodied/vlm-grpo", "eval.val_measure=spll",
                                    "train.output_dir=run"],
     "eval.val_measure: 'spll'; known: success, spl"),
    ("train-vlm-replay-failed-above-one", ["train", "embodied/vlm-grpo", "grpo.replay_failed=1.5",
                                           "train.output_dir=run"],
     "grpo.replay_failed must be a number in [0, 1], got 1.5"),
    ("train-vlm-replay-failed-text", ["train", "embodied/vlm-grpo", "grpo.replay_failed=half",
                                      "train.output_dir=run"],
     "grpo.replay_failed must be a number"),
    ("train-gui-reader-text", ["train", "gui/ppo", "policy.reader=maybe", "train.output_dir=run"],
     "reader must be true or false, got 'maybe'"),
    ("train-gui-reader-typo", ["train", "gui/miniwob", "policy.readr=true", "train.output_dir=run"],
     "unknown config key 'policy.readr' for PointerPolicy; did you mean 'policy.reader'"),
    ("train-gui-subwords-negative", ["train", "gui/miniwob", "policy.subwords=-1",
                                     "train.output_dir=run"],
     "subwords must be an integer >= 0, got -1"),
    ("train-gui-field-template-typo", ["train", "gui/miniwob", 'policy.texts=["{field:0:uper}"]',
                                       "train.output_dir=run"],
     "texts: '{field:0:uper}' is not a task-field template"),
    ("train-gui-kind-typo", ["train", "gui/miniwob", "policy.kinds=[click,wiat]",
                             "train.output_dir=run"],
     "kinds: 'wiat' is not a pointer kind, 'type', 'key' or 'wait'"),
    ("train-gui-field-template-unquoted", ["train", "gui/miniwob", "policy.texts=[{field:0}]",
                                           "train.output_dir=run"],
     "texts: {'field:0': None} is not a string (quote a template: \"{field:0}\")"),
    ("train-vlm-val-on-test-scenes", ["train", "embodied/vlm-sft", "env.val_kwargs.scene_seed=100004",
                                      "train.output_dir=run"],
     "env.val_kwargs: validation scenes overlap the held-out test (env.eval_kwargs) scenes"),
    ("train-vlm-val-on-train-scenes", ["train", "embodied/vlm-grpo", "env.val_kwargs.scene_seed=30",
                                       "train.output_dir=run"],
     "validation scenes overlap the training (env.kwargs) scenes (2 shared, e.g. 30)"),
    ("train-vlm-val-unknown-option", ["train", "embodied/vlm-sft", "env.val_kwargs.scene_sed=40",
                                      "train.output_dir=run"], "'env.val_kwargs.scene_sed' for NavConfig"),
    ("train-vlm-depth-prompt-without-depth", ["train", "embodied/vlm-sft", "prompt.depth=true",
                                              "train.output_dir=run"],
     "prompt.depth: true draws the depth frame, but env.kwargs renders sensors ['rgb']"),
    ("train-vlm-depth-prompt-eval-without-depth", ["train", "embodied/vlm-grpo", "prompt.depth=true",
                                                   "env.kwargs.sensors=[rgb,depth]",
                                                   "env.eval_kwargs.sensors=[rgb]", "train.output_dir=run"],
     "but env.eval_kwargs renders sensors ['rgb']"),
    ("train-vlm-distance-floor-text", ["train", "embodied/vlm-sft", "prompt.distance_floor=maybe",
                                       "train.output_dir=run"],
     "prompt.distance_floor must be true or false, got 'maybe'"),
    ("train-vlm-early-stop-negative", ["train", "embodied/vlm-grpo",
                                       "grpo.rewards.early_stop=-1", "train.output_dir=run"],
     "grpo.rewards.early_stop must be >= 0, got -1"),
    ("eval-nothing-to-do", ["eval", "--policy", "p"], "--grounding"),
    # Set-of-Mark prompts (issue 41 item 5)
    ("eval-screen-parse-value", ["eval", "--policy", "p", "--screen-parse=yes"],
     "ignored explicit argument 'yes'"),
    ("train-vlm-screen-words-0", ["train", "gui/sft", "prompt.screen_words=0", "train.output_dir=run"],
     "prompt.screen_words must be >= 1, got 0"),
    ("train-vlm-screen-parse-text", ["train", "gui/sft", "prompt.screen_parse=maybe",
                                     "train.output_dir=run"], "prompt.screen_parse must be true or false"),
    ("train-vlm-screen-parse-nav", ["train", "embodied/vlm-sft", "prompt.screen_parse=true",
                                    "train.output_dir=run"], "unknown config key 'prompt.screen_parse'"),
    # text recipes under torchrun (issue 40): checked before any run folder or model
    ("train-vlm-shard-unknown", ["train", "embodied/vlm-sft", "distributed.shard=zero3",
                                 "train.output_dir=run"],
     "distributed.shard must be one of ddp, fsdp, got 'zero3'"),
    ("train-vlm-param-dtype", ["train", "embodied/vlm-sft", "distributed.param_dtype=bf16",
                               "distributed.shard=fsdp", "train.output_dir=run"],
     "distributed.param_dtype must be bfloat16, float16 or empty, got 'bf16'"),
    ("train-vlm-param-dtype-ddp", ["train", "embodied/vlm-sft",
                                   "distributed.param_dtype=bfloat16", "train.output_dir=run"],
     "distributed.param_dtype=bfloat16 is FSDP2's compute dtype (with distributed.shard=fsdp)"),
    ("train-vlm-timeout-zero", ["train", "embodied/vlm-sft", "distributed.timeout_s=0",
                                "train.output_dir=run"],
     "distributed.timeout_s must be a number > 0, got 0"),
    ("train-vlm-checkpoint-negative", ["train", "embodied/vlm-sft",
                                       "train.checkpoint_interval=-2", "train.output_dir=run"],
     "train.checkpoint_interval must be an integer >= 0, got -2"),
    ("train-vlm-grad-ckpt-text", ["train", "embodied/vlm-sft", "gradient_checkpointing=maybe",
                                  "train.output_dir=run"],
     "gradient_checkpointing must be true or false, got 'maybe'"),
    ("train-vlm-resume-nothing", ["train", "embodied/vlm-sft", "train.resume=nowhere",
                                  "train.output_dir=run"],
     "train.resume: nowhere holds no checkpoint (checkpoints/latest)"),
    # hostile or mistaken X11 task files and sandbox limits (issue 37)
    ("record-x11-limit-typo", ["record", "--env", X11, "--env-kwargs",
                               '{"limits": {"stp_s": 1}}', "--out", "o"],
     "unknown sandbox limit(s) ['stp_s']; known: ['step_s',"),
    ("record-x11-limit-negative", ["record", "--env", X11, "--env-kwargs",
                                   '{"limits": {"home_bytes": -1}}', "--out", "o"],
     "sandbox limit home_bytes must be a finite number > 0, got -1"),
    ("record-x11-sleep-forever", ["record", "--env", X11, "--env-kwargs",
                                  '{"task": "{data}/sleep.json"}', "--out", "o"],
     "config[0].seconds: sleeps 1e+09 s; a step may take 0 to 30 s"),
    ("record-x11-bad-pattern", ["record", "--env", X11, "--env-kwargs",
                                '{"task": "{data}/unclosed.json"}', "--out", "o"],
     "evaluator.result.pattern: not a valid regular expression '(unclosed'"),
    ("record-x11-task-not-utf8", ["record", "--env", X11, "--env-kwargs",
                                  '{"task": "{data}/latin1.json"}', "--out", "o"],
     "latin1.json: not UTF-8 text"),
    ("record-x11-short-step-limit", ["record", "--env", X11, "--env-kwargs",
                                     '{"task": "{data}/sleep5.json", "limits": {"step_s": 1}}',
                                     "--out", "o"],
     "sleeps 5 s; a step may take 0 to 1 s"),
    ("tasks-check-missing-folder", ["tasks", "check", "nowhere"], "nowhere: no such folder"),
    # the screen reader (issue 41)
    ("read-missing-file", ["read", "nothere.png"], "nothere.png: no such file"),
    ("read-not-an-image", ["read", "{data}/new.json.gz"], "new.json.gz: not a readable image"),
    ("read-folder", ["read", "{data}"], ": not a file"),
    ("read-huge-image", ["read", "{data}/wide.png"], "9000x20 is too large to read"),
    ("read-upscale-zero", ["read", "{data}/wide.png", "--upscale", "0"], "--upscale: must be > 0"),
    ("read-upscale-too-big", ["read", "{data}/wide.png", "--upscale", "20"],
     "--upscale: must be in [0.25, 8], got 20"),
    ("read-upscale-text", ["read", "{data}/wide.png", "--upscale", "big"], "'big'"),
    ("read-detect-upscale-too-big", ["read", "{data}/wide.png", "--detect-upscale", "9"],
     "--detect-upscale: must be in [0.25, 8], got 9"),
    ("read-min-score-out-of-range", ["read", "{data}/wide.png", "--min-score", "2"],
     "--min-score: must be in [0, 1], got 2"),
    ("read-min-score-nan", ["read", "{data}/wide.png", "--min-score", "nan"], "got nan"),
    ("read-min-score-text", ["read", "{data}/wide.png", "--min-score", "high"], "'high'"),
    ("view-read-missing-episode",
     ["view", "{data}/demos", "--read", "--episode", "7", "--out", "v.gif"], "episode 7"),
    # OpenEnv servers (issue 39); a port in use: tests/pixelrl/test_serve.py
    ("serve-unknown-env", ["serve", "pixelrl/Desktop-ClickButon-v0"],
     "argument ENV_ID: unknown env id 'pixelrl/Desktop-ClickButon-v0'; did you mean "
     "pixelrl/Desktop-ClickButton-v0"),
    ("serve-unprefixed-env", ["serve", "PointNav-v0"], "did you mean pixelrl/PointNav-v0"),
    ("serve-port-too-big", ["serve", CLICK, "--port", "70000"],
     "--port: must be in 0..65535 (0: a free port), got 70000"),
    ("serve-port-negative", ["serve", CLICK, "--port", "-1"], "got -1"),
    ("serve-port-text", ["serve", CLICK, "--port", "http"], "--port: expected an integer, got 'http'"),
    ("serve-public-host", ["serve", CLICK, "--host", "0.0.0.0"],
     "--host 0.0.0.0 is not a loopback address"),
    ("serve-public-host-v6", ["serve", CLICK, "--host", "::"], "add --allow-remote if you mean it"),
    ("serve-unknown-host", ["serve", CLICK, "--host", "no-such-host.invalid", "--allow-remote"],
     "cannot listen on no-such-host.invalid:8000"),
    ("serve-max-sessions-zero", ["serve", CLICK, "--max-sessions", "0"],
     "--max-sessions: must be > 0, got 0"),
    ("serve-images-jpeg", ["serve", CLICK, "--images", "jpeg"],
     "--images: invalid choice: 'jpeg'"),
    ("serve-misspelled-kwarg", ["serve", CLICK, "--env-kwargs", '{"screen_sise": [640, 400]}'],
     "'screen_sise'"),
    ("serve-kwargs-not-json", ["serve", CLICK, "--env-kwargs", "{size: 1"], "{size: 1"),
]  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    import gymnasium

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.nav.dataset import episode_to_json
    from pixelrl.envs.nav.sim import generate_dataset
    from pixelrl.envs.recording import RecordEpisodes

    root = tmp_path_factory.mktemp("cli_errors")
    episodes = generate_dataset(str(root / "new.json.gz"), 2, num_scenes=1, scene_seed=3)
    raw = (root / "new.json.gz").read_bytes()
    (root / "cut.json.gz").write_bytes(raw[: len(raw) // 2])
    with gzip.open(root / "old.json.gz", "wt") as f:  # written before ids carried options
        json.dump({"episodes": [episode_to_json(e) for e in episodes]}, f)
    for name, (k, where, key, value) in {
        "geodesic_negative": (0, "info", "geodesic_distance", -5),
        "geodesic_text": (0, "info", "geodesic_distance", "far"),
        "radius_negative": (1, "goal", "radius", -1),
    }.items():
        with gzip.open(root / "new.json.gz", "rt") as f:
            raw = json.load(f)
        episode = raw["episodes"][k]
        (episode["info"] if where == "info" else episode["goals"][0])[key] = value
        with gzip.open(root / f"{name}.json.gz", "wt") as f:
            json.dump(raw, f)
    _x11_task_files(root)
    _vlm_agent_folders(root)
    from PIL import Image

    Image.new("L", (9000, 20)).save(root / "wide.png")  # past the reader's 8192 px a side
    env = RecordEpisodes(gymnasium.make(CLICK, screen_size=(320, 240)), root / "demos")
    env.reset(seed=0)
    env.step(env.unwrapped.expert_action())
    env.close()
    return root


def _x11_task_files(root: Path) -> None:
    """Task files a user might be handed: an endless sleep, a pattern that cannot compile, a
    file in Latin-1, and a sleep longer than a step limit the user sets."""
    check = {"result": {"type": "command", "command": ["true"]}, "func": "contains",
             "expected": ""}  # fmt: skip
    for name, config, evaluator in [
        ("sleep", [{"type": "sleep", "seconds": 1e9}], check),
        ("sleep5", [{"type": "sleep", "seconds": 5}], check),
        ("unclosed", [], {"result": {"type": "window_title", "pattern": "(unclosed"},
                          "func": "contains", "expected": "x"}),
    ]:  # fmt: skip
        task = {"id": "Hostile", "instruction": "x", "config": config, "evaluator": evaluator}
        (root / f"{name}.json").write_text(json.dumps(task))
    (root / "latin1.json").write_bytes(b'{"id": "Caf\xe9", "instruction": "x"}')


def _vlm_agent_folders(root: Path) -> None:
    """A tiny navigation VLM agent (random weights), then broken copies of it: weights cut in
    half, random bytes, ``max_repeat`` as text, and a GUI model folder with cut weights."""
    import shutil

    from pixelrl.embodied.vlm_agent import AGENT_FILE, AgentSpec, save_agent
    from pixelrl.vision.vlm import load_vlm

    spec = AgentSpec(env_kwargs={"width": 32, "height": 32})
    save_agent(load_vlm("tiny-qwen2_vl", codec=spec.codec(0.25, 10.0)), spec, root / "agent")
    weights = (root / "agent" / "model.safetensors").read_bytes()
    for name in ("agent_cut", "agent_random", "agent_many", "gui_cut"):
        shutil.copytree(root / "agent", root / name)
    (root / "agent_cut" / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    (root / "gui_cut" / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    (root / "gui_cut" / AGENT_FILE).unlink()
    (root / "agent_random" / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    raw = json.loads((root / "agent_many" / AGENT_FILE).read_text())
    (root / "agent_many" / AGENT_FILE).write_text(json.dumps({**raw, "max_repeat": "many"}))


@pytest.fixture(scope="module")
def results(data, tmp_path_factory) -> dict[str, dict]:
    return run_cases(CASES, tmp_path_factory.mktemp("cwd"), data)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_user_mistake_is_one_error_line_and_exit_2(case, results):
    name, argv, expected = case
    assert_one_error_line(results[name], argv, expected)


def test_debug_shows_the_traceback_of_a_user_mistake(data, tmp_path):
    argv = ["--debug", "replay", str(tmp_path / "no_such_dir")]
    p = subprocess.run(PIXELRL + argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "Traceback" in p.stderr and "DatasetError" in p.stderr


@pytest.mark.parametrize(
    "name", ["train-lr-text", "grounding-unknown-env", "record-kwargs-not-json"]
)
def test_the_real_entry_point_says_what_the_forked_one_says(name, data, results, tmp_path):
    """The cases above run forked from one server (cli_forks.py); these run as a user types them."""
    case = next(c for c in CASES if c[0] == name)
    module, argv = case_argv(case[1], data)
    p = subprocess.run([sys.executable, "-m", module, *argv], cwd=tmp_path, env=user_env(),
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (p.returncode, p.stdout, p.stderr) == tuple(
        results[name][k] for k in ("rc", "out", "err")
    )
    assert os.listdir(tmp_path) == []
