"""The embodied vision-language agent: egocentric frames in, navigation action text out.

A :class:`~pixelrl.vision.vlm.VLMPolicy` with the navigation codec
(:class:`~pixelrl.envs.nav.action_text.NavActionCodec`) sees one image and one text per turn:

- the image (:meth:`NavPrompt.image`): the current RGB frame, with the depth frame colourised
  beside it (``depth: true``) and ``memory_frames`` earlier frames before it, sampled long-short
  as in VLN-R1 (the most recent ones densely, older ones sparsely); or, with ``frames: K`` above
  1, the last K RGB frames as K separate images at their own size (NaVILA's and Uni-NaVid's
  memory of past frames), the colourised depth of the current one after them;
- the text (:func:`goal_text`): the goal in words -- PointNav "The goal is 3.2 m away, 40
  degrees to your left." from the GPS+compass sensor, ObjectNav "Find a bed." (the category as
  text, so an unseen word works if the model knows it), InstructNav its instruction -- with
  ``gps_compass: true`` where the agent stands relative to its start (:func:`where_text`, the
  GPS+compass the ResNet+GRU agent reads), and the low-level actions taken so far, written by
  the codec (``turn_left(2), move_forward(3)``).

It answers with one or more actions (``move_forward(3)``): :class:`VLMNavAgent` executes them
one low-level step at a time, so the episode's measures (Success, SPL, path length, the step
limit) count low-level steps exactly as for any other agent. An unparsable answer executes
nothing: the agent returns ``IDLE`` ("idle") for that turn, which the navigation env plays as a
step that does nothing (a step of the budget, no motion; not one of habitat's actions).

The agent's files: a model folder (``save_pretrained``) with ``pixelrl_nav_agent.json`` beside
the weights, holding the task, codec and prompt settings (:func:`save_agent`,
:func:`load_agent`), which ``pixelrl bench nav --agent vlm PATH`` reads.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.envs.nav.action_text import NavActionCodec
from pixelrl.envs.nav.tasks import IDLE

TASKS = {
    "pixelrl/PointNav-v0": "pointnav",
    "pixelrl/ObjectNav-v0": "objectnav",
    "pixelrl/InstructNav-v0": "instructnav",
}
AGENT_FILE = "pixelrl_nav_agent.json"
# how answers are written: text (move_forward(3)) or toolcall (TRL's navigation tool calls)
ACTION_FORMATS = ("text", "toolcall")


# -- the prompt ---------------------------------------------------------------------------------
def goal_text(obs: dict[str, Any], task: str, distance_floor: bool = False) -> str:
    """The goal in words, from the task's sensors. PointNav's distance is in 0.1 m words,
    rounded to the nearest, or with ``distance_floor`` down ("0.1 m" is [0.1, 0.2) m), so
    that a stop radius on the 0.1 m grid (PointNav's 0.2 m) falls between two words: rounded,
    "0.2 m" covers 0.15-0.25 m, where the follower stops in some steps and walks on in others."""
    if task == "pointnav":
        rho, phi = (float(v) for v in np.asarray(obs["pointgoal_with_gps_compass"]).reshape(-1))
        if distance_floor:  # 1e-6: a distance just below a grid line, not float noise, rounds down
            rho = math.floor(rho * 10 + 1e-6) / 10
        degrees = int(round(math.degrees(phi) / 5.0) * 5)  # 5-degree steps: few distinct words
        if degrees == 0:
            where = "straight ahead"
        elif abs(degrees) == 180:
            where = "behind you"
        else:
            where = f"{abs(degrees)} degrees to your {'left' if degrees > 0 else 'right'}"
        return f"The goal is {rho:.1f} m away, {where}."
    if task == "objectnav":
        from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES

        category = OBJECTNAV_CATEGORIES[int(np.asarray(obs["objectgoal"]).reshape(-1)[0])]
        return f"Find a {category.replace('_', ' ')}."
    if task == "instructnav":
        return str(obs["instruction"])
    raise ValueError(f"unknown navigation task {task!r}; known: {', '.join(TASKS.values())}")


def where_text(obs: dict[str, Any]) -> str:
    """The GPS+compass sensors in words (ObjectNav's and InstructNav's, which the ResNet+GRU
    agent reads as numbers): where the agent stands and faces relative to its start, in 0.1 m
    and 5-degree steps as :func:`goal_text` -- "You are 2.3 m ahead of and 0.4 m to the left of
    your start, facing 40 degrees left of your start heading." A memory of the way walked that
    the last frames alone do not hold."""
    forward, right = (float(v) for v in np.asarray(obs["gps"]).reshape(-1))
    degrees = int(round(math.degrees(float(np.asarray(obs["compass"]).reshape(-1)[0])) / 5) * 5)
    ahead = f"{abs(forward):.1f} m {'ahead of' if forward >= 0 else 'behind'}"
    side = f"{abs(right):.1f} m to the {'right' if right >= 0 else 'left'} of"
    if degrees == 0:
        facing = "your start heading"
    elif abs(degrees) == 180:
        facing = "back the way you started"
    else:
        facing = (
            f"{abs(degrees)} degrees {'left' if degrees > 0 else 'right'} of your start heading"
        )
    return f"You are {ahead} and {side} your start, facing {facing}."


def colourise_depth(depth: np.ndarray, max_depth: float | None = None) -> np.ndarray:
    """A depth frame (H×W×1, metres or normalised) as a uint8 H×W×3 picture: near is warm and
    bright, far dark blue, so a vision tower trained on RGB sees the geometry."""
    d = np.asarray(depth, dtype=np.float32)[..., 0]
    scale = max_depth if max_depth else max(float(d.max()), 1e-6)
    t = np.clip(d / scale, 0.0, 1.0)
    near = 1.0 - t
    rgb = np.stack([near, near**2 * 0.8, 0.35 * t + 0.15 * near], axis=-1)
    return (rgb * 255).astype(np.uint8)


def memory_indices(num_past: int, count: int) -> list[int]:
    """Which of ``num_past`` earlier frames (0 = oldest) go into the prompt: the ``ceil(count/2)``
    most recent, and the rest spread evenly over the older ones (VLN-R1's long-short memory).
    Ascending; fewer when there are fewer frames."""
    if count <= 0 or num_past <= 0:
        return []
    short = min(num_past, -(-count // 2))
    recent = list(range(num_past - short, num_past))
    older = num_past - short
    long = min(older, count - short)
    spread = [int(round(i * (older - 1) / max(long - 1, 1))) for i in range(long)] if long else []
    return sorted(set(spread)) + recent


@dataclass
class NavPrompt:
    """What one turn's prompt holds (the ``prompt:`` section of the embodied VLM recipes)."""

    depth: bool = False  # the colourised depth frame beside the RGB one
    memory_frames: int = 0  # earlier RGB frames before the current one (long-short sampling)
    history_steps: int = 8  # the last low-level actions, written by the codec
    distance_floor: bool = False  # PointNav's distance rounded down to 0.1 m (goal_text)
    frames: int = 1  # the last K RGB frames as K separate images (1: one picture, as before)
    gps_compass: bool = (
        False  # ObjectNav / InstructNav: where it stands from its start (where_text)
    )

    def image(self, frames: list[dict[str, Any]]) -> np.ndarray | tuple[np.ndarray, ...]:
        """The turn's picture(s) from the episode's observations so far (the last one is now):
        one picture, or with ``frames`` above 1 a tuple of separate images (:meth:`recent`)."""
        if self.frames > 1:
            return self.recent(frames)
        now = frames[-1]
        parts = [
            np.asarray(frames[i]["rgb"])
            for i in memory_indices(len(frames) - 1, self.memory_frames)
        ]
        parts.append(np.asarray(now["rgb"]))
        if self.depth:
            parts.append(colourise_depth(now["depth"]))
        return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]

    def recent(self, frames: list[dict[str, Any]]) -> tuple[np.ndarray, ...]:
        """The last ``frames`` RGB frames, oldest first, each its own image at its own size,
        then the current depth frame colourised (``depth``). Early in an episode, with fewer
        frames seen, the first frame is repeated in front: every turn shows the same number of
        images (the same prompt length, so a batch of episodes pads nothing), and a repeated
        first frame reads as "I have not moved yet", which is true."""
        last = frames[-self.frames :]
        images = [np.asarray(frames[0]["rgb"])] * (self.frames - len(last))
        images += [np.asarray(f["rgb"]) for f in last]
        if self.depth:
            images.append(colourise_depth(frames[-1]["depth"]))
        return tuple(images)

    def goal(self, obs: dict[str, Any], task: str) -> str:
        """The turn's goal in words (:func:`goal_text`), then with ``gps_compass`` where the
        agent stands relative to its start (:func:`where_text`)."""
        text = goal_text(obs, task, self.distance_floor)
        return f"{text} {where_text(obs)}" if self.gps_compass else text

    def history(self, actions: list[int], codec: NavActionCodec) -> list[str]:
        """The prompt's history entry: the last ``history_steps`` low-level actions as one
        line (``[]`` before the first). It depends on what was executed, not on how it was
        asked for, so demonstrations and the agent's own turns read alike."""
        recent = actions[-self.history_steps :] if self.history_steps else []
        return [codec.render(recent)] if recent else []


# -- the agent ----------------------------------------------------------------------------------
@dataclass
class AgentSpec:
    """Everything besides the weights that a navigation VLM agent needs (its json file)."""

    task: str = "pointnav"
    prompt: NavPrompt = field(default_factory=NavPrompt)
    max_repeat: int = 4
    max_steps: int = 8
    max_new_tokens: int = 16
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # the env it was trained in
    # text (move_forward(3)) or toolcall (TRL's navigation tool calls); files saved before the
    # key have none: text
    action_format: str = "text"

    def codec(self, forward_step: float, turn_degrees: float) -> NavActionCodec:
        if self.action_format == "toolcall":
            # the tools' schemas as TRL shows them: the navigation TRL environment's methods
            from pixelrl.embodied.trl_env import NavEnvironment
            from pixelrl.envs.nav.toolcall import NavToolCallCodec
            from pixelrl.trl_env import tool_schemas

            return NavToolCallCodec(forward_step, turn_degrees, self.max_repeat, self.max_steps,
                                    tools=tool_schemas(NavEnvironment))  # fmt: skip
        return NavActionCodec(forward_step, turn_degrees, self.max_repeat, self.max_steps)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> AgentSpec:
        known = set(cls.__dataclass_fields__)
        unknown = set(raw) - known
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}")
        raw = dict(raw)
        prompt = raw.get("prompt", {})
        if not isinstance(prompt, dict):
            raise ValueError(f"'prompt' must be an object, got {prompt!r}")
        unknown = set(prompt) - set(NavPrompt.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown keys in 'prompt': {sorted(unknown)}")
        raw["prompt"] = NavPrompt(**prompt)
        spec = cls(**raw)
        spec.validate()
        return spec

    def validate(self) -> None:
        """``ValueError`` naming the key whose value is of the wrong type or out of range."""
        if self.action_format not in ACTION_FORMATS:
            raise ValueError(
                f"'action_format' must be {' or '.join(ACTION_FORMATS)}, "
                f"got {str(self.action_format)[:40]!r}"
            )
        if self.task not in TASKS.values():
            raise ValueError(
                f"'task' must be one of {', '.join(TASKS.values())}, got {self.task!r}"
            )
        counts = {
            "max_repeat": (self.max_repeat, 1),
            "max_steps": (self.max_steps, 1),
            "max_new_tokens": (self.max_new_tokens, 1),
            "prompt.memory_frames": (self.prompt.memory_frames, 0),
            "prompt.history_steps": (self.prompt.history_steps, 0),
            "prompt.frames": (self.prompt.frames, 1),
        }
        for key, (value, least) in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"'{key}' must be an integer >= {least}, got {value!r}")
        if self.prompt.frames > 1 and self.prompt.memory_frames:
            raise ValueError(
                "'prompt.memory_frames' stitches earlier frames into one picture and "
                "'prompt.frames' shows them as separate images: set one of them, not both"
            )
        for key in ("depth", "gps_compass"):
            value = getattr(self.prompt, key)
            if not isinstance(value, bool):
                raise ValueError(f"'prompt.{key}' must be true or false, got {value!r}")
        if self.prompt.gps_compass and self.task == "pointnav":
            raise ValueError(
                "'prompt.gps_compass' reads the gps and compass sensors of ObjectNav and "
                "InstructNav; PointNav has none (its goal already says where the goal is)"
            )
        if not isinstance(self.env_kwargs, dict):
            raise ValueError(f"'env_kwargs' must be an object, got {self.env_kwargs!r}")


