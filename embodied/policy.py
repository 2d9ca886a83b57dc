"""The navigation actor-critic, shaped like habitat-baselines' ``PointNavResNetPolicy``.

Per step, for each env::

    depth / RGB  --RunningMeanAndVar--> ResNet --compress--> fc  ---------------\
    previous action (0 = none, else a + 1) --Embedding(A + 1, 32) ---------------+--> GRU --> actor (logits)
    PointNav goal (rho, cos phi, sin phi) --Linear(3, 32) -----------------------+          \\-> critic (value)
    ObjectNav: objectgoal --Embedding(K, 32), gps --Linear, compass (cos, sin) --Linear --/

It follows the ``pixelrl.rl.policy.Policy`` protocol: ``initial_state``, ``act`` (one step of B
envs) and ``evaluate`` (T steps of N envs from the state before the first step, resetting the
memory where ``masks`` is 0). The state is ``{"rnn": (B, layers, hidden), "prev_action": (B,)}``;
zeros mean "new episode". Input statistics are updated by the trainer through
:meth:`update_normalization`, never inside ``act``/``evaluate``, so collection and update see the
same network and DD-PPO ranks stay in step.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import torch
from torch import nn

from pixelrl.embodied.resnet import VisualEncoder
from pixelrl.rl.policy import PolicyStep, State

POINTGOAL = "pointgoal_with_gps_compass"
VISUAL_KEYS = ("depth", "rgb")


class PointNavResNetPolicy(nn.Module):
    """ResNet + GRU actor-critic for PointNav and ObjectNav (module doc)."""

    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        action_space: gym.spaces.Discrete,
        hidden_size: int = 256,
        rnn_type: str = "gru",
        rnn_layers: int = 1,
        backbone: str = "resnet",
        base_planes: int = 16,
        ngroups: int = 8,
        layers: Sequence[int] = (1, 1, 1, 1),
        feature_size: int = 512,
        use_depth: bool = True,
        use_rgb: bool = False,
        embed_dim: int = 32,
        normalize_inputs: bool = True,
    ):
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise TypeError(
                f"PointNavResNetPolicy needs a Discrete action space, got {action_space}"
            )
        spaces = observation_space.spaces
        self.num_actions = int(action_space.n)
        self.visual_keys = [
            k for k, on in (("depth", use_depth), ("rgb", use_rgb)) if on and k in spaces
        ]
        rnn_input = 0

        self.visual_encoder = None
        if self.visual_keys:
            image_size = tuple(spaces[self.visual_keys[0]].shape[:2])
            channels = sum(spaces[k].shape[-1] for k in self.visual_keys)
            self.visual_encoder = VisualEncoder(
                channels,
                image_size,
                hidden_size,
                backbone,
                base_planes,
                ngroups,
                layers,
                feature_size,
                normalize_inputs,
            )
            rnn_input += hidden_size

        self.prev_action_embedding = nn.Embedding(self.num_actions + 1, embed_dim)
        rnn_input += embed_dim
        self.goal_embeddings = nn.ModuleDict()
        if POINTGOAL in spaces:
            self.goal_embeddings[POINTGOAL] = nn.Linear(3, embed_dim)
        if "objectgoal" in spaces:
            num_categories = int(spaces["objectgoal"].high.max()) + 1
            self.goal_embeddings["objectgoal"] = nn.Embedding(num_categories, embed_dim)
        if "gps" in spaces:
            self.goal_embeddings["gps"] = nn.Linear(spaces["gps"].shape[0], embed_dim)
        if "compass" in spaces:
            self.goal_embeddings["compass"] = nn.Linear(2, embed_dim)
        rnn_input += embed_dim * len(self.goal_embeddings)
        if not self.visual_keys and not self.goal_embeddings:
            raise ValueError(
                f"no usable observation among {sorted(spaces)} for PointNavResNetPolicy"
            )

        self.rnn_type, self.rnn_layers, self.hidden_size = rnn_type, rnn_layers, hidden_size
        rnn_cls = {"gru": nn.GRU, "lstm": nn.LSTM}.get(rnn_type)
        if rnn_cls is None:
            raise ValueError(f"policy.rnn_type must be 'gru' or 'lstm', got {rnn_type!r}")
        self.rnn = rnn_cls(rnn_input, hidden_size, rnn_layers)
        self.actor = nn.Linear(hidden_size, self.num_actions)
        self.critic = nn.Linear(hidden_size, 1)
        nn.init.orthogonal_(self.actor.weight, gain=0.01)  # near-uniform first policy
        nn.init.zeros_(self.actor.bias)
        nn.init.orthogonal_(self.critic.weight)
        nn.init.zeros_(self.critic.bias)

    # ----------------------------------------------------------------- state
    @property
    def _state_rows(self) -> int:  # an LSTM keeps (h, c): twice the rows
        return self.rnn_layers * (2 if self.rnn_type == "lstm" else 1)

    def initial_state(self, batch_size: int) -> State:
        device = self.actor.weight.device
        return {
            "rnn": torch.zeros(batch_size, self._state_rows, self.hidden_size, device=device),
            "prev_action": torch.zeros(batch_size, dtype=torch.long, device=device),
        }

    # ----------------------------------------------------------------- inputs
    def _visual_input(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stacked visual channels ``(B, C, H, W)``: depth as given, RGB scaled to [0, 1]."""
        parts = []
        for key in self.visual_keys:
            x = obs[key].float()
            if key == "rgb":
                x = x / 255.0
            parts.append(x)
        return torch.cat(parts, dim=-1).permute(0, 3, 1, 2)

    @torch.no_grad()
    def update_normalization(self, obs: dict[str, torch.Tensor]) -> None:
        """Add observations (any leading dims) to the input statistics; call on every rank."""
        if self.visual_encoder is None or self.visual_encoder.normalize is None:
            return
        flat = {k: v.reshape(-1, *v.shape[-3:]) for k, v in obs.items() if k in self.visual_keys}
        self.visual_encoder.normalize.update(self._visual_input(flat))

    def _features(self, obs: dict[str, torch.Tensor], prev_actions: torch.Tensor) -> torch.Tensor:
        """``(B, rnn_input)`` features of flat-batched observations."""
        feats = []
        if self.visual_encoder is not None:
            feats.append(self.visual_encoder(self._visual_input(obs)))
        feats.append(self.prev_action_embedding(prev_actions.long()))
        for key, embed in self.goal_embeddings.items():
            x = obs[key]
            if key == "objectgoal":  # a category id
                feats.append(embed(x.long().reshape(-1)))
                continue
            if key == POINTGOAL:  # polar (rho, phi) -> (rho, cos, sin): no jump at phi = +-pi
                rho, phi = x[..., 0].float(), x[..., 1].float()
                x = torch.stack([rho, torch.cos(-phi), torch.sin(-phi)], dim=-1)
            elif key == "compass":
                angle = x.float().reshape(-1)
                x = torch.stack([torch.cos(angle), torch.sin(angle)], dim=-1)
            feats.append(embed(x.float()))
        return torch.cat(feats, dim=-1)

    # ----------------------------------------------------------------- memory
    def _run_rnn(
        self, x: torch.Tensor, hidden: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """GRU/LSTM over ``x`` ``(T, N, F)`` from ``hidden`` ``(N, rows, H)``, reset where ``masks`` is 0.

        As habitat-baselines: run cuDNN-style over the longest stretches with no episode start in
        any env, zeroing the hidden state of the envs that start an episode at each break.
        """
        T = x.shape[0]
        h = hidden.transpose(0, 1).contiguous()  # (rows, N, H)
        starts = [0] + [t for t in range(1, T) if bool((masks[t] == 0).any())] + [T]
        outputs = []
        for a, b in zip(starts[:-1], starts[1:]):
            h = h * masks[a].view(1, -1, 1)
            if self.rnn_type == "lstm":
                out, (hh, cc) = self.rnn(x[a:b], (h[: self.rnn_layers], h[self.rnn_layers :]))
                h = torch.cat([hh, cc], dim=0)
            else:
                out, h = self.rnn(x[a:b], h)
            outputs.append(out)
        return torch.cat(outputs, dim=0), h.transpose(0, 1)

    # ----------------------------------------------------------------- protocol
    def act(
        self,
        obs: dict[str, torch.Tensor],
        state: State,
        deterministic: bool = False,
        actions: torch.Tensor | None = None,
    ) -> PolicyStep:
        """One step for ``B`` envs; ``state`` must already be zero for envs starting an episode.
        ``actions``: take these instead (a teacher's, ``pixelrl.rl.imitation``)."""
        x = self._features(obs, state["prev_action"])
        ones = torch.ones(1, x.shape[0], device=x.device)
        out, hidden = self._run_rnn(x.unsqueeze(0), state["rnn"], ones)
        out = out.squeeze(0)
        dist = torch.distributions.Categorical(logits=self.actor(out))
        if actions is None:
            actions = dist.probs.argmax(-1) if deterministic else dist.sample()
        values = self.critic(out).squeeze(-1)
        return PolicyStep(
            actions, dist.log_prob(actions), values, {"rnn": hidden, "prev_action": actions + 1}
        )

    def critic_parameters(self):
        """The value head's parameters (PPO's critic warm-up trains these alone)."""
        return self.critic.parameters()

    def evaluate(
        self, obs: dict[str, torch.Tensor], state: State, actions: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probabilities, values and entropies ``(T, N)`` of ``actions`` along the rollout."""
        T, N = actions.shape[:2]
        # the previous action of step t is actions[t-1] (state's for t = 0), none at episode starts
        prev = torch.cat([state["prev_action"].unsqueeze(0), actions[:-1] + 1], dim=0)
        prev = prev * masks.long()
        flat_obs = {k: v.reshape(T * N, *v.shape[2:]) for k, v in obs.items()}
        x = self._features(flat_obs, prev.reshape(-1)).view(T, N, -1)
        out, _ = self._run_rnn(x, state["rnn"], masks)
        dist = torch.distributions.Categorical(logits=self.actor(out))
        return dist.log_prob(actions), self.critic(out).squeeze(-1), dist.entropy()
