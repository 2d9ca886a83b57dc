"""GRPO: advantages, the clipped token-level loss and the k3 KL against hand-worked values;
GiGPO step-level groups; one update on a tiny VLM moves probability toward the better answer."""

import math
import os

import numpy as np
import pytest
import torch

from pixelrl.rl.grpo import (
    GRPOConfig,
    anchor_key,
    discounted_returns,
    gigpo_advantages,
    group_advantages,
    grpo_loss,
    grpo_update,
    kl_k3,
)

S = 1 / math.sqrt(2)


def test_group_advantages_contiguous_groups():
    adv = group_advantages([1, 0, 0, 1, 2, 2, 2, 2], group_size=4)
    # group 1: mean 0.5, sample std sqrt(1/3) -> ±0.5·sqrt(3); group 2: all equal -> 0
    h = 0.5 * math.sqrt(3)
    np.testing.assert_allclose(adv, [h, -h, -h, h, 0, 0, 0, 0])


def test_group_advantages_by_ids_singletons_and_dr_grpo():
    rewards, ids = [1, 5, 3, 7], ["a", "b", "a", "c"]
    np.testing.assert_allclose(group_advantages(rewards, group_ids=ids), [-S, 0, S, 0])
    np.testing.assert_allclose(
        group_advantages(rewards, group_ids=ids, scale_by_std=False), [-1, 0, 1, 0]
    )


def test_group_advantages_bad_input():
    with pytest.raises(ValueError, match="groups of 3"):
        group_advantages([1, 2, 3, 4], group_size=3)
    with pytest.raises(ValueError, match="exactly one"):
        group_advantages([1, 2])
    with pytest.raises(ValueError, match="finite"):
        group_advantages([1, float("nan")], group_size=2)


LOGP = [[-1.0, -2.0], [-0.5, 0.0]]
OLD = [[-1.0, -2.5], [-0.5, -1.0]]
MASK = [[1, 1], [1, 0]]
ADV = [1.0, -2.0]


def test_grpo_loss_hand_worked():
    logp = torch.tensor(LOGP, requires_grad=True)
    loss, stats = grpo_loss(logp, torch.tensor(OLD), torch.tensor(ADV), torch.tensor(MASK))
    # tokens: ratio 1 -> -1; ratio e^0.5 clipped at 1.2 -> -1.2; ratio 1, A=-2 -> +2; (masked)
    assert loss.item() == pytest.approx((-1 - 1.2 + 2) / 3)
    assert stats["clip_fraction"] == pytest.approx(1 / 3)
    loss.backward()
    # d/dlogp of -ratio·A/3 at ratio 1 is -A/3; the clipped token and the masked one get none
    np.testing.assert_allclose(logp.grad.numpy(), [[-1 / 3, 0], [2 / 3, 0]], atol=1e-7)
    seq, _ = grpo_loss(
        torch.tensor(LOGP), torch.tensor(OLD), torch.tensor(ADV), torch.tensor(MASK),
        loss_aggregation="sequence",
    )  # fmt: skip
    assert seq.item() == pytest.approx(((-1 - 1.2) / 2 + 2) / 2)


def test_grpo_loss_clip_higher_and_negative_advantages():
    # A < 0 and ratio below 1 - eps: clipped (no push further down); clip_high widens the top.
    logp, old = torch.tensor([[-2.0, 0.0]]), torch.tensor([[-1.0, -0.2]])
    loss, _ = grpo_loss(logp, old, torch.tensor([-1.0]), torch.ones(1, 2), clip_high=0.28)
    r1, r2 = math.exp(-1), math.exp(0.2)  # 0.37 -> max(0.37, 0.8)·1 ; 1.22 (< 1.28, unclipped)
    assert loss.item() == pytest.approx((max(r1, 0.8) + r2) / 2)


def test_k3_kl_hand_worked_and_in_the_loss():
    d = -0.5
    k3 = kl_k3(torch.tensor([0.0]), torch.tensor([d]))
    assert k3.item() == pytest.approx(math.exp(d) - d - 1)
    assert kl_k3(torch.tensor([-1.3]), torch.tensor([-1.3])).item() == 0
    ref = torch.tensor([[-1.5, -2.0], [-0.5, 0.0]])
    loss, stats = grpo_loss(
        torch.tensor(LOGP), torch.tensor(OLD), torch.tensor(ADV), torch.tensor(MASK),
        ref_logprobs=ref, kl_coef=0.1,
    )  # fmt: skip
    kl_mean = (math.exp(-0.5) + 0.5 - 1) / 3
    assert stats["kl"] == pytest.approx(kl_mean)
    assert loss.item() == pytest.approx((-1 - 1.2 + 2) / 3 + 0.1 * kl_mean)


def test_discounted_returns():
    np.testing.assert_allclose(discounted_returns([1, 0, 2], 0.5), [1.5, 1.0, 2.0])


