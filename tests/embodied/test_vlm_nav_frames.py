"""The navigation VLM's last K frames as separate images (issue 53, ``prompt.frames``): what
reaches the model, the first turns of an episode, determinism, and SFT examples that carry the
frames the agent sees at play."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from test_vlm_nav import ENV, ScriptedText  # a small PointNav; answers read by the real codec

import pixelrl.envs  # noqa: F401
from pixelrl.embodied.vlm_agent import (
    AgentSpec,
    NavPrompt,
    VLMNavAgent,
    colourise_depth,
    where_text,
)
from pixelrl.envs.nav.action_text import NavActionCodec
from pixelrl.vision.vlm import load_vlm

TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
VISION = {  # 32 px frames at their own size: 8-px patches, 16 patches an image
    "tiny-smolvlm": {"image_size": 32, "patch_size": 8, "scale_factor": 2, "embed_dim": 32,
                     "num_heads": 2, "depth": 1},
    "tiny-qwen2_vl": {"max_pixels": 32 * 32, "patch_size": 8, "embed_dim": 32, "num_heads": 2,
                      "depth": 1},
}  # fmt: skip


def frames(n: int, side: int = 32) -> list[dict]:
    """``n`` observations whose RGB frame is filled with its index (so order is visible)."""
    return [
        {"rgb": np.full((side, side, 3), 40 * i, np.uint8),
         "depth": np.full((side, side, 1), 0.5 * (i + 1), np.float32)}
        for i in range(n)
    ]  # fmt: skip


def tiny(name: str):
    return load_vlm(name, NavActionCodec(0.25, 30.0), text_size=TEXT, vision_size=VISION[name])


@pytest.mark.parametrize("name", ["tiny-smolvlm", "tiny-qwen2_vl"])
def test_k_frames_reach_the_model_as_k_images_of_the_frame_size(name):
    policy = tiny(name)
    seen = frames(5)
    batches = {}
    for k in (1, 3):
        image = NavPrompt(frames=k).image(seen)
        batches[k] = policy.encode_prompts([image], ["Find a bed."], [["move_forward(2)"]])
    image_token = policy.model.config.image_token_id
    one, three = ((b["input_ids"] == image_token).sum().item() for b in batches.values())
    assert one > 0 and three == 3 * one  # three images of one frame's tokens each
    pixels = batches[3]["pixel_values"]
    if name == "tiny-qwen2_vl":  # one (t, h, w) grid a frame: 32 px in 8-px patches, not resized
        assert batches[3]["image_grid_thw"].tolist() == [[1, 4, 4]] * 3
        means = [p.mean().item() for p in pixels.split(16)]
    else:  # (batch, images, 3, 32, 32): three frames, none squashed into another's square
        assert tuple(pixels.shape) == (1, 3, 3, 32, 32)
        means = [pixels[0, i].mean().item() for i in range(3)]
    assert means == sorted(means) and len(set(means)) == 3  # frames 2, 3, 4, oldest first
    completions = policy.generate([NavPrompt(frames=3).image(seen)], ["Find a bed."], [[]],
                                  num_samples=1, do_sample=False, max_new_tokens=4)  # fmt: skip
    assert len(completions) == 1


def test_the_first_turns_repeat_the_first_frame_so_every_turn_shows_k_images():
    prompt, seen = NavPrompt(frames=4), frames(6)
    first = prompt.image(seen[:1])
    assert isinstance(first, tuple) and len(first) == 4
    assert all(np.array_equal(f, seen[0]["rgb"]) for f in first)
    second = prompt.image(seen[:2])
    assert [int(f[0, 0, 0]) for f in second] == [0, 0, 0, 40]
    assert [int(f[0, 0, 0]) for f in prompt.image(seen)] == [80, 120, 160, 200]  # the last 4
    with_depth = NavPrompt(frames=2, depth=True).image(seen)
    assert len(with_depth) == 3  # two RGB frames, then the current depth, each its own image
    assert np.array_equal(with_depth[-1], colourise_depth(seen[-1]["depth"]))
    assert np.array_equal(NavPrompt().image(seen), seen[-1]["rgb"])  # frames 1: as before


def test_prompt_frames_with_memory_frames_or_below_one_is_refused():
    for prompt, match in [
        (NavPrompt(frames=0), "'prompt.frames' must be an integer >= 1, got 0"),
        (NavPrompt(frames=2.0), "'prompt.frames' must be an integer >= 1, got 2.0"),
        (NavPrompt(frames=2, memory_frames=1), "set one of them, not both"),
    ]:
        with pytest.raises(ValueError, match=match):
            AgentSpec(prompt=prompt).validate()


def _turn_prompts(seed: int, answers: list[str]) -> list:
    from pixelrl.embodied.vlm_episodes import play

    env = gymnasium.make("pixelrl/PointNav-v0", **ENV)
    spec = AgentSpec(prompt=NavPrompt(frames=3))
    (episode,) = play(ScriptedText(answers, NavActionCodec(0.25, 30.0)), spec, [env], [seed],
                      sample=False)  # fmt: skip
    env.close()
    return [t.prompt for t in episode.turns]


def test_same_seed_same_prompts_in_multi_turn_rollouts():
    answers = ["move_forward(2)", "turn_left(1)", "move_forward(1)", "stop"]
    a, b, other = (_turn_prompts(s, list(answers)) for s in (3, 3, 4))
    assert len(a) == len(b) == 4 and all(len(p.image) == 3 for p in a)
    for x, y in zip(a, b):
        assert x.instruction == y.instruction and x.history == y.history
        assert all(np.array_equal(i, j) for i, j in zip(x.image, y.image))
    assert not all(np.array_equal(i, j) for i, j in zip(a[-1].image, other[-1].image))
    # the turns' frames move along: the last turn's oldest image is an earlier turn's newest
    assert np.array_equal(a[3].image[0], a[1].image[-1]) or np.array_equal(
        a[3].image[0], a[2].image[-2]
    )


def test_sft_examples_carry_the_frames_the_agent_sees_at_play(tmp_path):
    import json

    from pixelrl.embodied.vlm_demos import record_demonstrations, sft_examples
    from pixelrl.embodied.vlm_spec import agent_spec, codec_for, make_env
    from pixelrl.embodied.vlm_train import config_for
    from pixelrl.envs import task_family
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("embodied/vlm-sft").config,
                     ["env.kwargs=" + json.dumps(ENV), "data.episodes=1", "prompt.frames=3",
                      "train.progress=false"])  # fmt: skip
    spec = agent_spec(cfg)
    env = make_env(cfg, "train")
    codec = codec_for(spec, env)
    examples = sft_examples([record_demonstrations(cfg, tmp_path / "demos")], spec, codec)
    # the agent, answering the follower's actions one a turn, on the same start
    seed = task_family("navigation").seeds.seeds("train", 1)[0]
    answers = [ex.target.split("(")[0] for ex in examples]  # one action a turn
    asked = []  # the prompts the agent asked with, turn by turn

    class Recording(ScriptedText):
        def generate(self, images, instructions, histories, **kwargs):
            asked.extend(zip(images, instructions, histories))
            return super().generate(images, instructions, histories, **kwargs)

    agent = VLMNavAgent(Recording(answers, codec), spec)
    obs, _ = env.reset(seed=seed)
    for t, example in enumerate(examples):
        action = agent.act(obs)
        image, goal, history = asked[t]
        assert goal == example.prompt.instruction and tuple(history) == example.prompt.history
        assert len(image) == len(example.prompt.image) == 3, t
        assert all(np.array_equal(i, j) for i, j in zip(image, example.prompt.image)), t
        obs, *_ = env.step(action)
    assert len(examples) >= 3  # a walk, so the frames of later examples differ
    env.close()


@pytest.mark.parametrize("name", ["tiny-smolvlm", "tiny-qwen2_vl"])
def test_a_repeated_k_frame_prompt_scores_the_same_shared_or_not(name):
    """SmolVLM shares the prompt's cache; Qwen would share image features, which it leaves to
    the plain path for several images a row: the numbers are the same either way."""
    policy = tiny(name)
    image = NavPrompt(frames=3).image(frames(4))
    args = ([image] * 3, ["Find a bed."] * 3, ["stop", "move_forward(2)", "turn_left(1)"],
            [["turn_left(1)"]] * 3)  # fmt: skip
    with torch.no_grad():
        shared = policy.score(*args).sequence_logprobs
        policy.share_prompts = False
        alone = policy.score(*args).sequence_logprobs
    torch.testing.assert_close(shared, alone, rtol=1e-4, atol=1e-4)


def test_gps_compass_in_words_agrees_with_the_walk():
    """Off by default; on, the ObjectNav goal says where the agent stands from its start, and
    the words follow the simulator: forward is ahead, a left turn faces left."""
    env = gymnasium.make(
        "pixelrl/ObjectNav-v0", sensors=["rgb"], width=16, height=16, turn_angle=30
    )
    obs, _ = env.reset(seed=2)
    assert NavPrompt().goal(obs, "objectnav") == NavPrompt().goal(obs, "objectnav").split(" You")[0]
    start = NavPrompt(gps_compass=True).goal(obs, "objectnav")
    assert start.endswith("You are 0.0 m ahead of and 0.0 m to the right of your start, "
                          "facing your start heading.")  # fmt: skip
    obs, *_ = env.step(2)  # turn_left: 30 degrees here
    assert where_text(obs).endswith("facing 30 degrees left of your start heading.")
    obs, *_ = env.step(3)  # back to the start heading, then one step forward
    obs, *_ = env.step(1)
    forward = float(obs["gps"][0])
    assert forward > 0 and where_text(obs).startswith(f"You are {forward:.1f} m ahead of")
    with pytest.raises(ValueError, match="PointNav has none"):
        AgentSpec(task="pointnav", prompt=NavPrompt(gps_compass=True)).validate()
    env.close()
