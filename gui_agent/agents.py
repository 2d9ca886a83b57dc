"""GUI agents for evaluation and demos: one ``act(screenshot, instruction) -> Action`` for every
kind of trained policy.

- :class:`PointerAgent`: a :class:`~pixelrl.gui_agent.pointer_policy.PointerPolicy` (a ``gui/ppo``
  checkpoint); the screenshot is resized and the sampled cell mapped back to screen pixels
  exactly as :class:`~pixelrl.gui_agent.pointer_env.PointerEnv` does.
- :class:`VLMAgent`: a :class:`pixelrl.vision.vlm.VLMPolicy` (a model folder saved by the ``gui/sft`` or
  ``gui/*-grpo`` recipes, a transformers model name, or ``tiny-<family>``); greedy decoding, the
  episode's recent actions in the prompt; unparsable text is a ``wait``.

:func:`load_agent` picks the right one from a path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pixelrl.envs.gui_action import Action


class PointerAgent:
    """Acts with a pointer policy, deterministically (the most likely action) by default."""

    def __init__(self, policy, deterministic: bool = True) -> None:
        self.policy = policy.eval()
        self.spec = policy.spec
        self.deterministic = deterministic
        self.last_heatmap: np.ndarray | None = None
        self.screen_size: tuple[int, int] | None = None  # the desktop size it trained on
        self.env_id: str | None = None
        self.tasks: list[str] = []  # a gui/miniwob policy's tasks (env.tasks of env.family)
        self.fields: list[str] = []  # the episode's task fields, for {field:N} texts
        self.read_maps: list = []  # spec.reader: one ReadMaps a batch slot (PointerEnv's)
        self.state: dict = {}  # the policy's memory (policy.memory), carried through an episode

    def reset(self) -> None:
        self.fields = []
        self.state = {}
        for read_maps in self.read_maps:  # a new episode: read its first screen
            read_maps.forget()

    def on_reset(self, env, info: dict) -> None:
        """The episode's task fields (MiniWoB++'s ``info["fields"]``), typed by ``{field:N}``."""
        self.fields = [str(value) for _, value in info.get("fields", ())]

    def act_batch(
        self, screenshots: Sequence[np.ndarray], instructions: Sequence[str]
    ) -> list[Action]:
        import torch

        from pixelrl.gui_agent.pointer_env import pointer_observation

        if self.spec.reader:
            from pixelrl.gui_agent.read_maps import ReadMaps

            self.read_maps += [ReadMaps() for _ in range(len(screenshots) - len(self.read_maps))]
        read_maps = self.read_maps if self.spec.reader else [None] * len(screenshots)
        seen, maps = [], []
        for screenshot, instruction, reader in zip(screenshots, instructions, read_maps):
            obs, image_map = pointer_observation(screenshot, instruction, self.spec, reader)
            seen.append(obs)
            maps.append(image_map)
        obs = {key: torch.as_tensor(np.stack([o[key] for o in seen])) for key in seen[0]}
        if not self.state or len(next(iter(self.state.values()))) != len(seen):
            self.state = self.policy.initial_state(len(seen))  # a new episode (or batch)
        with torch.no_grad():
            state = self.state
            step = self.policy.act(obs, state, deterministic=self.deterministic)
        self.state = step.state
        self.last_heatmap = self.policy.heatmap(obs, state).numpy()
        return [self._decode(a, m) for a, m in zip(step.actions.numpy(), maps)]

    def _decode(self, sample: np.ndarray, image_map) -> Action:
        from pixelrl.envs.gui_action import ActionError
        from pixelrl.gui_agent.pointer_env import decode_action

        try:
            return decode_action(sample, self.spec, image_map, self.fields)
        except ActionError:  # a {field:N} this episode does not have: the step is spent
            return Action.wait()

    def act(self, screenshot: np.ndarray, instruction: str) -> Action:
        return self.act_batch([screenshot], [instruction])[0]

    @classmethod
    def from_checkpoint(cls, path: str | Path, **kwargs) -> PointerAgent:
        """The policy of a ``gui/ppo`` checkpoint (a file, ``checkpoints/`` folder or run folder)."""
        from pixelrl.checkpoint import load_checkpoint
        from pixelrl.config import Config
        from pixelrl.gui_agent import ppo_task

        ckpt = load_checkpoint(path)
        cfg = Config(ckpt["config"])
        policy = ppo_task.make_policy(
            cfg, ckpt["observation_space"], ckpt["action_space"], warm_start=False
        )
        policy.load_state_dict(ckpt["policy"])
        agent = cls(policy, **kwargs)
        agent.screen_size = ppo_task.env_kwargs(cfg, "eval").get("screen_size")
        agent.env_id = cfg.env.id
        agent.tasks = list(cfg.env.get("tasks") or [])  # gui/miniwob: the tasks it was trained on
        return agent


class VLMAgent:
    """Acts with a vision-language policy: greedy action text, parsed (never executed)."""

    def __init__(self, vlm, max_new_tokens: int = 32) -> None:
        self.vlm = vlm
        self.vlm.model.eval()
        self.max_new_tokens = max_new_tokens
        self.history: list[str] = []  # earlier actions as the policy writes them
        self.last_texts: list[str] = []

    def reset(self) -> None:
        self.history = []

    def act_batch(
        self,
        screenshots: Sequence[np.ndarray],
        instructions: Sequence[str],
        histories: Sequence[Sequence[str]] | None = None,
    ) -> list[Action]:
        screen = (screenshots[0].shape[1], screenshots[0].shape[0])
        out = self.vlm.generate(
            list(screenshots), list(instructions), histories, num_samples=1, do_sample=False,
            max_new_tokens=self.max_new_tokens, screen_size=screen,
        )  # fmt: skip
        self.last_texts = [c[0].text for c in out]
        return [c[0].action for c in out]

    def act(self, screenshot: np.ndarray, instruction: str) -> Action:
        return self.act_episodes([screenshot], [instruction], [self.history])[0]

    def act_episodes(
        self,
        screenshots: Sequence[np.ndarray],
        instructions: Sequence[str],
        histories: Sequence[list[str]],
    ) -> list[Action]:
        """:meth:`act` for several episodes at once, each with its own ``histories`` entry
        (its earlier actions, appended to here): one batched ``generate`` for all the
        screenshots of one size. Greedy answers are those each episode would get alone."""
        actions: list[Action | None] = [None] * len(screenshots)
        sizes: dict[tuple[int, int], list[int]] = {}
        for i, s in enumerate(screenshots):  # act_batch parses on one screen size
            sizes.setdefault((s.shape[1], s.shape[0]), []).append(i)
        for screen, rows in sizes.items():
            out = self.act_batch([screenshots[i] for i in rows], [instructions[i] for i in rows],
                                 [histories[i] for i in rows])  # fmt: skip
            for i, action in zip(rows, out):
                actions[i] = action
                histories[i].append(self.vlm.action_text(action, screen))
        return actions


# The file beside a navigation VLM agent's weights (pixelrl.embodied.vlm_agent.AGENT_FILE; named
# here, not imported: GUI agents do not depend on the embodied package).
NAV_AGENT_FILE = "pixelrl_nav_agent.json"


def is_model_folder(path: str | Path) -> bool:
    """A transformers model folder (``config.json`` next to the weights)."""
    return (Path(path) / "config.json").is_file()


def load_agent(path: str | Path):
    """A :class:`VLMAgent` for ``tiny-<family>``, a model folder or a hub id ``org/name``
    (:func:`pixelrl.checkpoint.is_hub_id`); a :class:`PointerAgent` for a pixelrl checkpoint.
    Any other path that does not exist is a :class:`~pixelrl.checkpoint.CheckpointError` at
    once (the hub is not asked for it)."""
    from pixelrl.checkpoint import (
        CheckpointError,
        check_hub_model,
        is_hub_id,
        missing_path_message,
    )
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import MODEL_FILE_ERRORS, load_vlm

    text = str(path)
    if (Path(text) / NAV_AGENT_FILE).is_file():
        raise CheckpointError(
            f"{text} is a navigation VLM agent (it has {NAV_AGENT_FILE}), not a GUI policy; "
            f"benchmark it with: pixelrl bench nav --dataset EPISODES.json.gz --agent vlm {text}"
        )
    if text.startswith("tiny-"):
        return VLMAgent(load_vlm(text, GUIActionCodec.for_model(text)))
    if is_model_folder(text):
        from pixelrl.gui_agent.agent_spec import GUIAgentFileError, read_gui_spec

        try:  # a gui/* recipe's folder says how its answers are written and what its prompt held
            spec = read_gui_spec(text)
        except GUIAgentFileError as e:
            raise CheckpointError(str(e)) from None
        codec = spec.codec() if spec is not None else GUIActionCodec.for_model(text)
        parse = spec.screen_parse_for(codec) if spec is not None else None
        try:
            return VLMAgent(load_vlm(text, codec, screen_parse=parse))
        except MODEL_FILE_ERRORS as e:  # a cut or random model.safetensors, a bad config.json
            raise CheckpointError(f"{text}: cannot load the model folder: {e}") from None
    p = Path(text)
    if p.exists():
        return PointerAgent.from_checkpoint(p)
    if not is_hub_id(text):
        raise CheckpointError(missing_path_message(text))
    check_hub_model(text)
    # a transformers name (offline: from the local cache)
    return VLMAgent(load_vlm(text, GUIActionCodec.for_model(text)))
