"""Our verifiable GUI rewards as TRL reward functions: ``GRPOTrainer(reward_funcs=...)``.

TRL calls each reward function as ``f(prompts=..., completions=..., completion_ids=...,
**columns)`` where ``columns`` are the train dataset's other columns, one value a completion,
and logs ``rewards/<function name>/mean``. The functions here score the *first action* of a
completion with :mod:`pixelrl.vision.rewards` (nothing is scored twice, nothing new)::

    from trl import GRPOConfig, GRPOTrainer
    from pixelrl.trl_rewards import reward_funcs_and_weights

    funcs, weights = reward_funcs_and_weights()          # all five, their default weights
    GRPOTrainer(model, reward_funcs=funcs, args=GRPOConfig(reward_weights=weights, ...),
                train_dataset=rows)                      # rows: prompt, target_bbox, ...

- **The action** is the first assistant turn's first tool call (the tools of
  :class:`pixelrl.trl_env.GUIEnvironment`: ``click(x, y)``, ``type(text)``, ...) or, without
  one, its text read by :func:`pixelrl.envs.gui_action.parse_action` (pyautogui or UI-TARS
  calls). A plain-text completion (a non-conversational dataset) is read as that text.
- **Targets come from columns**: ``target_bbox`` (``[x0, y0, x1, y1]`` in screen pixels, x1
  and y1 exclusive, the GUI families' privileged key) for click-in-box, IoU and Gaussian;
  ``target_text`` for type-F1; ``screen_size`` (``[width, height]``, optional) makes an
  off-screen action unparsable, as the envs refuse it.
- **A row without the target scores None**, which TRL counts as "does not apply" (NaN, left
  out of that function's mean): a typing row has no click-in-box reward.
- Unparsable or hostile output (wrong tool names, arguments of the wrong type, NaN) scores 0;
  nothing here raises on a model's answer or evaluates it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pixelrl.envs.gui_action import Action, ActionError, toolcall
from pixelrl.vision import rewards

__all__ = [
    "REWARD_WEIGHTS",
    "click_in_box_reward",
    "completion_action",
    "format_reward",
    "gaussian_reward",
    "iou_reward",
    "reward_funcs_and_weights",
    "type_f1_reward",
]


def _tool_call_action(call: Any) -> Action | None:
    """The action of one TRL tool call (``{"type": "function", "function": {"name", "arguments"}}``,
    arguments a dict or its JSON text), or None when it is not one of our GUI tools' calls."""
    function = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(function, dict) or function.get("name") not in toolcall.TOOL_ARGUMENTS:
        return None
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    try:  # the tool-call dialect's action: what GUIEnvironment's tools play (one source)
        return toolcall.tool_action(function["name"], arguments)
    except (ActionError, TypeError, ValueError, OverflowError):
        return None


def _on_screen(action: Action | None, screen_size: Sequence[int] | None) -> Action | None:
    if action is None or screen_size is None:
        return action
    try:
        action.validate(tuple(int(v) for v in screen_size))
    except (ActionError, TypeError, ValueError):
        return None
    return action


def _text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _first_assistant_turn(completion: Any) -> dict[str, Any] | None:
    if isinstance(completion, str):
        return {"content": completion}
    for message in completion if isinstance(completion, list) else ():
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            return message
    return None


def completion_action(completion: Any, screen_size: Sequence[int] | None = None) -> Action | None:
    """The first action of a TRL completion (a text, or a list of chat messages): its first
    assistant turn's first tool call, else that turn's text parsed; None if there is none."""
    turn = _first_assistant_turn(completion)
    if turn is None:
        return None
    calls = turn.get("tool_calls")
    if calls:
        action = _tool_call_action(calls[0]) if isinstance(calls, list) else None
    else:
        action = rewards.safe_parse(_text_of(turn.get("content")), screen_size)[0]
    return _on_screen(action, screen_size)


def _completion_text(completion: Any) -> str:
    turn = _first_assistant_turn(completion)
    return _text_of(turn.get("content")) if turn is not None else ""


def _column(kwargs: dict[str, Any], name: str, n: int) -> list[Any]:
    values = kwargs.get(name)
    return list(values) if values is not None else [None] * n


def _actions(completions: Sequence[Any], kwargs: dict[str, Any]) -> list[Action | None]:
    sizes = _column(kwargs, "screen_size", len(completions))
    return [completion_action(c, s) for c, s in zip(completions, sizes)]


