"""pixelrl envs as TRL environments: ``GRPOTrainer(environment_factory=...)`` trains on them.

TRL (>= 1.16) runs an environment *as tools*: each public method of the environment class is a
tool the model may call (its name, type hints and Google-style docstring become the tool's JSON
schema), ``reset(**row)`` starts a rollout from a train-dataset row and returns text appended to
the prompt, and ``get_reward()`` scores the finished rollout. This module gives every registered
GUI and navigation env that shape::

    from trl import GRPOConfig, GRPOTrainer
    from pixelrl.trl_env import environment_factory, train_dataset

    factory = environment_factory("pixelrl/PointNav-v0")
    rows = train_dataset("pixelrl/PointNav-v0", seeds=range(64))   # prompt, image, seed
    GRPOTrainer(model, args=GRPOConfig(...), train_dataset=rows,
                environment_factory=factory).train()

- **Seeds come from the rows.** ``reset(seed=...)`` resets the gym env with the row's seed, so a
  rollout is reproducible; the row's ``image`` is the screen or frame that reset shows (the
  dataset is built by resetting the same env), given to the model with the prompt.
- **Tools are the actions.** GUI: ``click``, ``double_click``, ``right_click``, ``drag``,
  ``scroll``, ``type``, ``hotkey``, ``done`` in screen pixels; navigation: ``move_forward(steps)``,
  ``turn_left(times)``, ``turn_right(times)``, ``stop``. A tool answers with the new screenshot or
  frame (an image the model sees) and text: the instruction or the goal in words, and whether the
  episode is over. A refused action (off screen, an unknown key, a count that is not a whole
  number in range: NaN, 2.5, ``"3"``) or a call after the episode ended raises
  :class:`ToolError`, which TRL hands back to the model as the tool's error; so does a row's
  seed outside 0..2**63-1.
- **The reward is ours.** ``get_reward`` is the episode's return as our own multi-turn trainer
  counts it: the GUI env's reward (its task checker), or the navigation measures composed by
  :func:`pixelrl.embodied.rewards.measure_reward` (geodesic progress, slack, Success, SPL).
  Nothing here adds reward or rollout logic of its own (DESIGN: other engines are adapters).

A dict of factories (``{"click": environment_factory(...), "nav": ...}``) runs several tasks in
one TRL run: each row then names its ``environment`` (:func:`train_dataset` with ``name=``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import gymnasium
import numpy as np

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl import registry
from pixelrl.envs import family_of
from pixelrl.envs.gui_action import ActionError, toolcall
from pixelrl.envs.nav import toolcall as nav_toolcall
from pixelrl.seeds import checked_seed

# The words before the task's own (the row's prompt); the tools' schemas follow in the system turn.
GUI_PROMPT = toolcall.TOOL_PROMPT  # the tool-call dialect's too: a model trained on it reads it
NAV_PROMPT = nav_toolcall.TOOL_PROMPT  # the navigation tool-call dialect's, for the same reason


class ToolError(ValueError):
    """A tool call the env refuses; TRL returns it to the model as the tool's error."""


def whole_number(value: Any, name: str, low: int, high: int) -> int:
    """A count a model wrote as an int in ``low..high``, or a :class:`ToolError` naming ``name``
    (a model's arguments are anything JSON holds: ``2.5``, ``"3"``, ``true``, NaN, 10**400)."""
    try:
        return toolcall.whole_number(value, name, low, high)
    except ActionError as e:
        raise ToolError(str(e)) from None


def make_env(env_id: str, url: str | None = None, **env_kwargs: Any) -> gymnasium.Env:
    """``env_id`` in this process, or with ``url`` one session of it behind ``pixelrl serve``
    at that address (:class:`pixelrl.serve_client.RemoteEnv`: the same observations and rewards;
    ``env_kwargs`` are then the server's ``--env-kwargs``)."""
    if url is None:
        return gymnasium.make(env_id, **env_kwargs)
    from pixelrl.serve_client import RemoteEnv

    return RemoteEnv(url, env_id, **env_kwargs)


