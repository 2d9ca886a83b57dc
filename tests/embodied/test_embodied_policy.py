"""The PointNavResNetPolicy: shapes for PointNav and ObjectNav spaces, GRU and LSTM memory,
input normalisation, and the policy protocol the RL core relies on."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from pixelrl.config import ConfigError, check_kwargs
from pixelrl.embodied.policy import PointNavResNetPolicy
from pixelrl.rl.policy import Policy, mask_state

torch.set_num_threads(1)  # small models on a shared CPU: one thread is faster and steadier

POINTNAV = gym.spaces.Dict(
    {
        "rgb": gym.spaces.Box(0, 255, (32, 32, 3), np.uint8),
        "depth": gym.spaces.Box(0.0, 10.0, (32, 32, 1), np.float32),
        "pointgoal_with_gps_compass": gym.spaces.Box(
            np.array([0, -np.pi], np.float32), np.array([np.inf, np.pi], np.float32)
        ),
    }
)
OBJECTNAV = gym.spaces.Dict(
    {
        "depth": gym.spaces.Box(0.0, 1.0, (32, 32, 1), np.float32),
        "objectgoal": gym.spaces.Box(0, 5, (1,), np.int64),
        "gps": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
        "compass": gym.spaces.Box(-np.pi, np.pi, (1,), np.float32),
    }
)
POINTGOAL = "pointgoal_with_gps_compass"
SMALL = dict(hidden_size=32, base_planes=8, ngroups=4, feature_size=64)


def _batch(space: gym.spaces.Dict, *lead: int, seed: int = 0) -> dict[str, torch.Tensor]:
    space.seed(seed)
    samples = [space.sample() for _ in range(int(np.prod(lead)))]
    return {
        k: torch.as_tensor(np.stack([s[k] for s in samples]).reshape(*lead, *space[k].shape))
        for k in space
    }


@pytest.mark.parametrize("space", [POINTNAV, OBJECTNAV], ids=["pointnav", "objectnav"])
@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_act_and_evaluate_shapes(space, rnn_type):
    policy = PointNavResNetPolicy(
        space, gym.spaces.Discrete(4), rnn_type=rnn_type, rnn_layers=2, use_rgb=True, **SMALL
    )
    assert isinstance(policy, Policy)
    state = policy.initial_state(3)
    actions, logprobs, values, new_state = policy.act(_batch(space, 3), state)
    assert actions.shape == logprobs.shape == values.shape == (3,)
    assert new_state["rnn"].shape == state["rnn"].shape == (3, 4 if rnn_type == "lstm" else 2, 32)
    assert torch.equal(new_state["prev_action"], actions + 1)
    masks = torch.ones(5, 3)
    masks[2, 1] = 0
    lp, v, ent = policy.evaluate(_batch(space, 5, 3), state, torch.randint(0, 4, (5, 3)), masks)
    assert lp.shape == v.shape == ent.shape == (5, 3)
    assert torch.all(ent > 0) and torch.all(ent <= np.log(4) + 1e-6)


def test_memory_is_used_and_reset_by_masks():
    policy = PointNavResNetPolicy(POINTNAV, gym.spaces.Discrete(4), **SMALL)
    obs = _batch(POINTNAV, 2)
    state = policy.initial_state(2)
    _, _, v0, state1 = policy.act(obs, state)
    _, _, v1, _ = policy.act(obs, state1)
    assert not torch.allclose(v0, v1), "the recurrent state should change the output"
    reset = mask_state(state1, torch.tensor([0.0, 1.0]))
    _, _, v2, _ = policy.act(obs, reset)
    assert torch.allclose(v2[0], v0[0]) and torch.allclose(v2[1], v1[1])


def test_input_normalization_tracks_statistics():
    policy = PointNavResNetPolicy(POINTNAV, gym.spaces.Discrete(4), use_rgb=True, **SMALL)
    obs = _batch(POINTNAV, 4, 2)
    policy.update_normalization(obs)
    stats = policy.visual_encoder.normalize.stats
    depth_mean = obs["depth"].double().mean()
    rgb_mean = (obs["rgb"].double() / 255).mean(dim=(0, 1, 2, 3))  # per channel
    assert float(stats.mean[0]) == pytest.approx(float(depth_mean), rel=1e-3)  # depth first
    assert stats.mean[1:].tolist() == pytest.approx(rgb_mean.tolist(), rel=1e-3)


def test_timm_backbone_builds():
    pytest.importorskip("timm")
    policy = PointNavResNetPolicy(
        POINTNAV, gym.spaces.Discrete(4), backbone="timm:resnet10t", **SMALL
    )
    actions, *_ = policy.act(_batch(POINTNAV, 2), policy.initial_state(2))
    assert actions.shape == (2,)


def test_nature_backbone_is_sb3s_nature_cnn():
    sb3 = pytest.importorskip("stable_baselines3.common.torch_layers")
    depth = gym.spaces.Box(0.0, 1.0, (64, 64, 1), np.float32)  # NatureCNN needs >= 36 px
    space = gym.spaces.Dict({"depth": depth, POINTGOAL: POINTNAV[POINTGOAL]})
    policy = PointNavResNetPolicy(space, gym.spaces.Discrete(4), backbone="nature", **SMALL)
    encoder = policy.visual_encoder
    channel_first = gym.spaces.Box(0.0, 1.0, (depth.shape[2], *depth.shape[:2]), np.float32)
    theirs = sb3.NatureCNN(channel_first, features_dim=policy.hidden_size, normalized_image=True)
    ours = list(encoder.backbone.parameters()) + list(encoder.fc.parameters())
    assert [p.shape for p in ours] == [p.shape for p in theirs.parameters()]
    actions, *_ = policy.act(_batch(space, 2), policy.initial_state(2))
    assert actions.shape == (2,)


def test_bad_policy_settings_are_clear_errors():
    with pytest.raises(
        ConfigError, match=r"'policy.hiden_size'.*did you mean 'policy.hidden_size'"
    ):
        check_kwargs(PointNavResNetPolicy, {"hiden_size": 3}, "policy")
    with pytest.raises(ValueError, match="policy.backbone"):
        PointNavResNetPolicy(POINTNAV, gym.spaces.Discrete(4), backbone="vgg", **SMALL)
    with pytest.raises(ValueError, match="rnn_type"):
        PointNavResNetPolicy(POINTNAV, gym.spaces.Discrete(4), rnn_type="transformer", **SMALL)
