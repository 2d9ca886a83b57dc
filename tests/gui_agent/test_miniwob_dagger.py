"""DAgger for gui/miniwob (issue 54): the cloned policy plays, the oracle labels each page it reaches."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from pixelrl.envs.gui_action import Action
from pixelrl.envs.web.oracle import Step, same_step
from pixelrl.gui_agent import miniwob_task
from pixelrl.gui_agent.pointer_bc import agrees, corrected_samples
from pixelrl.train import config_for

pytest.importorskip("miniwob", reason="needs the web extra: pip install 'pixelrl[web]'")
needs_browser = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("chromedriver") is None,
    reason="needs Chromium and chromedriver: apt-get install chromium chromium-driver",
)


def test_a_played_action_is_the_planned_step_when_it_does_what_the_step_does():
    step = Step(Action.click(50, 60), [40, 50, 70, 80], note="post")
    assert same_step(step, Action.click(41, 79))  # anywhere in the box
    assert not same_step(step, Action.click(39, 60))
    assert not same_step(step, Action.move(50, 60))  # another kind at the same point
    typed = Step(Action.type_text("Pavia"))
    assert same_step(typed, Action.type_text("Pavia"))
    assert not same_step(typed, Action.type_text("Pavi"))
    assert same_step(Step(Action.wait()), Action.wait())
    assert not same_step(Step(Action.click(5, 5)), Action.click(5, 6))  # no box: the point


def test_agreeing_needs_the_kind_and_a_right_point_text_or_key():
    kinds = ["click", "type", "key"]
    mask = np.zeros((4, 1), dtype=bool)
    mask[2, 0] = True
    label = np.array([0, 2, 0, 0, 0])
    assert agrees(np.array([0, 2, 0, 1, 1]), label, mask, kinds)  # text and key unused by a click
    assert not agrees(np.array([0, 3, 0, 0, 0]), label, mask, kinds)
    assert not agrees(np.array([1, 2, 0, 0, 0]), label, mask, kinds)
    assert agrees(np.array([1, 0, 0, 1, 0]), np.array([1, 3, 0, 1, 0]), mask, kinds)
    assert not agrees(np.array([1, 0, 0, 0, 0]), np.array([1, 3, 0, 1, 0]), mask, kinds)


@needs_browser
def test_each_page_the_policy_reaches_is_labelled_with_the_oracles_action():
    cfg = config_for("gui/miniwob", ["env.tasks=[click-collapsible,click-tab]"])
    env = miniwob_task._train_env(cfg, "click-collapsible", record=False)
    spec = env.pointer_spec
    corner = np.zeros(len(spec.nvec), dtype=np.int64)  # a click on the top-left cell: no target
    try:
        data = corrected_samples(env, lambda obs, history: corner, episodes=2, seed=0, patience=3)
    finally:
        env.close()
    # three wrong clicks an episode, each page labelled with the oracle's click on the section
    assert len(data["action"]) == 6
    assert (data["action"][:, 0] == spec.kinds.index("click")).all()
    assert not data["point_mask"][:, 0].any()  # the corner is never where the oracle clicks
    assert data["point_mask"].any(axis=(1, 2)).all()
    # the memory is the policy's own actions (what it will see when it acts), newest first
    assert (data["last_actions"][[0, 3]] == 0).all()
    np.testing.assert_array_equal(data["last_actions"][2, :2], [corner + 1, corner + 1])
    assert (data["last_actions"][2, 2:] == 0).all()
    other = miniwob_task._train_env(cfg, "click-tab", record=False)
    try:  # click-tab's plan is made at reset: its next step is no label for a page it did not reach
        with pytest.raises(ValueError, match="cannot label pages it did not reach"):
            corrected_samples(other, lambda obs, history: corner, episodes=1)
    finally:
        other.close()


@needs_browser
def test_the_recipe_clones_then_runs_a_dagger_round(tmp_path, capsys):
    from pixelrl.train import train

    data = tmp_path / "oracle.npz"
    common = ["env.tasks=[click-collapsible,click-tab]", "env.num_envs=2", "policy.bc_samples=8",
              "policy.bc_steps=2", "policy.dagger_episodes=1", "policy.dagger_steps=2",
              "policy.bc_workers=2", "train.total_frames=32", "ppo.num_steps=8",
              "ppo.critic_warmup_updates=1", "train.eval_interval=0", "train.final_eval=false",
              "train.progress=true", f"policy.bc_data={data}"]  # fmt: skip
    result = train(config_for("gui/miniwob", [*common, f"train.output_dir={tmp_path / 'run'}"]))
    assert result["train"]["frames"] == 32
    out = capsys.readouterr().out
    # click-collapsible's oracle replans, click-tab's does not: one task plays the round
    assert "pages labelled on 1 tasks (1 episodes a task)" in out
    assert data.exists()
    # a second run (another init, no cloning) reads the samples back for its DAgger round
    again = [*common, "policy.bc_steps=0", f"train.output_dir={tmp_path / 'again'}"]
    train(config_for("gui/miniwob", again))
    out = capsys.readouterr().out
    assert f"oracle samples: read from {data}" in out and "pages labelled on 1 tasks" in out
    with pytest.raises(ValueError, match="no task of env.tasks has an oracle that labels"):
        cfg = config_for("gui/miniwob", ["env.tasks=[click-tab]", "policy.dagger_episodes=1"])
        miniwob_task.corrected_data(cfg, None, 1, 0)