class ToolEnvironment:
    """What every pixelrl TRL environment shares: one gym env, a seeded ``reset`` from a row,
    tool answers with an image, the episode's return for ``get_reward``.

    Subclasses add the action tools (public methods) and say how an observation reads as text
    (:meth:`_describe`) and what a step adds to the return (:meth:`_reward`)."""

    PROMPT = ""

    def __init__(self, env_id: str, url: str | None = None, **env_kwargs: Any) -> None:
        self.env_id = env_id
        self.env = make_env(env_id, url, **env_kwargs)
        self._return = 0.0
        self._over = True
        self._obs: dict[str, Any] = {}
        self._info: dict[str, Any] = {}

    def reset(self, seed: int | None = None, **row: Any) -> str:
        """Start the rollout of a dataset row: the env reset with the row's ``seed``. Returns
        the task in words (TRL appends it to the prompt)."""
        seed = checked_seed(seed, ToolError)  # gymnasium's own errors would reach the trainer
        self._obs, self._info = self.env.reset(seed=seed)
        self._return, self._over = 0.0, False
        return "\n" + self._describe()  # TRL appends it to the prompt's words

    def get_reward(self) -> float:
        """The rollout's return: the sum of our rewards over the steps the tools took."""
        return float(self._return)

    # -- for subclasses -------------------------------------------------------------------------
    def _describe(self) -> str:
        raise NotImplementedError

    def _reward(self, reward: float, info: dict[str, Any], done: bool) -> float:
        """What one env step adds to the return (default: the env's own reward)."""
        return float(reward)

    def _image(self) -> np.ndarray:
        raise NotImplementedError

    def _play(self, actions: Iterable[Any]) -> list[dict[str, Any]]:
        """Step the env with each of ``actions`` until the episode ends; the tool's answer."""
        if self._over:
            raise ToolError("the episode is over: no more actions (end your turn)")
        for action in actions:
            try:
                self._obs, reward, terminated, truncated, self._info = self.env.step(action)
            except ValueError as e:  # ActionError: the env refused it and changed nothing
                raise ToolError(" ".join(str(e).split())) from None
            self._over = bool(terminated or truncated)
            self._return += self._reward(reward, self._info, self._over)
            if self._over:
                break
        return self._answer()

    def _answer(self) -> list[dict[str, Any]]:
        from PIL import Image

        text = self._describe()
        if self._over:
            outcome = "succeeded" if self._info.get("success") else "ended without success"
            text += f" The episode is over: it {outcome}."
        return [{"type": "image", "image": Image.fromarray(self._image())},
                {"type": "text", "text": text}]  # fmt: skip

    # not `close`: every public method is a tool to TRL
    def _close(self) -> None:
        env, self.env = getattr(self, "env", None), None
        if env is not None:
            env.close()

    def __del__(self) -> None:  # TRL never closes its envs; browsers and X servers must go
        try:
            self._close()
        except Exception:  # noqa: BLE001  (interpreter shutdown: nothing left to report to)
            pass


