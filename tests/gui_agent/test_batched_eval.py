"""Issue 42: ``pixelrl eval`` plays a VLM agent's episodes in batches (``batch_size``): the
episodes' results, and every answer the model gives, are those of one episode at a time."""

from __future__ import annotations

import numpy as np

from pixelrl.gui_agent import evaluate
from pixelrl.gui_agent.agents import load_agent

ENV = "pixelrl/Desktop-Mixed-v0"
KWARGS = {"screen_size": (320, 240), "max_steps": 3}


def test_batched_gui_eval_gives_the_same_episodes_as_one_at_a_time(monkeypatch):
    agent = load_agent("tiny-qwen2_vl")  # random weights; greedy answers
    agent.max_new_tokens = 12  # a quicker test; answers of random weights do not end early
    generate, calls = agent.vlm.generate, []

    def spy(images, instructions, histories, **kwargs):
        out = generate(images, instructions, histories, **kwargs)
        calls.append([(np.asarray(i).tobytes(), t, tuple(h), tuple(c[0].token_ids))
                      for i, t, h, c in zip(images, instructions, histories, out)])  # fmt: skip
        return out

    agent.vlm.generate = spy
    play, episodes = evaluate.play_episodes, []
    monkeypatch.setattr(evaluate, "play_episodes", lambda *a, **k: episodes.append(play(*a, **k))
                        or episodes[-1])  # fmt: skip
    seeds = [1, 3, 5, 7, 9]
    rows, sizes, turns = {}, {}, {}
    for batch in (1, 3):
        calls.clear()
        rows[batch] = evaluate.evaluate_success(agent, ENV, seeds=seeds, env_kwargs=KWARGS,
                                                progress=False, batch_size=batch)  # fmt: skip
        sizes[batch] = {len(c) for c in calls}
        turns[batch] = sorted(t for c in calls for t in c)  # (prompt, answer's tokens)
    assert sizes[1] == {1} and 3 in sizes[3], sizes
    one, batched = episodes
    assert batched == one  # per episode (family, success, return, length), in the seeds' order
    assert len(one) == 5 and len({r["family"] for r in one}) > 1
    assert rows[3] == rows[1]
    assert turns[3] == turns[1] and len(turns[1]) == 5 * 3
    # with histories of earlier actions in the prompts (prompts of different lengths)
    assert any(t[2] for t in turns[1])
