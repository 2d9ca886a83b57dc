"""The pointer policy's gesture kinds (issue 54): ``drag`` (a second point: the end cell and
offset heads), ``scroll_up`` / ``scroll_down`` (a direction: the kind), cloned from an expert
that drags; an expert kind the policy lacks is a one-line error, not silently dropped steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pixelrl.envs.gui_action import Action
from pixelrl.gui_agent import ppo_task
from pixelrl.gui_agent.pointer_env import (
    SCROLL_NOTCHES,
    PointerSpec,
    decode_action,
    encode_action,
    pointer_observation,
)
from pixelrl.train import config_for

SCREEN = [320, 240]
DRAG_ENV = "pixelrl/Desktop-DragToTarget-v0"


def _cfg(*overrides: str):
    return config_for(
        "gui/ppo",
        [f"env.kwargs.screen_size={SCREEN}", f"env.id={DRAG_ENV}", "policy.bc_steps=0",
         "policy.image_size=[80,64]",
         *overrides],
    )  # fmt: skip


def test_drag_and_scroll_encode_and_decode_through_the_grid():
    spec = PointerSpec(kinds=("click", "drag", "scroll_up", "scroll_down"))
    assert spec.nvec[5:] == [spec.num_cells, spec.offsets**2]  # the drag's end point
    assert len(PointerSpec(kinds=("click", "scroll_down")).nvec) == 5  # no drag: as before
    _, image_map = pointer_observation(np.zeros((240, 320, 3), np.uint8), "", spec)
    drag = decode_action(
        encode_action(Action.drag(41, 60, 250, 201), spec, image_map), spec, image_map
    )
    half_sub_cell = spec.cell / spec.offsets * (320 / spec.image_size[0]) / 2
    assert drag.kind == "drag"  # each end lands within half a sub-cell of where it was
    error = np.subtract((drag.x, drag.y, drag.x2, drag.y2), (41, 60, 250, 201))
    assert np.abs(error).max() <= half_sub_cell
    for dy, kind in ((20, "scroll_down"), (-3, "scroll_up")):
        sample = encode_action(Action.scroll(100, 100, dy=dy), spec, image_map)
        assert spec.kinds[sample[0]] == kind  # the direction is kept, the amount is the spec's
        played = decode_action(sample, spec, image_map)
        assert played.kind == "scroll" and played.dy == np.sign(dy) * SCROLL_NOTCHES
    assert encode_action(Action.scroll(100, 100, dx=4), spec, image_map) is None  # sideways
    with pytest.raises(ValueError, match="scroll_down"):
        PointerSpec(kinds=("click", "scroll"))  # the error lists the kinds there are


def test_a_policy_with_drag_samples_its_end_point_and_evaluates_what_it_sampled():
    cfg = _cfg("policy.kinds=[click,drag]")
    envs = ppo_task.make_envs(cfg, 2, 0, "train")
    torch.manual_seed(0)
    policy = ppo_task.make_policy(cfg, envs.single_observation_space, envs.single_action_space)
    obs, _ = envs.reset(seed=0)
    obs = {k: torch.as_tensor(v)[None] for k, v in obs.items()}
    flat = {k: v[0] for k, v in obs.items()}
    with torch.no_grad():
        step = policy.act(flat, {})
        lp, _, ent = policy.evaluate(obs, {}, step.actions[None], torch.ones(1, 2))
    envs.close()
    assert step.actions.shape == (2, 7)
    torch.testing.assert_close(lp[0], step.logprobs)
    assert torch.isfinite(ent).all()


def test_cloning_learns_the_drag_of_an_expert_that_drags():
    from pixelrl.gui_agent.pointer_bc import accuracy, behaviour_clone, expert_samples

    cfg = _cfg("policy.kinds=[click,drag]")
    spec = ppo_task.pointer_spec(cfg)
    env = ppo_task.make_env(DRAG_ENV, spec, "train", screen_size=tuple(SCREEN))
    data = expert_samples(env, 8, seed=0)
    env.close()
    kinds = {spec.kinds[k] for k in data["action"][:, 0]}
    assert "drag" in kinds and data["action"].shape == (8, 7)
    torch.manual_seed(0)
    envs = ppo_task.make_envs(cfg, 1, 0, "train")
    policy = ppo_task.make_policy(cfg, envs.single_observation_space, envs.single_action_space)
    envs.close()
    losses = behaviour_clone(policy, data, steps=25, batch_size=8, lr=3e-3, seed=0)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert accuracy(policy, data)["kind"] == 1.0


def test_an_expert_kind_the_policy_lacks_is_a_one_line_error():
    from pixelrl.gui_agent.pointer_bc import expert_samples

    spec = ppo_task.pointer_spec(_cfg())  # kinds: auto, which is click alone here
    env = ppo_task.make_env(DRAG_ENV, spec, "train", screen_size=tuple(SCREEN))
    try:
        with pytest.raises(ValueError, match=r"add 'drag' to policy.kinds") as err:
            expert_samples(env, 4, seed=0)
    finally:
        env.close()
    assert "\n" not in str(err.value) and "DragToTarget" in str(err.value)
