"""A run's tables are on disk before it ends (note of 2026-12-06: grounding's ``history.csv`` was
written only at the end, so a run stopped midway left none): a text recipe's at each held-out
evaluation, PPO's at each checkpoint. The toy navigation recipe's run folder and trainer."""

from __future__ import annotations

import csv

from toy_nav import register_toy_recipe

from pixelrl.run_folder import Run
from pixelrl.train import Trainer, config_for

RECIPE = register_toy_recipe()


def test_an_evaluation_writes_the_rows_so_far(tmp_path):
    run = Run(config_for(RECIPE, [f"train.output_dir={tmp_path}"]))
    run.history += [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}]
    assert not (tmp_path / "history.csv").exists()
    run.add_eval(2, {"success": 0.25, "n": 4})
    with open(tmp_path / "history.csv") as f:
        assert [r["loss"] for r in csv.DictReader(f)] == ["2.0", "1.5"]
    with open(tmp_path / "eval.csv") as f:
        assert [r["success"] for r in csv.DictReader(f)] == ["0.25"]


def test_a_ppo_checkpoint_writes_the_rows_it_holds(tmp_path):
    trainer = Trainer(config_for(RECIPE, [
        f"train.output_dir={tmp_path}", "train.progress=false", "env.num_envs=2",
        "ppo.num_steps=4", "train.total_frames=8", "train.tensorboard=false",
    ]))  # fmt: skip
    trainer.history.append({"update": 7, "frames": 56})
    trainer.save()
    with open(tmp_path / "history.csv") as f:
        assert [r["update"] for r in csv.DictReader(f)] == ["7"]