def _per_row(scores: np.ndarray, targets: Sequence[Any]) -> list[float | None]:
    """TRL's list: a float a row, None where the row has no target."""
    return [None if t is None else float(s) for s, t in zip(scores, targets)]


def _point_reward(score: Callable[[Any, Any], np.ndarray], completions, kwargs) -> list:
    targets = _column(kwargs, "target_bbox", len(completions))
    points = [a.point if a is not None else None for a in _actions(completions, kwargs)]
    return _per_row(score(points, targets), targets)


def click_in_box_reward(prompts, completions, **kwargs) -> list[float | None]:
    """1 when the action's point lies in the row's ``target_bbox``, else 0
    (:func:`pixelrl.vision.rewards.point_in_box`, ScreenSpot's accuracy)."""
    return _point_reward(rewards.point_in_box, completions, kwargs)


def gaussian_reward(prompts, completions, **kwargs) -> list[float | None]:
    """GUI-G²'s Gaussian point reward of the action's point around ``target_bbox``
    (:func:`pixelrl.vision.rewards.gaussian_point_reward`, σ = half the box): dense credit
    for near misses."""
    return _point_reward(rewards.gaussian_point_reward, completions, kwargs)


def iou_reward(prompts, completions, **kwargs) -> list[float | None]:
    """IoU of the box the answer writes (``[x0, y0, x1, y1]`` in pixels, the first such group of
    its text) with ``target_bbox`` (:func:`pixelrl.vision.rewards.box_iou`); 0 without a box."""
    targets = _column(kwargs, "target_bbox", len(completions))
    boxes = rewards.parse_boxes([_completion_text(c) for c in completions])
    return _per_row(rewards.box_iou(boxes, targets), targets)


def format_reward(prompts, completions, **kwargs) -> list[float | None]:
    """1 when the completion holds one action we can play (a GUI tool call, or one pyautogui /
    UI-TARS call; on screen where the row has ``screen_size``), else 0."""
    return [float(a is not None) for a in _actions(completions, kwargs)]


def type_f1_reward(prompts, completions, **kwargs) -> list[float | None]:
    """Token F1 of the text the action types against ``target_text``
    (:func:`pixelrl.vision.rewards.token_f1`); 0 when the action types nothing."""
    targets = _column(kwargs, "target_text", len(completions))
    typed = [
        a.text if a is not None and a.kind == "type" else None
        for a in _actions(completions, kwargs)
    ]
    scores = rewards.token_f1(typed, ["" if t is None else str(t) for t in targets])
    return _per_row(np.where([t is None for t in typed], 0.0, scores), targets)


# GUI-R1's split, 0.8 for being right and 0.2 for a well-formed action; the dense terms (a
# Gaussian near miss, a box's overlap) at GUI-G1's IoU weight, so a hit always outweighs them.
REWARD_WEIGHTS: dict[str, float] = {
    "click_in_box": 0.8,
    "type_f1": 0.8,
    "format": 0.2,
    "gaussian": 0.25,
    "iou": 0.25,
}
REWARD_FUNCS: dict[str, Callable[..., list[float | None]]] = {
    "click_in_box": click_in_box_reward,
    "type_f1": type_f1_reward,
    "format": format_reward,
    "gaussian": gaussian_reward,
    "iou": iou_reward,
}


def reward_funcs_and_weights(
    names: Sequence[str] | None = None, weights: dict[str, float] | None = None
) -> tuple[list[Callable[..., list[float | None]]], list[float]]:
    """``(reward_funcs, reward_weights)`` for ``GRPOTrainer`` and ``GRPOConfig``: the functions
    ``names`` (default: all of :data:`REWARD_FUNCS`) with :data:`REWARD_WEIGHTS`, or ``weights``
    where given. An unknown name is a ``ValueError`` naming the known ones."""
    names = list(REWARD_FUNCS) if names is None else list(names)
    weights = {**REWARD_WEIGHTS, **(weights or {})}
    unknown = [n for n in [*names, *weights] if n not in REWARD_FUNCS]
    if unknown:
        raise ValueError(f"unknown reward {unknown[0]!r}; known: {', '.join(REWARD_FUNCS)}")
    return [REWARD_FUNCS[n] for n in names], [float(weights[n]) for n in names]