def test_anchor_key_names_observations_exactly():
    img = np.zeros((4, 5, 3), np.uint8)
    a = anchor_key({"screenshot": img, "instruction": "Click OK"})
    assert a == anchor_key({"instruction": "Click OK", "screenshot": img.copy()})
    changed = img.copy()
    changed[3, 4, 2] = 1
    assert a != anchor_key({"screenshot": changed, "instruction": "Click OK"})
    assert a != anchor_key({"screenshot": img, "instruction": "Click Cancel"})
    assert a != anchor_key({"screenshot": img.astype(np.int16), "instruction": "Click OK"})


def test_gigpo_advantages_hand_worked():
    # Two episodes from one seed. Both start in s0; both pass through s1 (at different steps).
    out = gigpo_advantages(
        episode_rewards=[[0, 1], [0, 0, 0]],
        episode_groups=["seed0", "seed0"],
        step_keys=[["s0", "s1"], ["s0", "s2", "s1"]],
        gamma=0.5,
    )
    # episode returns 1 vs 0 -> ±S; step returns: s0 {0.5, 0} -> ±S, s1 {1, 0} -> ±S, s2 alone -> 0
    np.testing.assert_allclose(out.episode, [S, S, -S, -S, -S])
    np.testing.assert_allclose(out.step, [S, S, -S, 0, -S])
    np.testing.assert_allclose(out.advantages, out.episode + out.step)
    assert out.episode_index.tolist() == [0, 0, 1, 1, 1]
    assert out.step_groups[0] == out.step_groups[2] and out.step_groups[1] == out.step_groups[4]


def test_gigpo_keeps_different_seeds_apart():
    out = gigpo_advantages([[1], [0], [5], [3]], ["a", "a", "b", "b"], [["s"], ["s"], ["s"], ["s"]])
    np.testing.assert_allclose(out.episode, [S, -S, S, -S])
    np.testing.assert_allclose(out.step, [S, -S, S, -S])  # same key "s", but per seed
    assert len(set(out.step_groups.tolist())) == 2


def test_one_grpo_update_on_a_tiny_vlm_prefers_the_rewarded_answer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    pytest.importorskip("transformers")
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.rewards import gui_g2_reward
    from pixelrl.vision.vlm import load_vlm

    policy = load_vlm("tiny-qwen2_vl", GUIActionCodec(), seed=0)
    screen = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    box = [20, 10, 40, 30]  # the target, in pixels of the 64×48 screen
    answers = ["click(start_box='(470,417)')", "click(start_box='(940,900)')"]  # in box / far
    rewards = gui_g2_reward(answers, [box] * 2, screen_size=(64, 48))
    assert rewards[0] > 0.9 and rewards[1] < 0.01
    adv = group_advantages(rewards, group_size=2)
    args = ([screen] * 2, ["Click the box"] * 2, answers)
    before = policy.score(*args).sequence_logprobs.detach()
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=1e-3)
    stats = grpo_update(policy, optimizer, *args, adv, config=GRPOConfig(kl_coef=0.0))
    after = policy.score(*args).sequence_logprobs.detach()
    assert stats["grad_norm"] > 0 and stats["ratio_mean"] == pytest.approx(1.0)
    assert after[0] > before[0]  # the rewarded answer became more likely
    assert after[1] < before[1]  # the other one less


def test_grpo_with_lora_adapters_and_a_kl_reference():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    pytest.importorskip("peft")
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    policy = load_vlm("tiny-llava", GUIActionCodec(), seed=1)
    reference = policy.frozen_copy()
    policy.add_lora(r=4, alpha=8)
    trainable = policy.trainable_parameters()
    assert trainable and all(
        "lora_" in n for n, p in policy.model.named_parameters() if p.requires_grad
    )
    frozen_before = {
        n: p.clone() for n, p in policy.model.named_parameters() if not p.requires_grad
    }

    screen = np.zeros((48, 64, 3), np.uint8)
    answers = ["click(start_box='(100,100)')", "type(content='no')"]
    args = ([screen] * 2, ["Click the box"] * 2, answers)
    adv = group_advantages([1.0, 0.0], group_size=2)
    optimizer = torch.optim.Adam(trainable, lr=1e-2)
    cfg = GRPOConfig(kl_coef=0.04)
    first = grpo_update(policy, optimizer, *args, adv, ref_policy=reference, config=cfg)
    assert first["kl"] == pytest.approx(0.0, abs=1e-9)  # LoRA starts as the identity
    before = policy.score(*args).sequence_logprobs.detach()
    second = grpo_update(policy, optimizer, *args, adv, ref_policy=reference, config=cfg)
    after = policy.score(*args).sequence_logprobs.detach()
    assert second["kl"] > 0 and after[0] > before[0]
    for n, p in policy.model.named_parameters():
        if not p.requires_grad:
            assert torch.equal(p, frozen_before[n]), n  # only the adapters moved
