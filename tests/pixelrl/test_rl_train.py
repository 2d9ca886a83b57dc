"""The trainer end to end on the toy navigation recipe: learning, checkpoints, resume, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from toy_nav import make_toy_vec_env, register_toy_recipe

from pixelrl.checkpoint import CheckpointError, load_checkpoint
from pixelrl.config import ConfigError
from pixelrl.rl.collect import run_episodes
from pixelrl.rl.policy import PolicyStep
from pixelrl.train import Trainer, config_for, summarize

RECIPE = register_toy_recipe()


class RandomPolicy(torch.nn.Module):
    """Uniform over the 4 actions (the baseline the trained policy must beat)."""

    def initial_state(self, n):
        return {}

    def act(self, obs, state, deterministic=False):
        n = next(iter(obs.values())).shape[0]
        actions = torch.randint(0, 4, (n,))
        return PolicyStep(actions, torch.zeros(n), torch.zeros(n), {})


def test_short_training_run_beats_a_random_agent(tmp_path):
    cfg = config_for(
        RECIPE,
        [
            f"train.output_dir={tmp_path}",
            "train.total_frames=8192",  # 64 updates of 4 envs x 32 steps
            "train.eval_episodes=32",
            "train.eval_interval=32",  # held-out evaluation at updates 32 and 64
            "train.tensorboard=true",
        ],
    )
    result = Trainer(cfg).run()

    torch.manual_seed(0)
    random_eps = run_episodes(
        make_toy_vec_env(4), RandomPolicy(), 32, ["depth"], seed=cfg.seed + 10_000
    )
    random = summarize(random_eps)
    trained = result["eval"]
    print("trained", trained, "random", random)
    assert trained["episodes"] == 32
    assert trained["success"] >= random["success"] + 0.25
    assert trained["spl"] > random["spl"] + 0.15
    for name in (
        "config.yaml",
        "history.csv",
        "eval.csv",
        "learning_curve.png",
        "checkpoints/latest.pt",
    ):
        assert (tmp_path / name).is_file(), name


def test_checkpoint_save_load_and_resume_continue_the_run(tmp_path):
    overrides = [
        f"train.output_dir={tmp_path}",
        "train.checkpoint_interval=1",
        "train.final_eval=false",
    ]
    frames_per_update = 32 * 4
    first = Trainer(config_for(RECIPE, overrides + [f"train.total_frames={2 * frames_per_update}"]))
    start = {k: v.clone() for k, v in first.policy.state_dict().items()}
    first.run()
    # update_0.pt: the policy before any update (the warm start RL is compared with), kept
    # without eval_at_start too
    before = load_checkpoint(tmp_path / "checkpoints" / "update_0.pt")
    assert before["update"] == 0 and before["history"] == []
    for name, value in start.items():
        torch.testing.assert_close(before["policy"][name], value, msg=name)
    ckpt = load_checkpoint(tmp_path / "checkpoints" / "update_2.pt")
    assert ckpt["update"] == 2 and ckpt["frames"] == 2 * frames_per_update
    assert load_checkpoint(tmp_path)["update"] == 2  # a run folder resolves to latest.pt

    # resume towards 4 updates: state, counters, LR schedule and optimizer continue from update 2
    cfg = config_for(
        RECIPE,
        overrides + [f"train.total_frames={4 * frames_per_update}", f"train.resume={tmp_path}"],
    )
    resumed = Trainer(cfg)
    assert (resumed.update, resumed.frames) == (2, 2 * frames_per_update)
    for name, value in resumed.policy.state_dict().items():
        torch.testing.assert_close(value, ckpt["policy"][name], msg=name)
    adam_steps = [s["step"] for s in resumed.ppo.optimizer.state.values()]
    assert all(float(s) == 2 * 4 * 2 for s in adam_steps)  # 2 updates x 4 epochs x 2 minibatches
    assert resumed.ppo.set_lr(2) == pytest.approx(1.0e-3 * (1 - 2 / 4))
    result = resumed.run()
    assert result["train"]["update"] == 4 and result["train"]["frames"] == 4 * frames_per_update
    final = load_checkpoint(tmp_path)
    assert final["update"] == 4
    assert [row["update"] for row in final["history"]] == [1, 2, 3, 4]
    assert not all(torch.equal(final["policy"][k], ckpt["policy"][k]) for k in ckpt["policy"]), (
        "resumed run did not train"
    )


def test_time_limit_stops_training_early_and_is_logged(tmp_path):
    cfg = config_for(
        RECIPE,
        [
            f"train.output_dir={tmp_path}",
            "train.total_frames=100000",
            "train.time_limit_minutes=1e-9",  # over after building the policy (a warm start)
            "train.final_eval=false",
        ],
    )
    result = Trainer(cfg).run()
    assert result["train"] == {}  # no update: the limit bounds the whole run
    assert result["ended"] == "train.time_limit_minutes=1e-09 reached"
    assert result["train_minutes"] > 0


def test_cpu_limit_stops_training_early(tmp_path):
    base = [f"train.output_dir={tmp_path}", "train.total_frames=100000", "train.final_eval=false"]
    result = Trainer(config_for(RECIPE, base + ["train.cpu_limit_minutes=1e-9"])).run()
    assert result["train"] == {} and result["ended"] == "train.cpu_limit_minutes=1e-09 reached"
    with pytest.raises(ConfigError, match="cpu_limit_minutes"):
        config_for(RECIPE, ["train.cpu_limit_minutes=-1"])


def test_imitation_without_a_teacher_or_with_a_wrong_key_is_a_clear_error(tmp_path):
    cfg = config_for(RECIPE, [f"train.output_dir={tmp_path}", "imitation.updates=1"])
    with pytest.raises(ConfigError, match="no teacher"):
        Trainer(cfg).run()  # the toy recipe's task module defines no make_teacher
    with pytest.raises(ConfigError, match="imitation.update"):
        config_for(RECIPE, ["imitation.update=1"])


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.pt"
    with pytest.raises(CheckpointError, match="no such checkpoint: .*nope.pt"):
        Trainer(config_for(RECIPE, [f"train.resume={missing}"]))
    with pytest.raises(CheckpointError, match="no checkpoint in"):
        load_checkpoint(tmp_path)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="bad.pt: not a readable checkpoint"):
        load_checkpoint(bad)
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not a pixelrl checkpoint"):
        load_checkpoint(tmp_path / "other.pt")


def test_wrong_config_key_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown config key 'ppo.lrr'.*did you mean 'ppo.lr'"):
        config_for(RECIPE, ["ppo.lrr=0.1"])
    with pytest.raises(ConfigError, match=r"'train.total_frame'.*'train.total_frames'"):
        config_for(RECIPE, ["train.total_frame=10"])
    with pytest.raises(
        ConfigError, match=r"'policy.hiden_size'.*did you mean 'policy.hidden_size'"
    ):
        Trainer(config_for(RECIPE, ["policy.hiden_size=8", f"train.output_dir={tmp_path}"]))
    with pytest.raises(KeyError, match="unknown recipe 'embodied/pointnv'.*embodied/pointnav"):
        config_for("embodied/pointnv")
    bad = tmp_path / "bad.yaml"
    bad.write_text("recipe: test/toy\nppo:\n  clip_eps: 0.1\n")
    with pytest.raises(ConfigError, match=rf"'ppo.clip_eps' \(in {bad}\).*'ppo.clip'"):
        config_for(str(bad))


def test_config_overrides_are_typed():
    cfg = config_for(
        RECIPE,
        ["ppo.lr=3e-4", "env.num_envs=2", "env.kwargs.max_episode_steps=9", "train.resume=null"],
    )
    assert cfg.ppo.lr == pytest.approx(3e-4) and isinstance(cfg.ppo.lr, float)
    assert cfg.env.num_envs == 2 and cfg.env.kwargs == {"image": 16, "max_episode_steps": 9}
    assert cfg.train.resume is None
    assert cfg.ppo.clip == 0.2 and cfg.ppo.epochs == 4 and cfg.ppo.num_minibatches == 2  # habitat's
    assert np.isclose(cfg.ppo.gamma, 0.99) and np.isclose(cfg.ppo.gae_lambda, 0.95)


def test_recipes_say_their_kind_and_each_trainer_takes_its_own():
    from pixelrl.config import ConfigError
    from pixelrl.recipes import RECIPES, register_recipe
    from pixelrl.train import Trainer, config_for

    kinds = {name: r.kind for name, r in RECIPES.items()}
    assert kinds["gui/sft"] == kinds["embodied/vlm-grpo"] == "text"
    assert kinds["embodied/pointnav"] == kinds["gui/miniwob"] == "ppo"
    for name in ("gui/sft", "embodied/vlm-sft"):  # a text module needs no make_envs any more
        assert callable(RECIPES[name].load_task().run_recipe)
    with pytest.raises(ValueError, match="kind must be one of"):
        register_recipe("x/y", "embodied/configs/pointnav.yaml", "pixelrl.embodied.task", "rl")
    cfg = config_for("embodied/pointnav-small")
    cfg.recipe = "gui/sft"
    with pytest.raises(ConfigError, match="trains a text policy"):
        Trainer(cfg)
