"""The PPO trainer's evaluation progress and the run folder it shares with the text recipes
(:mod:`pixelrl.train`, :mod:`pixelrl.run_folder`), on the toy navigation recipe."""

from __future__ import annotations

import csv

from toy_nav import make_toy_vec_env, register_toy_recipe

from pixelrl.rl.collect import run_episodes
from pixelrl.run_folder import Run
from pixelrl.train import Trainer, config_for

RECIPE = register_toy_recipe()


def small_trainer(tmp_path, progress: bool) -> Trainer:
    return Trainer(
        config_for(
            RECIPE,
            [
                f"train.output_dir={tmp_path}",
                f"train.progress={str(progress).lower()}",
                "env.num_envs=2",
                "ppo.num_steps=4",
                "train.total_frames=8",
                "train.eval_num_envs=2",
                "train.tensorboard=false",
            ],
        )
    )


def test_run_episodes_reports_each_counted_episode(tmp_path):
    trainer = small_trainer(tmp_path, progress=False)
    counts: list[int] = []
    episodes = run_episodes(
        make_toy_vec_env(2),
        trainer.policy,
        5,
        list(trainer.storage.obs),
        seed=3,
        progress=counts.append,
    )
    assert len(episodes) == 5
    assert counts == [1, 2, 3, 4, 5]


def test_evaluation_shows_a_progress_bar_only_with_train_progress(tmp_path, capsys):
    for progress in (True, False):
        trainer = small_trainer(tmp_path / str(progress), progress)
        capsys.readouterr()
        assert trainer.evaluate(4)["episodes"] == 4
        shown = capsys.readouterr().err
        assert ("eval" in shown) is progress, shown


def test_ppo_rows_are_written_by_the_run_folder(tmp_path):
    result = small_trainer(tmp_path, progress=False).run()
    assert result["ended"] == "train.total_frames=8 reached"
    with open(tmp_path / "history.csv") as f:
        header = next(csv.reader(f))
    assert header[:8] == ["update", "frames", "train_minutes", "cpu_minutes", "fps",
                          "collect_fps", "lr", "steps"]  # fmt: skip
    for name in ("config.yaml", "eval.csv", "learning_curve.png", "checkpoints/latest.pt"):
        assert (tmp_path / name).is_file(), name


def test_run_folder_tables_keep_the_columns_in_first_seen_order(tmp_path):
    run = Run(config_for(RECIPE, [f"train.output_dir={tmp_path}"]))
    run.history += [{"update": 0, "imitation_update": 1, "frames": 8},
                    {"update": 1, "frames": 16, "train/success": 0.5}]  # fmt: skip
    run.write_tables()
    assert (tmp_path / "history.csv").read_text().splitlines() == [
        "update,imitation_update,frames,train/success",
        "0,1,8,",
        "1,,16,0.5",
    ]
    assert not (tmp_path / "eval.csv").exists()  # no rows, no table
    assert run.plot_measures(frames=16) == tmp_path / "learning_curve.png"