class VLMNavAgent:
    """A habitat-style agent (``reset``, ``act``) around a navigation VLM policy.

    ``act(obs)`` returns the next low-level action id, or ``IDLE`` when the model's answer did
    not parse (the env plays it as a turn that does nothing). A parsed answer of several steps is queued
    and played out over the next calls. ``last_text`` is the latest answer (a caption for
    recordings), ``turns`` the answers asked for this episode.

    Several episodes at once: :meth:`copies` gives agents sharing the policy, and
    :meth:`act_batch` acts for all of them with one batched ``generate`` per turn
    (:class:`~pixelrl.embodied.benchmark.Benchmark` does this with ``batch_size``)."""

    def __init__(
        self, policy: Any, spec: AgentSpec, deterministic: bool = True, temperature: float = 1.0
    ):
        self.policy, self.spec = policy, spec
        self.deterministic, self.temperature = deterministic, temperature
        self.reset()

    def reset(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.executed: list[int] = []
        self.queue: list[int] = []
        self.last_text = ""
        self.turns = 0
        self.idled = False

    @property
    def asks(self) -> bool:
        """Whether the next :meth:`act` asks the model (no queued steps left); batched play
        steps the agents that do not first, so the ones that do ask together."""
        return not self.queue

    def act(self, observations: dict[str, Any]) -> int | str:
        return self.act_batch([self], [observations])[0]

    def copies(self, n: int) -> list[VLMNavAgent]:
        """``n`` fresh agents that share this one's policy and decoding settings, for playing
        ``n`` episodes together with :meth:`act_batch`."""
        return [
            VLMNavAgent(self.policy, self.spec, self.deterministic, self.temperature)
            for _ in range(n)
        ]

    def act_batch(
        self, agents: list[VLMNavAgent], observations: list[dict[str, Any]]
    ) -> list[int | str]:
        """``agent.act(obs)`` for each of several agents (each in its own episode; this one's
        policy answers): the agents that need a new answer this turn get it from one batched
        ``generate``; the others play their queued steps. With greedy answers each agent acts
        exactly as it would alone (a left-padded batch changes no answer)."""
        asking = []
        for agent, obs in zip(agents, observations):
            if agent.idled:  # the frame after an idle turn is the same view: keep one copy
                agent.frames[-1] = obs
            else:
                agent.frames.append(obs)
            agent.idled = False
            if not agent.queue:
                asking.append(agent)
        for agent, completion in zip(asking, self.generate(asking) if asking else []):
            agent.last_text = completion.text
            agent.turns += 1
            if completion.parsed:
                agent.queue = list(completion.action)
            else:
                agent.idled = True
        actions: list[int | str] = []
        for agent in agents:
            if agent.idled:
                actions.append(IDLE)
                continue
            action = agent.queue.pop(0)
            agent.executed.append(action)
            actions.append(action)
        return actions

    def prompt(self) -> tuple[np.ndarray | tuple[np.ndarray, ...], str, list[str]]:
        """(image, goal text, history) of this agent's current turn."""
        codec = self.policy.codec
        return (
            self.spec.prompt.image(self.frames),
            self.spec.prompt.goal(self.frames[-1], self.spec.task),
            self.spec.prompt.history(self.executed, codec),
        )

    def generate(self, agents: list[VLMNavAgent]) -> list[Any]:
        """One completion for each agent's current turn, in one batched ``generate``."""
        prompts = [a.prompt() for a in agents]
        groups = self.policy.generate(
            [p[0] for p in prompts], [p[1] for p in prompts], [p[2] for p in prompts],
            num_samples=1, do_sample=not self.deterministic, temperature=self.temperature,
            max_new_tokens=self.spec.max_new_tokens,
        )  # fmt: skip
        return [g[0] for g in groups]


# -- files --------------------------------------------------------------------------------------
def save_agent(policy: Any, spec: AgentSpec, folder: str | Path) -> Path:
    """The policy's model folder (:meth:`~pixelrl.vision.vlm.VLMPolicy.save`) plus the agent's
    json."""
    folder = policy.save(folder)
    (folder / AGENT_FILE).write_text(json.dumps(spec.to_json(), indent=2) + "\n")
    return folder


class AgentFileError(ValueError):
    """A folder that is not a saved navigation VLM agent."""


def read_spec(folder: str | Path) -> AgentSpec:
    """The :class:`AgentSpec` saved in an agent folder; :class:`AgentFileError` if it is none."""
    folder = Path(folder)
    spec_file = folder / AGENT_FILE
    if not folder.is_dir():
        from pixelrl.checkpoint import missing_path_message

        raise AgentFileError(missing_path_message(folder, "agent folder"))
    if not spec_file.is_file():
        raise AgentFileError(
            f"{folder} is not a navigation VLM agent (no {AGENT_FILE}; "
            "it is written by pixelrl train embodied/vlm-sft or embodied/vlm-grpo)"
        )
    try:
        return AgentSpec.from_json(json.loads(spec_file.read_text()))
    except (ValueError, TypeError) as e:
        raise AgentFileError(f"{spec_file}: {e}") from None


def load_agent(
    folder: str | Path, forward_step: float, turn_degrees: float, device: str | None = None,
    **agent_kwargs: Any,
) -> VLMNavAgent:  # fmt: skip
    """The agent saved in ``folder`` by :func:`save_agent`, acting with the env's step sizes."""
    from pixelrl.vision.vlm import MODEL_FILE_ERRORS, load_vlm

    spec = read_spec(folder)
    try:
        policy = load_vlm(str(folder), device=device, codec=spec.codec(forward_step, turn_degrees))
    except MODEL_FILE_ERRORS as e:  # weights or processor files missing, cut or not weights
        raise AgentFileError(f"{folder}: cannot load the model: {e}") from None
    policy.model.eval()
    return VLMNavAgent(policy, spec, **agent_kwargs)
