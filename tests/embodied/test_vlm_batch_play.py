"""Batched play of navigation VLM agents (issue 57 item 2): full batches, the same actions.

``Benchmark.evaluate(batch_size=N)`` steps the agents that still have queued steps first, so
every ``generate`` asks for all running episodes at once; each episode must still get exactly
the actions it gets alone. The batched envs share each scene's grid: same observations.

A tiny random VLM never writes a parsable answer (every turn is idle, so every agent asks every
step and queues never form); the answers here come from :class:`GoalReader`, which reads the
turn's goal text and answers in the real codec's language, with answers of 1 to 4 steps.
``tests/embodied/test_vlm_nav.py`` checks the same with a trained tiny VLM (slower).
"""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from pixelrl.embodied.benchmark import Benchmark
from pixelrl.embodied.vlm_agent import AgentSpec, NavPrompt, VLMNavAgent
from pixelrl.envs.nav.sim import generate_dataset
from pixelrl.vision.vlm import Completion

ENV = {"sensors": ["rgb"], "width": 16, "height": 16, "num_scenes": 2, "scene_seed": 0,
       "apartment": {"rooms": [1, 1], "clutter": 0.0}, "turn_angle": 30,
       "episode_rules": {"min_geodesic": 1.0, "max_geodesic": 3.0, "min_ratio": 1.0},
       "max_episode_steps": 30}  # fmt: skip
GOAL = re.compile(
    r"The goal is ([\d.]+) m away, (?:straight ahead|behind you|(\d+) degrees to your (left|right))"
)


class GoalReader:
    """Answers a turn from its goal text, as a trained agent would (turn toward the goal, walk,
    stop near it), in the codec's words, parsed by the codec; records every turn it answers."""

    def __init__(self, codec) -> None:
        self.codec = codec
        self.calls: list[int] = []  # rows of each generate
        self.turns: list[tuple] = []  # (image bytes, goal, history, answer)

    def answer(self, goal: str) -> str:
        distance, degrees, side = GOAL.match(goal).groups()
        if degrees and int(degrees) >= 30:
            return f"turn_{side}({min(4, int(degrees) // 30)})"
        if float(distance) < 0.2:
            return "stop"
        return f"move_forward({max(1, min(4, int(float(distance) / 0.25)))})"

    def generate(self, images, goals, histories, **kwargs) -> list[list[Completion]]:
        self.calls.append(len(goals))
        out = []
        for image, goal, history in zip(images, goals, histories):
            text = self.answer(goal)
            action, error = self.codec.parse(text)
            self.turns.append((np.asarray(image).tobytes(), goal, tuple(history), text))
            out.append([Completion(text, [], [], action, action is not None, error)])
        return out


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "episodes.json.gz"
    generate_dataset(str(path), 10, num_scenes=2, scene_seed=5, apartment=ENV["apartment"],
                     episode_rules=ENV["episode_rules"])  # fmt: skip
    return path


def test_batched_play_asks_for_every_running_episode_and_acts_as_alone(dataset):
    bench = Benchmark(dataset, task="pointnav", **ENV)
    spec = AgentSpec(prompt=NavPrompt(distance_floor=True), env_kwargs=ENV)
    policy = GoalReader(spec.codec(0.25, 30.0))
    agent = VLMNavAgent(policy, spec)
    rows, calls, turns = {}, {}, {}
    for batch in (1, 4):
        policy.calls, policy.turns = [], []
        bench.evaluate(agent, batch_size=batch, progress=False)
        rows[batch] = [(r["path_length"], r["num_steps"], r["success"]) for r in bench.rows]
        calls[batch], turns[batch] = policy.calls, sorted(policy.turns)
    bench.close()
    # the same prompts got the same answers, so every episode took the same actions
    assert turns[4] == turns[1] and rows[4] == rows[1]
    # not a trivial agent: answers of several steps (queues), some episodes end with success
    assert len(set(t[-1] for t in turns[1])) > 3 and any(r[2] for r in rows[1]), turns[1]
    # full batches: a call asks for fewer than 4 only once episodes run out (the last 3 turns'
    # worth of calls); one at a time, each call asks for one
    assert set(calls[1]) == {1}
    assert sum(calls[4]) == len(turns[1])
    assert np.mean(calls[4]) > 3.0, calls[4]


def test_envs_sharing_grids_see_what_an_env_alone_sees():
    alone = gym.make("pixelrl/PointNav-v0", **ENV)
    first, second = (gym.make("pixelrl/PointNav-v0", **ENV) for _ in range(2))
    second.unwrapped.sim.share_grids(first.unwrapped.sim)
    first.reset(seed=3)  # builds the grid that second then uses
    a, _ = alone.reset(seed=7)
    b, _ = second.reset(seed=7)
    assert second.unwrapped.sim._grids is first.unwrapped.sim._grids
    for action in [2, 1, 1, 3, 1, 1, 2, 1]:
        assert all(np.array_equal(a[k], b[k]) for k in a)
        a, ra, *_ = alone.step(action)
        b, rb, *_ = second.step(action)
        assert ra == rb
    other = gym.make("pixelrl/PointNav-v0", **{**ENV, "scene_seed": 9})
    with pytest.raises(ValueError, match="other scenes"):
        other.unwrapped.sim.share_grids(first.unwrapped.sim)


@pytest.mark.parametrize("family", ["smolvlm", "qwen2_vl", "llava"])
def test_prompts_from_the_rendered_frame_are_the_templates_own(family):
    """``build_prompt`` renders the chat template once and puts each prompt's text in its frame;
    the prompt is the template's own rendering, character for character."""
    from pixelrl.vision.vlm import load_vlm

    codec = AgentSpec().codec(0.25, 30.0)
    policy = load_vlm(f"tiny-{family}", codec=codec, text_size={"num_hidden_layers": 1})
    for goal, history, images in [("The goal is 1.0 m away.", [], 1), (" {x}\n", ["stop"], 2),
                                  ("", ["turn_left(2)", "move_forward(1)"], 3)]:  # fmt: skip
        text = policy.prompt_text(goal, history)
        assert policy.build_prompt(goal, history, images) == policy._chat_prompt(text, images)
    frames = list(policy._chat_frames.values())
    assert frames and None not in frames  # the frame was used, not every prompt rendered
