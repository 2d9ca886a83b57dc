"""Navigation episodes as the text-policy trainer sees them (:mod:`pixelrl.embodied.vlm_train`):
one episode of an env group (:class:`NavPlayer`: the agent's frames and history, each turn's
low-level steps and reward), a batch of them played together (:func:`play`), and greedy held-out
episodes summed up as Success, SPL and the share of parsed answers (:func:`evaluate`).
"""

from __future__ import annotations

import numpy as np

from pixelrl.embodied.rewards import DEFAULT_WEIGHTS, TurnOutcome, turn_reward, unused_steps
from pixelrl.embodied.vlm_agent import AgentSpec, VLMNavAgent
from pixelrl.envs.nav.measures import HEADLINE, NumSteps
from pixelrl.envs.nav.tasks import IDLE, STOP
from pixelrl.rl.text.env_group import LocalGroup
from pixelrl.rl.text.heldout import evaluating, success_row
from pixelrl.rl.text.rollout import TurnResult, play_episodes
from pixelrl.rl.text.rows import Episode, Prompt

# An episode's measures kept with it (Episode.measures): the headline ones and its length.
MEASURES = (*HEADLINE, NumSteps.name)


class NavPlayer:
    """One navigation episode of an env group (:mod:`pixelrl.rl.text.env_group`): the agent's
    frames and history, and the shortest-path follower from its start.

    A parsed answer's low-level steps run in order until the episode ends; an unparsable one runs
    nothing (``IDLE``: one step of the budget). A turn's reward is the measures ``rewards``
    composes: geodesic progress over its steps, the slack, a format penalty, and Success and SPL
    at the end; or, with ``reward_kind="time_decayed"``, VLN-R1's time-decayed agreement of the
    answer's steps with the shortest-path follower's (plus Success)."""

    def __init__(self, agent: VLMNavAgent, env, obs, info: dict, rewards: dict[str, float],
                 reward_kind: str, decay: float) -> None:  # fmt: skip
        self.agent, self.info = agent, info
        self.rewards, self.reward_kind, self.decay = rewards, reward_kind, decay
        agent.frames.append(obs)
        self.follower = env.unwrapped.shortest_path_follower()

    def prompt(self) -> Prompt:
        image, goal, history = self.agent.prompt()
        return Prompt(image, goal, tuple(history))

    def turn(self, env, completion) -> TurnResult:
        agent, state = self.agent, env.unwrapped.state
        before, steps, matches, done = self.info["distance_to_goal"], 0, [], False
        if not completion.parsed:  # nothing is executed; the turn still costs a step
            _, _, terminated, truncated, self.info = env.step(IDLE)
            steps, done = 1, terminated or truncated
        else:
            for action in completion.action:
                expert = self.follower.get_next_action(state.position, state.yaw)
                matches.append(action == expert)
                obs, _, terminated, truncated, self.info = env.step(action)
                agent.executed.append(action)
                agent.frames.append(obs)
                steps, done = steps + 1, terminated or truncated
                if done:
                    break
        info = self.info
        stopped = bool(agent.executed) and agent.executed[-1] == STOP
        unused = unused_steps(env, info, stopped) if done else 0
        agreement = 0.0  # time_decayed (VLN-R1): the answer's steps that agree with the expert
        if self.reward_kind == "time_decayed" and matches:
            weights = self.decay ** np.arange(len(matches))
            agreement = float(np.dot(weights, matches) / weights.sum())
        turn = TurnOutcome(before, info, steps, completion.parsed, done, unused, agreement)
        reward = turn_reward(self.rewards, turn, self.reward_kind)
        if not done:
            return TurnResult(float(reward), False)
        measures = {k: float(info[k]) for k in MEASURES}
        return TurnResult(float(reward), True, bool(info["success"]), measures)


def play(policy, spec: AgentSpec, envs: list, seeds: list[int], sample: bool, temperature: float = 1.0,
         rewards: dict[str, float] | None = None, reward_kind: str = "measures", decay: float = 0.8,
         ) -> list[Episode]:  # fmt: skip
    """One episode in each env, all played together (a :class:`LocalGroup` of
    :class:`NavPlayer`\\ s): one batched ``generate`` per turn for every env still running."""
    rewards = rewards or DEFAULT_WEIGHTS

    def player(env, obs, info) -> NavPlayer:
        return NavPlayer(VLMNavAgent(policy, spec), env, obs, info, rewards, reward_kind, decay)

    group = LocalGroup(envs, seeds, player, spec.max_new_tokens)  # answers hold no points
    return play_episodes(policy, group, sample=sample, temperature=temperature)


def evaluate(policy, spec: AgentSpec, envs: list, seeds: list[int]) -> dict[str, float]:
    """Greedy episodes from ``seeds`` (held-out starts), ``len(envs)`` at a time."""
    episodes = []
    with evaluating(policy):
        for s in range(0, len(seeds), len(envs)):
            chunk = seeds[s : s + len(envs)]
            episodes += play(policy, spec, envs[: len(chunk)], chunk, sample=False)
    parsed = [t.completion.parsed for e in episodes for t in e.turns]
    return {
        **success_row([e.measures["success"] for e in episodes]),
        "spl": float(np.mean([e.measures["spl"] for e in episodes])),
        "format": float(np.mean(parsed)), "turns": float(np.mean([len(e.turns) for e in episodes])),
        "n": len(episodes),
    }  # fmt: skip
