"""The pointer policy's memory (issue 54, ``policy.memory: actions``): the episode's earlier actions
as input, carried step by step by ``act``, rebuilt from the rollout by ``evaluate`` (reset where an
episode starts), and cloned from recorded episodes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pixelrl.gui_agent import ppo_task
from pixelrl.rl.policy import mask_state
from pixelrl.train import config_for

SCREEN = [320, 240]
MEMORY = ("policy.memory=actions", "policy.memory_actions=2")


def _cfg(*overrides: str):
    return config_for(
        "gui/ppo",
        [f"env.kwargs.screen_size={SCREEN}", "env.id=pixelrl/Desktop-TypeInField-v0",
         "policy.bc_steps=0", *overrides],
    )  # fmt: skip


def _policy_and_envs(*overrides: str, num_envs: int = 2):
    cfg = _cfg(*overrides)
    envs = ppo_task.make_envs(cfg, num_envs, 0, "train")
    torch.manual_seed(0)
    policy = ppo_task.make_policy(cfg, envs.single_observation_space, envs.single_action_space)
    return policy, envs


def _tensors(obs) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def test_memory_is_off_by_default_and_adds_nothing():
    plain, envs = _policy_and_envs()
    envs.close()
    assert plain.initial_state(3) == {} and plain.memory_kinds is None
    with_memory, envs = _policy_and_envs(*MEMORY)
    envs.close()
    extra = set(with_memory.state_dict()) - set(plain.state_dict())
    assert extra == {"memory_kinds.weight", "memory_kinds.bias"}
    assert with_memory.initial_state(3)["last_actions"].shape == (3, 2, 5)


def test_evaluate_over_a_rollout_equals_act_step_by_step_with_episode_resets():
    policy, envs = _policy_and_envs(*MEMORY)
    obs, _ = envs.reset(seed=0)
    state = state0 = policy.initial_state(2)
    seen, actions, logprobs, values, masks = [], [], [], [], [torch.ones(2)]
    with torch.no_grad():
        for t in range(10):  # sampled actions, so some episodes end (12-step limit or success)
            o = _tensors(obs)
            step = policy.act(o, state)
            seen.append(o)
            actions.append(step.actions)
            logprobs.append(step.logprobs)
            values.append(step.values)
            obs, _, terminated, truncated, _ = envs.step(step.actions.numpy())
            done = torch.as_tensor(terminated | truncated)
            if t == 4:  # force an episode start in env 0 mid-rollout, as a done would
                done[0] = True
            masks.append((~done).float())
            state = mask_state(step.state, masks[-1])
        batch = {k: torch.stack([o[k] for o in seen]) for k in seen[0]}
        lp, v, _ = policy.evaluate(batch, state0, torch.stack(actions), torch.stack(masks[:-1]))
    envs.close()
    assert torch.allclose(lp, torch.stack(logprobs), atol=1e-4)
    assert torch.allclose(v, torch.stack(values), atol=1e-5)


def test_memory_changes_the_click_and_a_new_episode_forgets_it():
    policy, envs = _policy_and_envs(*MEMORY)
    obs, _ = envs.reset(seed=0)
    envs.close()
    o = _tensors(obs)
    fresh = policy.initial_state(2)
    with torch.no_grad():
        assert policy.spec.kinds[0] == "click"
        clicked = torch.tensor([[0, 37, 1, 0, 0], [0, 90, 2, 0, 0]])  # a click at cells 37, 90
        after = policy.remember(fresh, clicked)
        assert torch.equal(after["last_actions"][:, 0], clicked + 1)
        assert (after["last_actions"][:, 1] == 0).all()
        cells_fresh = policy.heads(o, fresh)["cell"]
        cells_after = policy.heads(o, after)["cell"]
        assert not torch.allclose(cells_fresh, cells_after)  # it reads its history
        forgot = mask_state(after, torch.tensor([0.0, 1.0]))
        cells_forgot = policy.heads(o, forgot)["cell"]
    assert torch.equal(cells_forgot[0], cells_fresh[0])
    assert torch.equal(cells_forgot[1], cells_after[1])


def test_cloning_with_memory_reads_each_steps_earlier_expert_actions_and_learns():
    from pixelrl.gui_agent.pointer_bc import accuracy, behaviour_clone, expert_samples

    policy, envs = _policy_and_envs(*MEMORY)
    envs.close()
    env = ppo_task.make_env(
        "pixelrl/Desktop-TypeInField-v0", policy.spec, "train", screen_size=tuple(SCREEN)
    )
    data = expert_samples(env, 24, seed=0)
    env.close()
    last = data["last_actions"]
    assert last.shape == (24, 8, 5)
    # a step's memory is the samples before it in its episode, newest first; an episode's first
    # step remembers nothing (type-in-field's expert: click the field, then type)
    starts = np.flatnonzero(last[:, 0, 0] == 0)
    assert starts[0] == 0 and len(starts) > 1
    for i in range(1, 24):
        if i not in starts:
            np.testing.assert_array_equal(last[i, 0], data["action"][i - 1] + 1)
            np.testing.assert_array_equal(last[i, 1:], last[i - 1, :-1])
    losses = behaviour_clone(policy, data, steps=30, batch_size=8, lr=3e-3, seed=0)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert 0.0 <= accuracy(policy, data)["cell"] <= 1.0  # it replays each sample's memory


def test_data_recorded_without_earlier_actions_is_a_one_line_error_for_a_policy_with_memory():
    from pixelrl.gui_agent.pointer_bc import behaviour_clone, expert_samples

    policy, envs = _policy_and_envs(*MEMORY)
    env = envs.envs[0]
    data = expert_samples(env, 4, seed=0)
    envs.close()
    del data["last_actions"]  # as recorded before memory existed
    with pytest.raises(ValueError, match="recorded without") as err:
        behaviour_clone(policy, data, steps=1)
    assert "\n" not in str(err.value)
    plain, envs = _policy_and_envs()
    envs.close()
    behaviour_clone(plain, data, steps=1)  # a policy without memory does not need them


@pytest.mark.parametrize(
    "override, message",
    [("policy.memory=lstmm", "memory must be one of none, actions, got 'lstmm'"),
     ("policy.memory_actions=0", "memory_actions must be an integer >= 1, got 0")],
)  # fmt: skip
def test_wrong_memory_options_are_named(override, message):
    cfg = _cfg(override)
    envs = ppo_task.make_envs(cfg, 1, 0, "train")
    with pytest.raises(ValueError, match=message):
        ppo_task.make_policy(cfg, envs.single_observation_space, envs.single_action_space)
    envs.close()


def test_the_eval_agent_carries_its_memory_through_an_episode_and_forgets_it_after():
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.gui_agent.agents import PointerAgent

    policy, envs = _policy_and_envs(*MEMORY)
    envs.close()
    env = gym.make("pixelrl/Desktop-TypeInField-v0", screen_size=tuple(SCREEN))
    obs, _ = env.reset(seed=1)
    env.close()
    agent = PointerAgent(policy)
    agent.reset()
    for step in range(3):
        agent.act(obs["screenshot"], obs["instruction"])
        remembered = (agent.state["last_actions"][0, :, 0] > 0).sum()
        assert remembered == min(step + 1, 2)  # K = 2 earlier actions at most
    agent.reset()
    assert agent.state == {}
    agent.act(obs["screenshot"], obs["instruction"])
    assert (agent.state["last_actions"][0, :, 0] > 0).sum() == 1


def test_memory_dropout_cuts_a_share_of_histories_to_a_shorter_run():
    from pixelrl.gui_agent.pointer_bc import cut_memories

    last = np.arange(1, 1 + 200 * 8 * 3).reshape(200, 8, 3)  # no zeros: every slot is an action
    assert (cut_memories(last, 0.0, np.random.default_rng(0), 8) == last).all()
    cut = cut_memories(last, 0.5, np.random.default_rng(0), 8)
    kept = (cut != 0).all(-1).sum(1)  # actions left in each history, newest first
    for row, j in enumerate(kept):
        assert (cut[row, :j] == last[row, :j]).all() and (cut[row, j:] == 0).all()
    assert 60 < (kept < 8).sum() < 140  # about half the rows are cut...
    assert set(kept[kept < 8].tolist()) == set(range(8))  # ...to 0 .. 7 actions
    window = cut_memories(last, 1.0, np.random.default_rng(1), 2)  # a policy that keeps 2
    assert set((window != 0).all(-1).sum(1).tolist()) == {0, 1}
