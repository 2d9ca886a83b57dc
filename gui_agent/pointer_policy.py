"""The pixel pointer policy: a timm CNN over the screenshot, FiLM-conditioned on the instruction.

::

    image (h×w×3) --timm CNN--> stride-8 and stride-16 maps --(upsample, concat, 1×1)--> F (C×gh×gw)
    instruction words --Embedding--> GRU (or bag of words) --> t, and a state w_i per word
                      (spec.subwords > 0: + the mean embedding of each word's character trigrams)
    match: M_h(x, y) = max_i <K_h F(x, y), Q_h [e_i; w_i]> / sqrt(d)   (H maps, one per head)
    lines: L = [M, max_x M, max_y M]   (each map's row and column maxima, broadcast back)
    FiLM:  F' = relu(F · (1 + γ(t)) + β(t))  --concat L, 3×3 conv--> G
           (mix_layers > 1: G += relu(3×3 conv(G ⊕ L)) again, each widening what a cell sees)
    heads: cell logits (1×1 conv on G ⊕ L: the click heatmap, one logit per grid cell)
           offset logits (1×1 conv on G ⊕ L: S² sub-cell positions, read at the chosen cell)
           with drag among the kinds: end cell and end offset logits (the same, for where the
           drag ends; the end is chosen beside the start, not from it)
           pooled G ⊕ t --MLP--> h --> kind logits, key logits, value, text query q
           text logits: q · e(choice) + w · [every word of the choice is in the instruction]
                        (e(choice): its mean word embedding, plus a learned vector s if it
                        ends in "\n" — "river" and "river\n" have the same words)

The match maps are a direct instruction-to-pixel grounding path: a word of the instruction
("Login", "Onions", "Search") scores every grid cell by a dot product with the cell's visual
features, so a label is found where it is drawn, wherever that is; FiLM alone (one global
modulation of every channel by the whole sentence) must route that through a 3×3 conv. (Issue 5
probes: with frozen BatchNorm both reach ~40% held-out click accuracy after 1,000 behaviour-
cloning steps — reading the label, not fusing, was the bottleneck; ``match_heads=0`` is FiLM alone.)

The row and column maxima carry a match along its line of the screen: a text field sits to the
right of its label, often further than a 3×3 conv reaches, and "my row holds the named label"
is what picks it. (Issue 5, type-in-field on 200 held-out seeds: 61.5% without them, the
chance of picking one of its 1–3 fields at random; 65.5% with them; 98% once behaviour cloning
also trained reading, :mod:`pixelrl.gui_agent.pointer_bc`.) ``match_lines=False`` leaves them out.

The action is the ``MultiDiscrete([kind, cell, offset, text, key])`` sample of
:mod:`pixelrl.gui_agent.pointer_env` (``[..., end_cell, end_offset]`` with drag among the kinds);
its log-probability sums the parts its kind uses (the cell and offset for pointer kinds, the end
cell and offset for ``drag``, the text for ``type``, the key for ``key``; a scroll's direction is
its kind), and its entropy is the kind's entropy plus each part's entropy weighted by the
probability of the kinds that use it.

Follows :class:`pixelrl.rl.policy.Policy`. By default it has no memory (``initial_state`` is
``{}``): the screen shows what has been done. Where the screen does not change (MiniWoB++'s
click-button-sequence: "click ONE, then click TWO"; the same screen gets the same greedy action)
``memory="actions"`` gives it its own last ``memory_actions`` actions (issue 54)::

    state: {"last_actions": (B, K, A)}   each earlier action (A: the action's parts) of the episode + 1, newest first
                                         (0: none, so zeros are a new episode, as mask_state wants)
    maps:  one (gh, gw) map per earlier action, 1 at the cell it clicked   --> beside the match maps
    kinds: one-hot of each earlier action's kind (or none) --Linear--> added to t (FiLM, trunk)

The cell head sees "I clicked here" beside "the instruction names this" on every cell, and
FiLM and the trunk see how many and which kinds of actions came before. ``evaluate`` rebuilds
each step's history from the rollout's actions and ``masks`` (reset at episode starts), so PPO
and cloning see exactly what ``act`` saw. BatchNorm layers of the timm encoder stay in inference mode
(their running statistics never move, so they are fixed per-channel affine maps): a rollout's
frames are not i.i.d., and collection and update must see the same network. The recipes use
GroupNorm instead (``backbone_kwargs.norm_layer: groupnorm1``): it normalises, so the encoder
learns faster, and it has no running statistics to drift.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from torch import nn
from torch.nn import functional as F

from pixelrl.gui_agent.pointer_env import POINTER_KINDS, PointerSpec, hash_words
from pixelrl.rl.policy import PolicyStep, State, mask_state

MEMORIES = ("none", "actions")  # policy.memory (module doc)


class InstructionEncoder(nn.Module):
    """Hashed word ids (B, L) -> a vector (B, dim) (a GRU's last state, or the mean embedding) and
    one vector per word (B, L, dim) (the GRU's state after it, or its projected embedding).
    With subwords the ids are (B, L, 1 + S): each word's id, then its character trigrams'."""

    def __init__(self, buckets: int, embed_dim: int = 64, dim: int = 128, kind: str = "gru"):
        super().__init__()
        if kind not in ("gru", "bow"):
            raise ValueError(f"text_encoder must be 'gru' or 'bow', got {kind!r}")
        self.kind = kind
        self.embed = nn.Embedding(buckets, embed_dim, padding_idx=0)
        self.rnn = nn.GRU(embed_dim, dim, batch_first=True) if kind == "gru" else None
        self.proj = nn.Linear(embed_dim, dim) if kind == "bow" else None
        self.dim = dim

    @staticmethod
    def word_ids(ids: torch.Tensor) -> torch.Tensor:
        """The words' own ids (..., L) of hashed words with or without subwords (..., L[, 1+S])."""
        return ids[..., 0] if ids.dim() == 3 else ids

    def embed_words(self, ids: torch.Tensor) -> torch.Tensor:
        """One vector per word (B, L, embed_dim): its embedding, plus with subwords
        ((B, L, 1+S) ids) the mean of its character trigrams' embeddings."""
        if ids.dim() == 2:
            return self.embed(ids)
        e = self.embed(ids)  # (B, L, 1+S, E); padding_idx 0 embeds to zero
        grams = (ids[..., 1:] > 0).sum(-1, keepdim=True).clamp(min=1)
        return e[..., 0, :] + e[..., 1:, :].sum(-2) / grams

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = (self.word_ids(ids) > 0).float()
        x = self.embed_words(ids)
        if self.kind == "bow":
            mean = (x * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
            return torch.relu(self.proj(mean)), torch.relu(self.proj(x))
        out, _ = self.rnn(x)
        last = (mask.sum(1).long() - 1).clamp(min=0)
        return out[torch.arange(len(ids), device=ids.device), last], out


class WordMatch(nn.Module):
    """Instruction-to-pixel matching: ``heads`` maps (B, H, gh, gw), each the best match of any
    instruction word with each cell, ``max_i <K_h f(x, y), Q_h q_i> / sqrt(dim)``.

    ``q_i`` is a word's embedding joined with its in-context state (so "OK" in "then click OK" can
    match differently from an item to tick); padding words never match. Several heads let one
    map follow the words to act on and another, say, the submit button.
    """

    def __init__(self, feature_dim: int, word_dim: int, heads: int = 4, dim: int = 32):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.keys = nn.Conv2d(feature_dim, heads * dim, 1)
        self.queries = nn.Linear(word_dim, heads * dim)

    def scores(self, feats: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        """(B, H, L, cells): every head's match of every word (B, L, word_dim) with every cell."""
        B = feats.shape[0]
        k = self.keys(feats).flatten(2).view(B, self.heads, self.dim, -1)
        q = self.queries(words).view(B, -1, self.heads, self.dim).transpose(1, 2)  # B,H,L,d
        return q @ k / self.dim**0.5

    def forward(self, feats: torch.Tensor, words: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, _, gh, gw = feats.shape
        scores = self.scores(feats, words)
        scores = scores.masked_fill(~mask[:, None, :, None], float("-inf"))
        best = scores.amax(2).nan_to_num(0.0, neginf=0.0)  # an empty instruction matches nothing
        return best.view(B, self.heads, gh, gw)


def with_line_maxima(maps: torch.Tensor) -> torch.Tensor:
    """(B, H, gh, gw) -> (B, 3H, gh, gw): the maps, then each map's row maximum and column
    maximum broadcast along that row / column (module doc: "lines")."""
    rows = maps.amax(3, keepdim=True).expand_as(maps)
    cols = maps.amax(2, keepdim=True).expand_as(maps)
    return torch.cat([maps, rows, cols], 1)


class PointerPolicy(nn.Module):
    """Actor-critic over :class:`~pixelrl.gui_agent.pointer_env.PointerEnv` observations (module doc).

    Args:
        spec: the :class:`PointerSpec` the env wrapper uses (image size, grid, kinds, texts, keys).
        backbone: a timm model name; ``backbone_kwargs`` go to ``timm.create_model`` (the default
            is a slim ResNet-10: channels 16-32-64-128, stem width 16). ``pretrained=False``
            unless ``weights`` names a file (see :func:`pixelrl.vision.encoders.build_encoder`).
        channels: width C of the fused feature map; ``hidden``: width of the MLP trunk.
        text_encoder: ``"gru"`` or ``"bow"``.
        match_heads: heads of the :class:`WordMatch` maps (0: FiLM is the only fusion).
        match_lines: add each match map's row and column maxima (module doc).
        mix_layers: 3×3 conv layers that fuse the FiLM features with the match maps before the
            cell head (the second and later are residual); check-boxes must combine two cells'
            facts, "my box is ticked" and "my label is named", into one verdict.
        memory: ``"none"`` (the default) or ``"actions"``: the episode's last ``memory_actions``
            actions as input (module doc).
    """

    def __init__(
        self,
        spec: PointerSpec,
        backbone: str = "resnet10t",
        backbone_kwargs: dict[str, Any] | None = None,
        weights: str | None = None,
        channels: int = 64,
        hidden: int = 256,
        text_encoder: str = "gru",
        text_dim: int = 128,
        embed_dim: int = 64,
        match_heads: int = 4,
        match_dim: int = 32,
        match_lines: bool = True,
        mix_layers: int = 1,
        memory: str = "none",
        memory_actions: int = 2,
    ):
        super().__init__()
        if memory not in MEMORIES:
            raise ValueError(f"memory must be one of {', '.join(MEMORIES)}, got {memory!r}")
        if isinstance(memory_actions, bool) or not isinstance(memory_actions, int):
            raise ValueError(f"memory_actions must be an integer >= 1, got {memory_actions!r}")
        if memory_actions < 1:
            raise ValueError(f"memory_actions must be an integer >= 1, got {memory_actions!r}")
        self.memory = memory
        self.memory_actions = memory_actions if memory == "actions" else 0
        from pixelrl.vision.encoders import build_encoder, feature_channels

        self.spec = spec
        kwargs = (
            dict(backbone_kwargs)
            if backbone_kwargs is not None
            else {"channels": (16, 32, 64, 128), "stem_width": 16}
        )
        self.encoder = build_encoder(backbone, weights, out_indices=None, **kwargs)
        reductions = list(self.encoder.feature_info.reduction())
        if spec.cell not in reductions:
            raise ValueError(
                f"backbone {backbone} has no stride-{spec.cell} feature map (strides {reductions})"
            )
        # The cell-stride map and the next coarser one (more context to read labels).
        self.levels = [reductions.index(spec.cell)]
        if self.levels[0] + 1 < len(reductions):
            self.levels.append(self.levels[0] + 1)
        chans = feature_channels(self.encoder)
        self.reduce = nn.Conv2d(sum(chans[i] for i in self.levels), channels, 1)
        self.text = InstructionEncoder(spec.buckets, embed_dim, text_dim, text_encoder)
        self.film = nn.Linear(text_dim, 2 * channels)
        self.match = (
            WordMatch(channels, embed_dim + text_dim, match_heads, match_dim)
            if match_heads > 0
            else None
        )
        self.match_lines = match_lines and match_heads > 0
        maps = match_heads * (3 if self.match_lines else 1)
        if spec.reader:  # the reader's two maps, with their line maxima
            maps += 2 * 3
        maps += self.memory_actions  # where each earlier action clicked
        # each earlier action's kind, or none (the first column)
        self.memory_kinds = (
            nn.Linear(self.memory_actions * (len(spec.kinds) + 1), text_dim)
            if self.memory_actions
            else None
        )
        if mix_layers < 1:
            raise ValueError(f"mix_layers must be >= 1, got {mix_layers}")
        self.mix = nn.Conv2d(channels + maps, channels, 3, padding=1)
        self.mix_more = nn.ModuleList(
            nn.Conv2d(channels + maps, channels, 3, padding=1) for _ in range(mix_layers - 1)
        )
        self.cell_head = nn.Conv2d(channels + maps, 1, 1)
        self.offset_head = nn.Conv2d(channels + maps, spec.offsets**2, 1)
        self.drag_kind = spec.kinds.index("drag") if "drag" in spec.kinds else -1
        if self.drag_kind >= 0:  # where a drag ends: a second heatmap and its offsets
            self.end_cell_head = nn.Conv2d(channels + maps, 1, 1)
            self.end_offset_head = nn.Conv2d(channels + maps, spec.offsets**2, 1)
        self.trunk = nn.Sequential(nn.Linear(2 * (channels + maps) + text_dim, hidden), nn.ReLU())
        self.kind_head = nn.Linear(hidden, len(spec.kinds))
        self.key_head = nn.Linear(hidden, max(1, len(spec.keys)))
        self.value_head = nn.Linear(hidden, 1)
        self.text_query = nn.Linear(hidden, embed_dim)
        self.copy_weight = nn.Parameter(torch.tensor(2.0))
        texts = spec.texts or ("",)
        choice_ids = torch.stack(
            [torch.from_numpy(hash_words(t, spec.max_text_words, spec.buckets)) for t in texts]
        )
        self.register_buffer("choice_ids", choice_ids, persistent=False)
        # "word\n" (type and submit) must be told apart from "word": a learned vector marks it
        submits = torch.tensor([t.endswith("\n") for t in texts], dtype=torch.float32)
        self.register_buffer("choice_submits", submits, persistent=False)
        self.submit_text = nn.Parameter(torch.zeros(embed_dim)) if submits.any() else None
        pointer = [k in POINTER_KINDS for k in spec.kinds]
        self.register_buffer("pointer_kinds", torch.tensor(pointer), persistent=False)
        self.type_kind = spec.kinds.index("type") if "type" in spec.kinds else -1
        self.key_kind = spec.kinds.index("key") if "key" in spec.kinds else -1
        nn.init.zeros_(self.film.weight)
        nn.init.zeros_(self.film.bias)
        nn.init.orthogonal_(self.kind_head.weight, 0.01)
        nn.init.zeros_(self.kind_head.bias)
        nn.init.orthogonal_(self.value_head.weight, 1.0)

    @classmethod
    def from_spaces(
        cls, observation_space: gym.spaces.Dict, action_space: gym.Space, spec: PointerSpec, **kw
    ) -> PointerPolicy:
        """Build for a :class:`PointerEnv`, checking that its spaces match ``spec``."""
        image = observation_space["image"].shape
        if tuple(image[:2]) != (spec.image_size[1], spec.image_size[0]):
            raise ValueError(f"observation image {image} does not match spec {spec.image_size}")
        if list(action_space.nvec) != spec.nvec:
            raise ValueError(f"action space {action_space} does not match spec nvec {spec.nvec}")
        return cls(spec, **kw)

    def train(self, mode: bool = True) -> PointerPolicy:
        super().train(mode)
        for m in self.encoder.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.eval()
        return self

    # ------------------------------------------------------------------ network
    def initial_state(self, batch_size: int) -> State:
        if not self.memory_actions:
            return {}
        device = self.choice_ids.device
        parts = len(self.spec.nvec)
        return {"last_actions": torch.zeros(batch_size, self.memory_actions, parts,
                                            dtype=torch.long, device=device)}  # fmt: skip

    def remember(self, state: State, actions: torch.Tensor) -> State:
        """The state after ``actions`` (B, A): each action + 1 pushed in front, the oldest out."""
        if not self.memory_actions:
            return state
        last = state["last_actions"]
        return {"last_actions": torch.cat([actions[:, None] + 1, last[:, :-1]], 1)}

    def history_state(self, last_actions: torch.Tensor | None) -> State:
        """The state of recorded steps from their earlier actions (B, ≥K, A), + 1 encoded, newest
        first (:func:`pixelrl.gui_agent.pointer_bc.expert_samples`' ``last_actions``); ``{}``
        without memory. Data without them cannot teach a policy with memory: a one-line error."""
        if not self.memory_actions:
            return {}
        if last_actions is None:
            raise ValueError(
                "policy.memory=actions needs each sample's earlier actions ('last_actions'), "
                "which this data was recorded without: record it again with this version"
            )
        if last_actions.shape[1] < self.memory_actions:
            raise ValueError(
                f"the data keeps {last_actions.shape[1]} earlier actions a sample, "
                f"fewer than policy.memory_actions={self.memory_actions}"
            )
        return {"last_actions": last_actions[:, : self.memory_actions].long()}

    def _memory_inputs(self, state: State | None, batch: int, device) -> tuple[torch.Tensor, ...]:
        """(maps (B, K, gh, gw), kinds (B, text_dim)) of the earlier actions in ``state``
        (``None``: an episode's first step)."""
        cols, rows = self.spec.grid
        last = (state or {}).get("last_actions")
        if last is None:
            parts = len(self.spec.nvec)
            last = torch.zeros(batch, self.memory_actions, parts, dtype=torch.long, device=device)
        kind = last[..., 0]  # 0: none, else kind + 1
        pointer = (kind > 0) & self.pointer_kinds[(kind - 1).clamp(min=0)]
        cell = (last[..., 1] - 1).clamp(min=0)
        maps = F.one_hot(cell, rows * cols).float() * pointer[..., None].float()
        kinds = F.one_hot(kind, len(self.spec.kinds) + 1).float().flatten(1)
        return maps.view(batch, -1, rows, cols), self.memory_kinds(kinds)

    def read_grid(self, read: torch.Tensor) -> torch.Tensor:
        """The reader's maps (B, h, w, 2) uint8 -> (B, 2, rows, cols) in [0, 1]: each cell's
        highest value (a word that touches a cell marks it)."""
        cols, rows = self.spec.grid
        maps = read.permute(0, 3, 1, 2).float() / 255.0
        return F.adaptive_max_pool2d(maps, (rows, cols))

    def heads(
        self, obs: dict[str, torch.Tensor], state: State | None = None
    ) -> dict[str, torch.Tensor]:
        """Every head's logits, the value, the fused cell ``features`` (B, C, gh, gw) and, with
        match heads, the ``match`` maps (B, H, gh, gw) before their line maxima. ``state``: the
        memory (:meth:`initial_state`; ``None`` is an episode's first step)."""
        image = obs["image"].permute(0, 3, 1, 2).float() / 255.0 - 0.5
        words = obs["instruction"].long()  # (B, L), or (B, L, 1+S) with subwords
        # Columns past the batch's longest instruction are padding in every row, and padding
        # changes nothing (the GRU reads left to right, the match maps mask it): dropping them
        # gives the same heads for less work (the (B, H, words, cells) match scores are the
        # largest tensor after the encoder's, and instructions use ~10 of spec.max_words = 32).
        words = words[:, : max(1, int((self.text.word_ids(words) > 0).sum(1).max()))]
        word_ids = self.text.word_ids(words)
        feats = self.encoder(image)
        base = feats[self.levels[0]]
        maps = [base] + [
            F.interpolate(feats[i], size=base.shape[-2:], mode="nearest") for i in self.levels[1:]
        ]
        x = self.reduce(torch.cat(maps, 1))
        cols, rows = self.spec.grid
        x = x[..., :rows, :cols]  # odd sizes: the encoder's map may have a ragged last row
        features = x  # what the match maps read (the reading loss trains it)
        t, per_word = self.text(words)
        memory_maps = None
        if self.memory_actions:
            memory_maps, kinds = self._memory_inputs(state, len(words), words.device)
            t = t + kinds
        gamma, beta = self.film(t).chunk(2, -1)
        fused = torch.relu(x * (1 + gamma[..., None, None]) + beta[..., None, None])
        out = {}
        found = []  # maps of where the instruction's words are: learned, and read
        if self.match is not None:
            word_vecs = torch.cat([self.text.embed_words(words), per_word], -1)
            matched = out["match"] = self.match(x, word_vecs, word_ids > 0)
            found.append(with_line_maxima(matched) if self.match_lines else matched)
        if self.spec.reader:
            found.append(with_line_maxima(self.read_grid(obs["read"])))
        if memory_maps is not None:
            found.append(memory_maps)
        matched = torch.cat(found, 1) if found else None
        if matched is not None:
            fused = torch.cat([fused, matched], 1)
        x = torch.relu(self.mix(fused))
        for layer in self.mix_more:
            x = x + torch.relu(layer(torch.cat([x, matched], 1) if matched is not None else x))
        if matched is not None:
            x = torch.cat([x, matched], 1)
        pooled = torch.cat([x.mean((2, 3)), x.amax((2, 3))], 1)
        h = self.trunk(torch.cat([pooled, t], 1))
        # text choices: learned match plus "all its words are in the instruction" (a copy cue)
        choice = self.choice_ids  # (N, M)
        emb = self.text.embed(choice)
        cmask = (choice > 0).float()
        choice_vec = (emb * cmask.unsqueeze(-1)).sum(1) / cmask.sum(1, keepdim=True).clamp(min=1)
        if self.submit_text is not None:
            choice_vec = choice_vec + self.choice_submits[:, None] * self.submit_text
        present = (choice[None, :, :, None] == word_ids[:, None, None, :]).any(-1)  # (B, N, M)
        copied = ((present | (choice == 0)[None]).all(-1) & (cmask.sum(1) > 0)[None]).float()
        text_logits = self.text_query(h) @ choice_vec.T + self.copy_weight * copied
        if self.drag_kind >= 0:
            out["end_cell"] = self.end_cell_head(x).flatten(1)
            out["end_offset"] = self.end_offset_head(x).flatten(2)
        return {
            "kind": self.kind_head(h),
            "cell": self.cell_head(x).flatten(1),  # (B, rows*cols), row-major
            "offset": self.offset_head(x).flatten(2),  # (B, S², rows*cols)
            "text": text_logits,
            "key": self.key_head(h),
            "value": self.value_head(h).squeeze(-1),
            "features": features,
            **out,
        }

    @staticmethod
    def _dists(heads: dict[str, torch.Tensor]) -> dict[str, torch.distributions.Categorical]:
        """Categoricals of the parts that do not depend on another part's sample."""
        Cat = torch.distributions.Categorical
        return {k: Cat(logits=heads[k]) for k in ("kind", "cell", "text", "key")}

    def _offset_dist(self, heads, cells: torch.Tensor, name: str = "offset"):
        index = cells.view(-1, 1, 1).expand(-1, heads[name].shape[1], 1)
        return torch.distributions.Categorical(logits=heads[name].gather(2, index).squeeze(2))

    def _logprob_entropy(self, heads, dists, actions: torch.Tensor):
        kind, cell, offset, text, key = actions[..., :5].unbind(-1)
        off = self._offset_dist(heads, cell)
        is_pointer = self.pointer_kinds[kind].float()
        lp = dists["kind"].log_prob(kind) + is_pointer * (
            dists["cell"].log_prob(cell) + off.log_prob(offset)
        )
        probs = dists["kind"].probs
        p_pointer = (probs * self.pointer_kinds.float()).sum(-1)
        ent = dists["kind"].entropy() + p_pointer * (dists["cell"].entropy() + off.entropy())
        if self.type_kind >= 0:
            lp = lp + (kind == self.type_kind).float() * dists["text"].log_prob(text)
            ent = ent + probs[:, self.type_kind] * dists["text"].entropy()
        if self.key_kind >= 0:
            lp = lp + (kind == self.key_kind).float() * dists["key"].log_prob(key)
            ent = ent + probs[:, self.key_kind] * dists["key"].entropy()
        if self.drag_kind >= 0:
            end = torch.distributions.Categorical(logits=heads["end_cell"])
            end_off = self._offset_dist(heads, actions[..., 5], "end_offset")
            is_drag = (kind == self.drag_kind).float()
            lp = lp + is_drag * (end.log_prob(actions[..., 5]) + end_off.log_prob(actions[..., 6]))
            ent = ent + probs[:, self.drag_kind] * (end.entropy() + end_off.entropy())
        return lp, ent

    # ------------------------------------------------------------------ Policy protocol
    def critic_parameters(self):
        """The value head's parameters (PPO's critic warm-up trains these alone)."""
        return self.value_head.parameters()

    def act(
        self, obs: dict[str, torch.Tensor], state: State, deterministic: bool = False
    ) -> PolicyStep:
        heads = self.heads(obs, state)
        dists = self._dists(heads)
        parts = []
        for name in ("kind", "cell"):
            dist = dists[name]
            parts.append(dist.probs.argmax(-1) if deterministic else dist.sample())
        off = self._offset_dist(heads, parts[1])
        parts.append(off.probs.argmax(-1) if deterministic else off.sample())
        for name in ("text", "key"):
            dist = dists[name]
            parts.append(dist.probs.argmax(-1) if deterministic else dist.sample())
        if self.drag_kind >= 0:
            end = torch.distributions.Categorical(logits=heads["end_cell"])
            parts.append(end.probs.argmax(-1) if deterministic else end.sample())
            end_off = self._offset_dist(heads, parts[-1], "end_offset")
            parts.append(end_off.probs.argmax(-1) if deterministic else end_off.sample())
        actions = torch.stack(parts, -1)
        logprobs, _ = self._logprob_entropy(heads, dists, actions)
        return PolicyStep(actions, logprobs, heads["value"], self.remember(state, actions))

    def evaluate(
        self, obs: dict[str, torch.Tensor], state: State, actions: torch.Tensor, masks: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probabilities, values and entropies ``(T, N)`` of ``actions`` (T, N, A)."""
        T, N = actions.shape[:2]
        flat = {k: v.reshape(T * N, *v.shape[2:]) for k, v in obs.items()}
        heads = self.heads(flat, self._rollout_states(state, actions, masks))
        lp, ent = self._logprob_entropy(heads, self._dists(heads), actions.reshape(T * N, -1))
        return lp.view(T, N), heads["value"].view(T, N), ent.view(T, N)

    def _rollout_states(
        self, state: State, actions: torch.Tensor, masks: torch.Tensor
    ) -> State | None:
        """Each step's memory (flattened to T*N rows) along a rollout of ``actions`` (T, N, A)
        from ``state``, zeroed where ``masks`` (T, N) starts an episode: what ``act`` saw."""
        if not self.memory_actions:
            return None
        states = []
        for t in range(actions.shape[0]):
            state = mask_state(state, masks[t])
            states.append(state["last_actions"])
            state = self.remember(state, actions[t])
        return {"last_actions": torch.cat(states)}

    def box_log_likelihood(
        self,
        obs: dict[str, torch.Tensor],
        actions: torch.Tensor,
        point_mask: torch.Tensor,
        heads: dict[str, torch.Tensor] | None = None,
        state: State | None = None,
    ) -> torch.Tensor:
        """``log π`` of ``actions`` (B, A) where a pointer action counts as right anywhere in its
        target: the pointer part is ``log Σ_{(c, o) in point_mask} P(cell = c) P(offset = o | c)``
        (point_mask (B, cells, S²): the sub-cell points that lie in the target box) — behaviour
        cloning's grounding loss. ``heads``: :meth:`heads` of ``obs`` when already computed.
        Scoring points, not cells, trains the offset head too: a cell
        that straddles the box edge is right only with the offset that lands inside."""
        heads = self.heads(obs, state) if heads is None else heads
        dists = self._dists(heads)
        kind, _, _, text, key = actions[..., :5].unbind(-1)
        cell_logp = torch.log_softmax(heads["cell"], -1)  # (B, cells)
        offset_logp = torch.log_softmax(heads["offset"], 1).transpose(1, 2)  # (B, cells, S²)
        point_logp = (cell_logp[..., None] + offset_logp).masked_fill(~point_mask, float("-inf"))
        in_box = torch.logsumexp(point_logp.flatten(1), -1)
        lp = dists["kind"].log_prob(kind) + self.pointer_kinds[kind].float() * in_box
        if self.type_kind >= 0:
            lp = lp + (kind == self.type_kind).float() * dists["text"].log_prob(text)
        if self.key_kind >= 0:
            lp = lp + (kind == self.key_kind).float() * dists["key"].log_prob(key)
        if self.drag_kind >= 0:  # the end point as recorded (where a drag ends has no box)
            end = torch.distributions.Categorical(logits=heads["end_cell"])
            end_off = self._offset_dist(heads, actions[..., 5], "end_offset")
            end_lp = end.log_prob(actions[..., 5]) + end_off.log_prob(actions[..., 6])
            lp = lp + (kind == self.drag_kind).float() * end_lp
        return lp

    def reading_log_likelihood(
        self, features: torch.Tensor, word_ids: torch.Tensor, word_cells: torch.Tensor
    ) -> torch.Tensor:
        """``log P(cell in the word's element)`` (B, P) for words drawn on the screen: each word
        (``word_ids`` (B, P), hashed, 0 pads) scores every cell of ``features`` (the ``features``
        head, (B, C, gh, gw)) as the match maps do (best head, the word read on its own), and a
        softmax over cells should put its mass in ``word_cells`` (B, P, cells), the cells of the
        element that shows it. Padding words give 0.

        Behaviour cloning's reading loss: every label on the screen (a button's, a checkbox's, a
        field's) teaches the encoder what its word looks like, not only the one the instruction
        names (issue 5: reading labels was what held click accuracy back)."""
        if self.match is None:
            raise ValueError("reading_log_likelihood needs match_heads > 0")
        B, P = word_ids.shape[:2]
        ids = word_ids.reshape(B * P, 1, *word_ids.shape[2:]).long()  # each word on its own
        _, per_word = self.text(ids)
        words = torch.cat([self.text.embed_words(ids), per_word], -1).view(B, P, -1)
        scores = self.match.scores(features, words).amax(1)  # best head: (B, P, cells)
        inside = torch.logsumexp(scores.masked_fill(~word_cells, float("-inf")), -1)
        ll = inside - torch.logsumexp(scores, -1)
        return torch.where(self.text.word_ids(word_ids) > 0, ll, torch.zeros_like(ll))

    def each_target_log_likelihood(
        self, heads: dict[str, torch.Tensor], actions: torch.Tensor, point_mask: torch.Tensor
    ) -> torch.Tensor:
        """(B,) the mean over target cells c of ``log σ(s_c - logsumexp(s_non-targets))`` (a cell
        is a target when any of its sub-cell points in ``point_mask`` is; 0 for samples that are
        not pointer actions): every equally good target must outscore all the other cells
        together, not only the targets' sum.

        :meth:`box_log_likelihood` is satisfied when one target takes the mass. On check-boxes
        (every wrong box is a right click) BC then learnt the easiest wrong box and left the
        others below Submit, which it pressed once they were the last ones left. Issue 5: alone,
        at weight 1, this loss cost success (50%); at weight 0.25 with
        :meth:`named_log_likelihood` it lifted check-boxes from 79-81% to 92.5-95% (two seeds)."""
        target = point_mask.any(-1)
        scores = heads["cell"]
        negatives = torch.logsumexp(scores.masked_fill(target, float("-inf")), -1, keepdim=True)
        ll = F.logsigmoid(scores - negatives).masked_fill(~target, 0.0)
        per_sample = ll.sum(-1) / target.sum(-1).clamp(min=1)
        return self.pointer_kinds[actions[:, 0]].float() * per_sample

    def named_log_likelihood(
        self,
        heads: dict[str, torch.Tensor],
        instruction: torch.Tensor,
        word_ids: torch.Tensor,
        word_cells: torch.Tensor,
    ) -> torch.Tensor:
        """Per sample (B,): the mean over the cells that show a word (``word_ids`` / ``word_cells``
        as in :meth:`reading_log_likelihood`) of ``log σ(±M_0(cell))``, + where that word is in
        the ``instruction`` (B, L), - where it is not. ``M_0`` is the first match map exactly as
        the policy reads it (each word in context, the best word per cell).

        The match maps take the best of several words' scores, and nothing else calibrates one
        word's scores against another's: the reading loss ranks cells for each word on its own.
        On check-boxes the maps told named from unnamed boxes with AUC 0.71-0.94 while each word,
        read on its own, found its label 99.9% of the time (issue 5, 300 held-out screens). This
        loss makes map 0 say "the instruction names what is drawn here" (AUC 0.998 at weight 4)."""
        if self.match is None:
            raise ValueError("named_log_likelihood needs match_heads > 0")
        instruction, word_ids = self.text.word_ids(instruction), self.text.word_ids(word_ids)
        named = (
            (instruction[:, :, None] == word_ids[:, None, :]) & (word_ids[:, None, :] > 0)
        ).any(1)
        cells = word_cells & (word_ids > 0)[..., None]  # (B, P, cells)
        positive = (cells & named[..., None]).any(1)  # (B, cells)
        negative = (cells & ~named[..., None]).any(1) & ~positive
        m0 = heads["match"][:, 0].flatten(1)
        ll = F.logsigmoid(m0) * positive + F.logsigmoid(-m0) * negative
        return ll.sum(-1) / (positive | negative).sum(-1).clamp(min=1)

    def heatmap(self, obs: dict[str, torch.Tensor], state: State | None = None) -> torch.Tensor:
        """P(click at cell) as a (B, rows, cols) map, for pictures."""
        cols, rows = self.spec.grid
        with torch.no_grad():
            return torch.softmax(self.heads(obs, state)["cell"], -1).view(-1, rows, cols)
