"""GUI episodes as the text-policy trainer sees them (:mod:`pixelrl.gui_agent.train_vlm`): a live
one, played in an env group (:class:`GUIPlayer`; :func:`play_group` plays a multi-turn GRPO group
of them, in this process or on Ray workers, :func:`group_envs`), and a recorded one, read back as
SFT examples (:func:`sft_examples`). Either way a turn is (screenshot, instruction, earlier actions
as the policy writes them) -> the action text."""

from __future__ import annotations

import functools
from pathlib import Path

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
