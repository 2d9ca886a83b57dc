"""The one rollout loop of text policies: a group of episodes played together, one batched
``generate`` a turn for every episode still running.

A domain gives an *env group* (in-process envs, or a Ray vector env: :mod:`.env_group`, with the
domain's player per episode) that knows its episodes' prompts and how an answer plays out::

    group.n                        # episodes in the group
    group.screen                   # the screen answers' points lie on (None: no points)
    group.max_new_tokens           # the longest answer
    group.prompts(active)          # -> [Prompt] of those episodes' current turns
    group.step({i: completion})    # -> {i: TurnResult, or None when env i's worker failed}

A :class:`TurnResult` says the turn's reward and whether the episode ended (with its success and
end measures). An episode whose worker failed leaves the group; the rest come back in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pixelrl.rl.text.rows import Episode, Turn, prompt_columns


@dataclass
class TurnResult:
    reward: float
    done: bool
    success: bool = False
    measures: dict[str, float] = field(default_factory=dict)


def anchor(prompt) -> str:
    """GiGPO's anchor key of a turn: what the policy saw (image and instruction)."""
    from pixelrl.rl.grpo import anchor_key

    return anchor_key({"image": prompt.image, "instruction": prompt.instruction})


def play_episodes(policy, group, sample: bool, temperature: float = 1.0) -> list[Episode]:
    """Every episode of ``group`` to its end: sampled answers (``sample``) or greedy ones."""
    episodes = [Episode() for _ in range(group.n)]
    faulted: set[int] = set()
    active = list(range(group.n))
    while active:
        prompts = group.prompts(active)
        samples = policy.generate(
            *prompt_columns(prompts), num_samples=1, do_sample=sample, temperature=temperature,
            max_new_tokens=group.max_new_tokens, screen_size=group.screen,
        )  # fmt: skip
        results = group.step({i: s[0] for i, s in zip(active, samples)})
        still = []
        for i, prompt, sample_ in zip(active, prompts, samples):
            result = results[i]
            if result is None:  # the step never happened: the episode leaves the group
                faulted.add(i)
                continue
            episodes[i].turns.append(Turn(prompt, sample_[0], result.reward, anchor(prompt)))
            if result.done:
                episodes[i].success, episodes[i].measures = result.success, result.measures
            else:
                still.append(i)
        active = still
    return [ep for i, ep in enumerate(episodes) if i not in faulted]
