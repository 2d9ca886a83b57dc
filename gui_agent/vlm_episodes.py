"""GUI episodes as the text-policy trainer sees them (:mod:`pixelrl.gui_agent.train_vlm`): a live
one, played in an env group (:class:`GUIPlayer`), and a recorded one, read back as SFT examples
(:func:`sft_examples`). Either way a turn is (screenshot, instruction, earlier actions as the
policy writes them) -> the action text."""

from __future__ import annotations

import functools
from pathlib import Path

from pixelrl.rl.text.demos import load_examples
from pixelrl.rl.text.rollout import TurnResult
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
    """Every step of episode ``e`` of the recording ``data`` whose action the GUI codec reads."""
    from pixelrl.envs.recording.codec import action_as_gui

    screen, rows = data.screen_size, data.steps(e)
    examples, history = [], []
    for t, text_ in enumerate(rows["action"]):
        action = action_as_gui(str(text_), screen)
        if action is None:
            continue
        target = policy.action_text(action, screen)
        instruction = str(rows["instruction"].iloc[t])
        examples.append(Example(Prompt(data.frame(e, t), instruction, tuple(history)), target))
        history.append(target)
    return examples
