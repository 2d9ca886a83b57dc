"""The RL core's pieces against hand-computed values: GAE, the PPO loss, storage and collection."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from toy_nav import ToyPointNav, make_toy_vec_env

from pixelrl.rl.collect import RolloutCollector
from pixelrl.rl.gae import compute_gae
from pixelrl.rl.normalize import RunningMeanStd
from pixelrl.rl.ppo import PPO, PPOConfig, ppo_loss
from pixelrl.rl.storage import RolloutStorage

torch.set_num_threads(1)  # small models on a shared CPU: one thread is faster and steadier


def test_gae_matches_hand_computed_example():
    # one env, 3 steps, the episode ends after step 1 (so step 1 does not bootstrap from step 2)
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [1.5], [2.0]])  # values[3] bootstraps step 2
    next_masks = torch.tensor([[1.0], [0.0], [1.0]])
    g, lam = 0.9, 0.8
    # by hand, backwards:
    d2 = 3.0 + g * 2.0 - 1.5  # 3.3
    a2 = d2
    d1 = 2.0 + 0.0 - 1.0  # episode ended: no bootstrap
    a1 = d1  # and no advantage flows back across the boundary
    d0 = 1.0 + g * 1.0 - 0.5  # 1.4
    a0 = d0 + g * lam * a1  # 1.4 + 0.72 = 2.12
    adv, ret = compute_gae(rewards, values, next_masks, g, lam)
    assert adv[:, 0].tolist() == pytest.approx([a0, a1, a2])
    assert ret[:, 0].tolist() == pytest.approx([a0 + 0.5, a1 + 1.0, a2 + 1.5])


def test_gae_with_lambda_one_gives_discounted_returns():
    rewards = torch.tensor([[1.0], [1.0], [1.0]])
    values = torch.zeros(4, 1)
    _, ret = compute_gae(rewards, values, torch.ones(3, 1), gamma=0.5, lam=1.0)
    assert ret[:, 0].tolist() == pytest.approx([1.75, 1.5, 1.0])


def test_ppo_loss_terms():
    adv = torch.tensor([1.0, -1.0, 2.0])
    old_lp = torch.log(torch.tensor([0.5, 0.5, 0.5]))
    # unchanged policy: ratio 1, the policy loss is -mean(A), nothing clipped
    terms = ppo_loss(
        old_lp, old_lp, adv, torch.zeros(3), torch.zeros(3), torch.zeros(3), torch.ones(3)
    )
    assert float(terms["policy_loss"]) == pytest.approx(-adv.mean().item())
    assert float(terms["clip_fraction"]) == 0.0
    assert float(terms["approx_kl"]) == pytest.approx(0.0, abs=1e-7)

    # ratio 2 everywhere: positive advantages clipped at 1.2, the negative one is not (min)
    new_lp = old_lp + np.log(2.0)
    terms = ppo_loss(
        new_lp,
        old_lp,
        adv,
        torch.zeros(3),
        torch.zeros(3),
        torch.zeros(3),
        torch.zeros(3),
        clip=0.2,
    )
    expected = -(1.2 * 1.0 + 2.0 * -1.0 + 1.2 * 2.0) / 3
    assert float(terms["policy_loss"]) == pytest.approx(expected)
    assert float(terms["clip_fraction"]) == 1.0

    # value clipping: old 0, new 1, target 1 -> clipped value 0.2 has the larger error 0.64
    v, old_v, ret = torch.ones(1), torch.zeros(1), torch.ones(1)
    lp = torch.zeros(1)
    clipped = ppo_loss(lp, lp, torch.zeros(1), v, old_v, ret, torch.zeros(1), clip=0.2)
    plain = ppo_loss(
        lp, lp, torch.zeros(1), v, old_v, ret, torch.zeros(1), clip=0.2, clip_value_loss=False
    )
    assert float(clipped["value_loss"]) == pytest.approx(0.5 * 0.64)
    assert float(plain["value_loss"]) == pytest.approx(0.0)

    # total = policy + 0.5 value - 0.01 entropy
    ent = torch.full((1,), 1.3)
    t = ppo_loss(lp, lp, torch.ones(1), torch.zeros(1), torch.zeros(1), torch.full((1,), 0.1), ent)
    assert float(t["loss"]) == pytest.approx(-1.0 + 0.5 * 0.5 * 0.01 - 0.01 * 1.3)


def test_running_mean_std_matches_numpy():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(500, 2))
    rms = RunningMeanStd((2,), epsilon=0.0)
    for chunk in np.array_split(data, 7):
        rms.update(torch.as_tensor(chunk))
    assert rms.mean.numpy() == pytest.approx(data.mean(0))
    assert rms.var.numpy() == pytest.approx(data.var(0))


def _policy(envs):
    from pixelrl.embodied.policy import PointNavResNetPolicy

    torch.manual_seed(0)
    return PointNavResNetPolicy(
        envs.single_observation_space,
        envs.single_action_space,
        hidden_size=32,
        base_planes=8,
        ngroups=4,
        feature_size=64,
    )


def test_evaluate_replays_the_logprobs_of_collection():
    """The recurrent replay in ``evaluate`` (state0, masks, previous actions) must reproduce,
    before any update, exactly what ``act`` computed step by step across episode boundaries."""
    envs = make_toy_vec_env(3, max_episode_steps=7)
    policy = _policy(envs)
    storage = RolloutStorage(
        20, 3, envs.single_observation_space, envs.single_action_space, policy.initial_state(3)
    )
    collector = RolloutCollector(envs, policy, storage, seed=0)
    for _ in range(2):  # the second rollout starts mid-episode from a non-zero state
        rollout = collector.collect()
        assert (storage.masks[1:] == 0).any(), "episodes should end inside the rollout"
        with torch.no_grad():
            logprobs, values, entropy = policy.evaluate(
                {k: v[:20] for k, v in storage.obs.items()},
                storage.state0,
                storage.actions,
                storage.masks[:20],
            )
        torch.testing.assert_close(logprobs, storage.logprobs, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(values, storage.values[:20], atol=1e-5, rtol=1e-5)
    assert rollout.frames == 60
    assert all({"success", "spl", "return", "length"} <= set(ep) for ep in rollout.episodes)


def test_masks_mark_episode_starts_and_autoreset_modes_agree():
    """SAME_STEP and NEXT_STEP vector envs give the same transitions (the collector resets
    NEXT_STEP envs itself instead of wasting a step)."""
    results = []
    for mode in (gym.vector.AutoresetMode.SAME_STEP, gym.vector.AutoresetMode.NEXT_STEP):
        envs = gym.vector.SyncVectorEnv(
            [lambda: ToyPointNav(max_episode_steps=5) for _ in range(2)], autoreset_mode=mode
        )
        policy = _policy(envs)
        storage = RolloutStorage(
            12, 2, envs.single_observation_space, envs.single_action_space, policy.initial_state(2)
        )
        torch.manual_seed(1)
        rollout = RolloutCollector(
            envs, policy, storage, seed=3, bootstrap_truncated=False
        ).collect()
        results.append(
            (
                storage.masks.clone(),
                storage.rewards.clone(),
                storage.obs["depth"].clone(),
                rollout.episodes,
            )
        )
    (m1, r1, o1, e1), (m2, r2, o2, e2) = results
    torch.testing.assert_close(m1, m2)
    torch.testing.assert_close(r1, r2)
    torch.testing.assert_close(o1, o2)
    assert [ep["length"] for ep in e1] == [ep["length"] for ep in e2]
    # every episode is at most 5 steps: a 0 in masks at least every 5 steps
    assert m1[0].eq(0).all()
    for n in range(2):
        starts = torch.nonzero(m1[:, n] == 0).flatten().tolist() + [13]
        assert max(b - a for a, b in zip(starts, starts[1:])) <= 5


def test_ppo_update_moves_the_policy_and_decays_lr():
    envs = make_toy_vec_env(2)
    policy = _policy(envs)
    storage = RolloutStorage(
        16, 2, envs.single_observation_space, envs.single_action_space, policy.initial_state(2)
    )
    ppo = PPO(policy, PPOConfig(num_steps=16), total_updates=4)
    assert ppo.set_lr(0) == pytest.approx(2.5e-4)
    assert ppo.set_lr(2) == pytest.approx(1.25e-4)
    before = [p.detach().clone() for p in policy.parameters()]
    rollout = RolloutCollector(envs, policy, storage, seed=0).collect()
    ppo.compute_advantages(storage, rollout.next_value)
    stats = ppo.update(storage)
    assert {
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clip_fraction",
        "grad_norm",
    } <= set(stats)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    with pytest.raises(ValueError, match="num_minibatches"):
        next(storage.minibatches(3))


def test_critic_only_update_fits_values_and_leaves_the_policy_alone():
    envs = make_toy_vec_env(2)
    policy = _policy(envs)
    storage = RolloutStorage(
        16, 2, envs.single_observation_space, envs.single_action_space, policy.initial_state(2)
    )
    ppo = PPO(policy, PPOConfig(num_steps=16, epochs=8, lr=1e-2, critic_warmup_updates=1))
    rollout = RolloutCollector(envs, policy, storage, seed=0).collect()
    ppo.compute_advantages(storage, rollout.next_value)
    critic = {id(p) for p in policy.critic_parameters()}
    before = {name: p.detach().clone() for name, p in policy.named_parameters()}

    def value_error() -> float:
        with torch.no_grad():
            _, values, _ = policy.evaluate(
                {k: v[:16] for k, v in storage.obs.items()}, storage.state0,
                storage.actions, storage.masks[:16],
            )  # fmt: skip
        return float(((values - storage.returns[:16]) ** 2).mean())

    error = value_error()
    ppo.update(storage, critic_only=True)
    assert value_error() < error
    for name, p in policy.named_parameters():
        moved = not torch.equal(before[name], p)
        assert moved == (id(p) in critic), name
    # a run resumed inside the warm-up keeps the critic's Adam state
    resumed = PPO(policy, ppo.config)
    resumed.load_state_dict(ppo.state_dict())
    assert resumed.critic_optimizer.state_dict()["state"].keys() == (
        ppo.critic_optimizer.state_dict()["state"].keys()
    )


def test_reward_and_value_normalisation_update():
    from pixelrl.rl.normalize import RewardNormalizer

    envs = make_toy_vec_env(2)
    policy = _policy(envs)
    storage = RolloutStorage(
        16, 2, envs.single_observation_space, envs.single_action_space, policy.initial_state(2)
    )
    reward_norm = RewardNormalizer(2, gamma=0.99)
    ppo = PPO(policy, PPOConfig(num_steps=16, value_norm=True, reward_norm=True))
    rollout = RolloutCollector(
        envs, policy, storage, seed=0, reward_transform=reward_norm
    ).collect()
    ppo.compute_advantages(storage, rollout.next_value)
    stats = ppo.value_normalizer.stats
    assert float(stats.count) > 30  # 32 returns were added
    assert float(stats.mean) == pytest.approx(float(storage.returns.mean()), rel=1e-3, abs=1e-4)
    assert float(reward_norm.stats.count) > 30
    assert all(np.isfinite(v) for v in ppo.update(storage).values())
    state = ppo.state_dict()
    assert "value_normalizer" in state


def test_storage_rejects_text_observations_unless_left_out():
    space = gym.spaces.Dict(
        {
            "screenshot": gym.spaces.Box(0, 255, (8, 8, 3), np.uint8),
            "instruction": gym.spaces.Text(20),
        }
    )
    with pytest.raises(TypeError, match="observation 'instruction'.*obs_keys"):
        RolloutStorage(4, 2, space, gym.spaces.Discrete(3), {})
    storage = RolloutStorage(4, 2, space, gym.spaces.Discrete(3), {}, obs_keys=["screenshot"])
    assert list(storage.obs) == ["screenshot"] and storage.obs["screenshot"].dtype == torch.uint8


def test_next_step_reset_steps_get_no_weight():
    """A NEXT_STEP vector env that cannot reset single envs: its reset steps are stored with
    valid 0, the observation after them starts the episode, and the replay still matches."""
    from toy_nav import NextStepVecEnv

    envs = NextStepVecEnv(3, max_episode_steps=4)
    policy = _policy(envs)
    storage = RolloutStorage(
        24, 3, envs.single_observation_space, envs.single_action_space, policy.initial_state(3)
    )
    rollout = RolloutCollector(envs, policy, storage, seed=0).collect()
    done = storage.masks[1:25] == 0  # episode ended at step t, or step t was a reset step
    valid = storage.valid[:24]
    assert (valid == 0).any(), "some episodes should end inside the rollout"
    for n in range(3):
        for t in range(24):
            if valid[t, n] == 0:  # a reset step follows an episode end, has reward 0 ...
                assert t > 0 and done[t - 1, n] and storage.rewards[t, n] == 0
                assert storage.masks[t + 1, n] == 0  # ... and the next observation starts anew
    assert rollout.frames == int(valid.sum()) < 24 * 3
    assert all(ep["length"] <= 4 for ep in rollout.episodes)  # reset steps are not counted
    with torch.no_grad():
        logprobs, values, _ = policy.evaluate(
            {k: v[:24] for k, v in storage.obs.items()},
            storage.state0,
            storage.actions,
            storage.masks[:24],
        )
    torch.testing.assert_close(logprobs, storage.logprobs, atol=1e-5, rtol=1e-5)
    ppo = PPO(policy, PPOConfig(num_steps=24, num_minibatches=3))
    ppo.compute_advantages(storage, rollout.next_value)
    assert all(np.isfinite(v) for v in ppo.update(storage).values())


def test_ppo_loss_weights_ignore_masked_samples():
    lp, adv = torch.zeros(4), torch.tensor([1.0, 2.0, 100.0, -50.0])
    w = torch.tensor([1.0, 1.0, 0.0, 0.0])
    terms = ppo_loss(
        lp, lp, adv, torch.zeros(4), torch.zeros(4), torch.zeros(4), torch.ones(4), weights=w
    )
    assert float(terms["policy_loss"]) == pytest.approx(-1.5)
