"""GUI episodes as the text-policy trainer sees them (:mod:`pixelrl.gui_agent.train_vlm`): a live
one, played in an env group (:class:`GUIPlayer`; :func:`play_group` plays a multi-turn GRPO group
of them, in this process or on Ray workers, :func:`group_envs`), and a recorded one, read back as
SFT examples (:func:`sft_examples`). Either way a turn is (screenshot, instruction, earlier actions
as the policy writes them) -> the action text."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from pixelrl.config import Config
from pixelrl.gui_agent.vlm_tasks import env_kwargs
from pixelrl.rl.text.demos import load_examples
from pixelrl.rl.text.env_group import LocalGroup, RayGroup, ray_envs
from pixelrl.rl.text.rollout import TurnResult, play_episodes
from pixelrl.rl.text.rows import Example, Prompt


class GUIPlayer:
    """One GUI episode of an env group (:mod:`pixelrl.rl.text.env_group`): its screen and
    instruction, and the actions so far. A refused action is played as a ``wait``."""

    def __init__(self, policy, screen: tuple[int, int], obs: dict) -> None:
        self.policy, self.screen, self.obs = policy, screen, obs
        self.history: list[str] = []

    def prompt(self) -> Prompt:
        return Prompt(self.obs["screenshot"], self.obs["instruction"], tuple(self.history))

    def action(self, completion):
        return completion.action  # unparsable text -> wait (parsed False)

    def observe(self, action, result) -> TurnResult:
        obs, reward, terminated, truncated, info = result
        self.history.append(self.policy.action_text(action, self.screen))
        self.obs = obs
        done = bool(terminated or truncated)
        return TurnResult(float(reward), done, bool(info.get("success", False)))

    def turn(self, env, completion) -> TurnResult:
        from pixelrl.envs.gui_action import Action, ActionError

        action = self.action(completion)
        try:
            result = env.step(action)
        except ActionError:
            action = Action.wait()
            result = env.step(action)
        return self.observe(action, result)


def sft_examples(roots: list[Path], policy) -> list[Example]:
    """Every step of the recorded episodes: (screenshot, instruction, history) -> action text."""
    return load_examples(roots, functools.partial(recorded_examples, policy))


def recorded_examples(policy, data, e: int) -> list[Example]:
    """Every step of episode ``e`` of the recording ``data`` whose action the GUI codec reads.

    With a pointer head, a click's point is the head's: the target holds the pointer token
    where the point was, and the row's ``target_bbox`` (the box the expert aimed at) is the
    head's target, or, in a recording without one, the few pixels around the expert's point.
    With mark actions a click names the mark of the prompt's screen parse that lands in that
    box (:func:`mark_target`). The history keeps the point as text, as a live episode's
    history writes it."""
    from pixelrl.envs.recording.codec import action_as_gui

    screen, rows = data.screen_size, data.steps(e)
    boxes = rows["target_bbox"] if "target_bbox" in rows else None
    marked = getattr(policy.codec, "mark_actions", False)
    examples, history = [], []
    for t, text_ in enumerate(rows["action"]):
        action = action_as_gui(str(text_), screen)
        if action is None:
            continue
        target = policy.action_text(action, screen)
        instruction = str(rows["instruction"].iloc[t])
        bbox, frame = boxes.iloc[t] if boxes is not None else None, data.frame(e, t)
        answer, box = pointer_target(policy, action, target, screen, bbox)
        if marked:
            answer = mark_target(policy, action, target, screen, bbox, frame)
        examples.append(Example(Prompt(frame, instruction, tuple(history)), answer, box=box))
        history.append(target)
    return examples


CLICK_KINDS = ("click", "double_click", "right_click")


# Around a recorded click with no target box: a box of the click's own pixels, give or take this.
POINT_BOX_RADIUS = 2


def pointer_target(policy, action, target: str, screen, bbox=None) -> tuple[str, tuple | None]:
    """``target`` as a pointer head answers it (the click's point text replaced by the pointer
    token) and the head's target box: ``bbox`` when it holds the click, else the pixels around
    the click. Unchanged (and no box) without a head, or for an action with no single point."""
    if policy.pointer is None or action.kind not in CLICK_KINDS:
        return target, None
    from pixelrl.vision.pointer_head import POINTER_TOKEN

    point = policy.codec.point_text(action.x, action.y, screen)
    if target.count(point) != 1:
        return target, None
    box = box_holding(bbox, action.x, action.y)
    if box is None:
        r, x, y = POINT_BOX_RADIUS, action.x, action.y
        box = (x - r, y - r, x + r + 1, y + r + 1)
    return target.replace(point, POINTER_TOKEN), box


def mark_target(policy, action, target: str, screen, bbox, screenshot) -> str:
    """``target`` as a mark action (``click(mark=7)``) when a mark of ``screenshot``'s screen
    parse lands in ``bbox`` (the box the expert aimed at, holding its click), as grounding
    targets name marks (:func:`pixelrl.gui_agent.vlm_grounding.grounding_examples`); else
    ``target`` (its point: an unread checkbox, an empty field, a recording without a box)."""
    box = box_holding(bbox, action.x, action.y) if action.kind in CLICK_KINDS else None
    if box is None:
        return target
    marks = policy.screen_parse.boxes(screenshot)
    return policy.codec.render_target(action, screen, marks, box)[0]


def box_holding(bbox, x: int, y: int) -> tuple[int, int, int, int] | None:
    """A recorded ``target_bbox`` as ``(x0, y0, x1, y1)`` when it is one and holds ``(x, y)``;
    None for anything else (a recording is data: missing, NaN, any shape)."""
    try:
        box = [int(v) for v in np.asarray(bbox, dtype=float).reshape(-1)]
    except (TypeError, ValueError):
        return None
    if len(box) != 4 or not (box[0] <= x < box[2] and box[1] <= y < box[3]):
        return None
    return tuple(box)


def play_group(policy, cfg: Config, seed: int, group_size: int, gcfg, env_id: str | None = None,
               envs=None) -> list:  # fmt: skip
    """``group_size`` episodes of ``env_id`` (default ``env.id``) from the same seed, sampled
    and played together (:func:`pixelrl.rl.text.rollout.play_episodes`). ``envs``: a
    ``RayVectorEnv`` of ``group_size`` such envs (:func:`group_envs`) instead of envs made here;
    an episode whose worker failed is left out."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.gui_action import Action

    def player(screen):
        return lambda env, obs, info: GUIPlayer(policy, screen, obs)

    if envs is not None:
        screen = tuple(envs.get_attr("screen_size")[0])
        group = RayGroup(envs, seed, player(screen), Action.wait(), gcfg.max_new_tokens, screen)
        return play_episodes(policy, group, sample=True, temperature=gcfg.temperature)
    env_list = [gym.make(env_id or cfg.env.id, **env_kwargs(cfg)) for _ in range(group_size)]
    try:
        screen = tuple(env_list[0].unwrapped.screen_size)
        group = LocalGroup(env_list, [seed] * group_size, player(screen), gcfg.max_new_tokens,
                           screen)  # fmt: skip
        return play_episodes(policy, group, sample=True, temperature=gcfg.temperature)
    finally:
        for e in env_list:
            e.close()


def group_envs(cfg: Config, env_id: str, group_size: int):
    """``group_size`` envs of ``env_id`` in Ray actors (``envs.per_worker`` each), for
    :func:`play_group`; a refused action is played as a ``wait``, as in this process."""
    from pixelrl.envs.gui_action import Action

    return ray_envs(cfg, env_id, env_kwargs(cfg), group_size, Action.wait())