class GUIEnvironment(ToolEnvironment):
    """A GUI env (emulated desktop, MiniWoB++, X11/OSWorld task) as TRL tools, in screen pixels
    of the screenshot the model is shown. The reward is the env's task checker."""

    PROMPT = GUI_PROMPT

    def _describe(self) -> str:
        return f"Task: {self._obs['instruction']}"

    def _image(self) -> np.ndarray:
        return self._obs["screenshot"]

    def _act(self, tool: str, **arguments: Any) -> list[dict[str, Any]]:
        """Play the tool call: its action is the tool-call dialect's
        (:func:`pixelrl.envs.gui_action.toolcall.tool_action`), so a model that learnt that
        dialect in our SFT means the same here."""
        try:
            action = toolcall.tool_action(tool, arguments)
        except (ActionError, TypeError) as e:
            raise ToolError(" ".join(str(e).split())) from None
        return self._play([action])

    def click(self, x: int, y: int) -> list:
        """Left-click a point of the screen.

        Args:
            x: Pixels from the screenshot's left edge.
            y: Pixels from the screenshot's top edge.

        Returns:
            The new screenshot and the task.
        """
        return self._act("click", x=x, y=y)

    def double_click(self, x: int, y: int) -> list:
        """Double-click a point of the screen (open an icon).

        Args:
            x: Pixels from the screenshot's left edge.
            y: Pixels from the screenshot's top edge.

        Returns:
            The new screenshot and the task.
        """
        return self._act("double_click", x=x, y=y)

    def right_click(self, x: int, y: int) -> list:
        """Right-click a point of the screen (a context menu).

        Args:
            x: Pixels from the screenshot's left edge.
            y: Pixels from the screenshot's top edge.

        Returns:
            The new screenshot and the task.
        """
        return self._act("right_click", x=x, y=y)

    def drag(self, x: int, y: int, to_x: int, to_y: int) -> list:
        """Press the left button at one point, move to another and release it.

        Args:
            x: Start, pixels from the left edge.
            y: Start, pixels from the top edge.
            to_x: End, pixels from the left edge.
            to_y: End, pixels from the top edge.

        Returns:
            The new screenshot and the task.
        """
        return self._act("drag", x=x, y=y, to_x=to_x, to_y=to_y)

    def scroll(self, x: int, y: int, clicks: int) -> list:
        """Turn the mouse wheel over a point.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            clicks: Wheel clicks; positive scrolls down (the content moves up), negative up.

        Returns:
            The new screenshot and the task.
        """
        return self._act("scroll", x=x, y=y, clicks=clicks)

    def type(self, text: str) -> list:
        """Type text at the keyboard focus.

        Args:
            text: The characters to type.

        Returns:
            The new screenshot and the task.
        """
        return self._act("type", text=text)

    def hotkey(self, keys: str) -> list:
        """Press a key or a key combination.

        Args:
            keys: Key names joined by '+', e.g. 'enter', 'ctrl+s', 'tab'.

        Returns:
            The new screenshot and the task.
        """
        return self._act("hotkey", keys=keys)

    def done(self) -> list:
        """Say the task is complete; the episode ends.

        Returns:
            The last screenshot and the outcome.
        """
        return self._act("done")


def trl_env_ids(near: str = "") -> list[str]:
    """The registered ids a TRL environment wraps (GUI and navigation envs: those of a task
    family), the nearest to ``near`` first."""
    import difflib

    ids = sorted(i for i in gymnasium.registry if family_of(i) is not None)
    ratio = {i: difflib.SequenceMatcher(None, near.lower(), i.lower()).ratio() for i in ids}
    return sorted(ids, key=lambda i: -ratio[i])


def _not_wrapped(env_id: object, why: str, shown: int = 8) -> ValueError:
    ids = trl_env_ids(str(env_id))
    more = f" and {len(ids) - shown} more (`pixelrl envs` lists them)" if len(ids) > shown else ""
    return ValueError(f"{why}; the GUI and navigation envs, nearest first: "
                      f"{', '.join(ids[:shown])}{more}")  # fmt: skip


def env_kind(env_id: str) -> str:
    """``"gui"`` or ``"nav"``: which TRL environment wraps ``env_id`` (by where it is built).
    A ``ValueError`` naming the ids it can wrap, nearest first, for an unknown id or one that
    is neither a GUI nor a navigation env (CartPole's screen has no pointer to give tools)."""
    if not isinstance(env_id, str) or env_id not in gymnasium.registry:
        raise _not_wrapped(env_id, f"unknown env id {str(env_id)[:80]!r}")
    if family_of(env_id) is None:
        raise _not_wrapped(env_id, f"{env_id!r} is not a GUI or navigation env")
    entry = str(gymnasium.registry[env_id].entry_point)
    return "nav" if entry.startswith("pixelrl.envs.nav") else "gui"


def environment_class(env_id: str) -> type[ToolEnvironment]:
    kind = env_kind(env_id)
    if kind == "gui":
        return GUIEnvironment
    # the navigation reward and goal words are the navigation domain's: it registers its class
    # (pixelrl.registry, kind "trl_env"), the spine imports no domain
    return registry.resolve("trl_env", kind)


def environment_factory(
    env_id: str, url: str | None = None, **env_kwargs: Any
) -> Callable[[], ToolEnvironment]:
    """A zero-argument callable making a fresh TRL environment of ``env_id`` (TRL makes one per
    concurrent rollout and reuses it across ``reset``\\ s). With ``url`` (``http://host:port``
    of ``pixelrl serve ENV_ID``) each environment plays its own session on that server: the same
    tools, observations and rewards, the env's work on another machine."""
    import functools

    cls = environment_class(env_id)
    if url is None:  # the partial as before: TRL users may read its keywords
        return functools.partial(cls, env_id, **env_kwargs)
    return functools.partial(cls, env_id, url=url, **env_kwargs)


def train_dataset(
    env_id: str,
    seeds: Iterable[int],
    name: str | None = None,
    prompt: str | None = None,
    **env_kwargs: Any,
):
    """A ``datasets.Dataset`` of one row a seed: ``prompt`` (a user turn: the environment's
    standing words, or ``prompt``), ``image`` (the first screen or frame of that seed's episode)
    and ``seed``; with ``name``, an ``environment`` column for a dict of factories."""
    from datasets import Dataset
    from PIL import Image

    env = environment_class(env_id)(env_id, **env_kwargs)
    words = prompt if prompt is not None else env.PROMPT
    rows: dict[str, list] = {"prompt": [], "image": [], "seed": []}
    try:
        for seed in seeds:
            env.reset(seed=int(seed))
            rows["prompt"].append([{"role": "user", "content": words}])
            rows["image"].append(Image.fromarray(env._image()))
            rows["seed"].append(int(seed))
    finally:
        env._close()
    if name is not None:
        rows["environment"] = [name] * len(rows["seed"])
    return Dataset.from_dict(rows)


def tools_of(environment: ToolEnvironment) -> list[Callable]:
    """The environment's tools as TRL finds them: its public methods but ``reset`` and
    ``get_reward``."""
    import inspect

    names = [n for n, _ in inspect.getmembers(environment.__class__, predicate=inspect.isfunction)
             if not n.startswith("_") and n not in ("reset", "get_reward")]  # fmt: skip
    return [getattr(environment, n) for n in names]


def tool_schemas(cls: type[ToolEnvironment]) -> list[dict]:
    """The JSON schemas TRL shows a model of ``cls``'s tools (from their type hints and
    docstrings): the system turn of a recipe that teaches the tool-call dialect
    (``action_format: toolcall``), so its model sees what TRL will show it."""
    from transformers.utils import get_json_schema

    bare = cls.__new__(cls)  # no env: only its methods' signatures
    return [get_json_schema(tool) for tool in tools_of(bare)]


def gui_tool_schemas() -> list[dict]:
    """:func:`tool_schemas` of :class:`GUIEnvironment`."""
    return tool_schemas(GUIEnvironment)


def tiny_tool_model(
    env_id: str,
    seed: int = 0,
    text_size: dict[str, int] | None = None,
    vocab_size: int = 800,
    **env_kwargs: Any,
):
    """``(model, processor)``: a tiny Qwen2.5-VL built from config (random weights,
    :func:`pixelrl.vision.tiny_vlm.build_tiny_vlm`) whose chat template is Qwen3-VL's, the
    tool-calling template TRL knows how to parse, and whose tokenizer is trained on the env's
    prompt, its tools' names and a tool call's shape. For tests and CPU benches; real users load
    a tool-calling VLM by name (e.g. ``Qwen/Qwen3-VL-2B-Instruct``)."""
    import json

    from transformers.utils import get_json_schema

    from pixelrl.vision.tiny_vlm import build_tiny_vlm, use_tool_chat_template

    env = environment_class(env_id)(env_id, **env_kwargs)
    try:
        schemas = [get_json_schema(tool) for tool in tools_of(env)]
        task = env.reset(seed=seed)
    finally:
        env._close()
    calls = [json.dumps({"name": s["function"]["name"],
                         "arguments": {k: 1 for k in s["function"]["parameters"]["properties"]}})
             for s in schemas]  # fmt: skip
    corpus = [env.PROMPT, task, *map(json.dumps, schemas)]
    corpus += [f"<tool_call>\n{c}\n</tool_call>" for c in calls] * 20
    model, processor = build_tiny_vlm("qwen2_5_vl", corpus, seed=seed, text_size=text_size,
                                      vocab_size=vocab_size)  # fmt: skip
    use_tool_chat_template(processor, "qwen2_5_vl")
    return model, processor
