"""VLM recipes on a tiny Qwen2-VL over desktop screenshots: one SFT step, one grounding-GRPO step,
unparsable output (format reward 0, a no-op, training goes on), the held-out grounding set."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from pixelrl.envs.gui_action import Action
from pixelrl.gui_agent.grounding import grounding_set
from pixelrl.gui_agent.grounding_rewards import click_gaussian_reward
from pixelrl.recipes import package_file

SCREEN = (320, 240)
CONFIGS = package_file("gui_agent/configs")


@pytest.fixture(scope="module")
def policy():
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    torch.manual_seed(0)
    return load_vlm("tiny-qwen2_vl", GUIActionCodec(), seed=0)


@pytest.fixture(scope="module")
def items():
    return grounding_set(6, families=("click-button",), screen_size=SCREEN, split="train")


def test_grounding_set_is_held_out_deterministic_and_on_target():
    a = grounding_set(10, screen_size=SCREEN)
    b = grounding_set(10, screen_size=SCREEN)
    assert [i.seed for i in a] == [i.seed for i in b] and all(i.seed % 2 == 1 for i in a)
    assert all(np.array_equal(x.screenshot, y.screenshot) for x, y in zip(a, b))
    assert len({i.family for i in a}) == 5
    for item in a:
        x0, y0, x1, y1 = item.bbox
        assert 0 <= x0 < x1 <= SCREEN[0] and 0 <= y0 < y1 <= SCREEN[1]


def test_unparsable_output_gets_zero_format_reward_and_a_noop(policy, items):
    bad = ["click(start_box='(500,", "rm -rf /", "__import__('os').system('x')", ""]
    box = items[0].bbox
    assert (click_gaussian_reward(bad, [box] * len(bad), SCREEN) == 0).all()
    for text in bad:
        action, parsed, error = policy.parse(text, SCREEN)
        assert action == Action.wait() and not parsed and error


def _completion(policy, text: str):
    from pixelrl.vision.vlm import Completion

    action, parsed, error = policy.parse(text, SCREEN)
    return Completion(text, policy.completion_ids(text), [], action, parsed, error)


def test_one_grounding_grpo_step_prefers_the_rewarded_click(policy, items):
    """A group with a click inside the box, one outside and an unparsable answer: one GRPO step
    runs without error and raises the log-probability of the rewarded completion."""
    from pixelrl.envs.gui_action import to_uitars
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.rl.grpo import GRPOConfig, group_advantages, grpo_update
    from pixelrl.vision.vlm import load_vlm

    model = load_vlm("tiny-qwen2_vl", GUIActionCodec(), seed=1)
    item = items[0]
    x0, y0, x1, y1 = item.bbox
    good = to_uitars(Action.click((x0 + x1) // 2, (y0 + y1) // 2), SCREEN)
    texts = [good, to_uitars(Action.click(2, 2), SCREEN), "click(start_box='(oops"]
    completions = [_completion(model, t) for t in texts]
    rewards = click_gaussian_reward(texts, [item.bbox] * 3, SCREEN)
    assert rewards[0] > rewards[1] > rewards[2] == 0
    adv = group_advantages(rewards, group_size=3)
    shots, instr = [item.screenshot] * 3, [item.instruction] * 3

    def good_logprob():
        with torch.no_grad():
            return float(model.score(shots[:1], instr[:1], completions[:1]).sequence_logprobs[0])

    before = good_logprob()
    opt = torch.optim.AdamW(model.trainable_parameters(), lr=1e-3)
    stats = grpo_update(model, opt, shots, instr, completions, adv,
                        ref_policy=model.frozen_copy(), config=GRPOConfig(kl_coef=0.04))  # fmt: skip
    assert np.isfinite(list(stats.values())).all()
    assert good_logprob() > before


def test_one_sft_step_on_recorded_desktop_episodes(tmp_path, policy):
    from pixelrl.config import Config
    from pixelrl.gui_agent.train_vlm import DEFAULTS
    from pixelrl.gui_agent.vlm_demos import record_expert_episodes
    from pixelrl.gui_agent.vlm_episodes import sft_examples
    from pixelrl.rl.sft import sft_step

    cfg = Config({**DEFAULTS, "env": {**DEFAULTS["env"], "families": ["click-button"]},
                  "data": {**DEFAULTS["data"], "episodes": 2},
                  "train": {**DEFAULTS["train"], "progress": False}})  # fmt: skip
    root = record_expert_episodes(cfg, tmp_path / "demos")
    examples = sft_examples([root / "click-button"], policy)
    assert len(examples) == 2 and examples[0].target.startswith("click(start_box=")
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-3)
    losses = [sft_step(policy, opt, examples) for _ in range(3)]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_grounding_grpo_recipe_survives_unparsable_samples(tmp_path):
    """The whole recipe, two steps from a random tiny model (its samples barely parse): no
    exception, rows logged, a model folder that loads back as an agent."""
    from pixelrl.gui_agent.agents import VLMAgent, load_agent
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("gui/grounding-grpo").config, [
        "torch_threads=0",
        "grpo.steps=2", "grpo.num_samples=3", "grpo.prompts_per_step=2", "data.prompts=4",
        "eval.grounding_items=4", "eval.interval=0", "grpo.max_new_tokens=12",
        "grpo.lr=1e-4", "grpo.lr_schedule=linear",
        f"train.output_dir={tmp_path}", "train.progress=false",
    ])  # fmt: skip
    cfg.recipe = "gui/grounding-grpo"
    result = train(cfg)
    assert len(result["eval"]) == 2 and (tmp_path / "history.csv").is_file()
    assert (tmp_path / "learning_curve.png").is_file()
    with open(
        tmp_path / "history.csv"
    ) as f:  # each step logs its speed (bench/grounding_grpo_speed.py)
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    # linear decay to 0 at the last step: step 1 at the full rate, step 2 at half
    assert [float(r["lr"]) for r in rows] == pytest.approx([1e-4, 5e-5])
    for row in rows:
        sampled = 2 * 3  # prompts_per_step x num_samples
        assert float(row["samples_per_s"]) == pytest.approx(
            sampled / float(row["sample_s"]), rel=1e-6
        )
        assert float(row["gen_tokens_per_s"]) > 0
    agent = load_agent(tmp_path / "model")
    assert isinstance(agent, VLMAgent)
    assert isinstance(agent.act(np.zeros((240, 320, 3), np.uint8), "Click OK."), Action)


def test_multiturn_group_turns_unparsable_text_into_waits(policy):
    """Episodes from one seed, played by a random tiny model: every unparsable answer is played
    as a ``wait`` (the episode goes on), the group shares its first screen (GiGPO's anchor)."""
    from pixelrl.config import Config
    from pixelrl.gui_agent.train_vlm import DEFAULTS
    from pixelrl.gui_agent.vlm_episodes import play_group
    from pixelrl.rl.grpo import GRPOConfig, gigpo_advantages

    env = {**DEFAULTS["env"], "id": "pixelrl/Desktop-FillForm-v0", "max_steps": 2}
    cfg = Config({**DEFAULTS, "env": env})
    episodes = play_group(policy, cfg, seed=4, group_size=2, gcfg=GRPOConfig(max_new_tokens=8))
    assert len(episodes) == 2 and all(1 <= len(ep.turns) <= 2 for ep in episodes)
    assert episodes[0].turns[0].key == episodes[1].turns[0].key
    for ep in episodes:
        for turn in ep.turns:
            if not turn.completion.parsed:
                assert turn.completion.action == Action.wait()
    adv = gigpo_advantages([[t.reward for t in ep.turns] for ep in episodes], [4, 4],
                           [[t.key for t in ep.turns] for ep in episodes])  # fmt: skip
    assert np.isfinite(adv.advantages).all()


def test_task_seeds_keep_the_split_and_the_field_limit():
    """``env.max_fields`` (an easier fill-form) keeps only layouts with that many fields, and
    the seeds keep their split's parity (even: train, odd: held out)."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.gui_agent.train_vlm import config_for
    from pixelrl.gui_agent.vlm_tasks import task_seeds
    from pixelrl.recipes import get_recipe

    recipe = get_recipe("gui/multiturn-grpo").config
    assert task_seeds(config_for(recipe, []), "pixelrl/Desktop-FillForm-v0", "train", 3) == [
        0,
        2,
        4,
    ]
    cfg = config_for(recipe, ["env.max_fields=2"])
    seeds = task_seeds(cfg, cfg.env.id, "eval", 6, np.random.default_rng(0))
    assert len(set(seeds)) == 6 and all(s % 2 == 1 for s in seeds)
    env = gym.make(cfg.env.id, screen_size=SCREEN)
    assert all(len(env.reset(seed=s)[1]["task"]["fields"]) == 2 for s in seeds)


def test_task_seeds_from_a_start_check_the_limit_on_the_seed_they_return():
    """``start`` shifts the seeds (each family of a mixed recipe has its own range) and the
    field limit is checked on the shifted seed itself."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.gui_agent.train_vlm import config_for
    from pixelrl.gui_agent.vlm_tasks import task_seeds
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("gui/multiturn-grpo").config, ["env.max_fields=2"])
    seeds = task_seeds(cfg, cfg.env.id, "train", 4, start=20_000)
    assert all(s >= 20_000 and s % 2 == 0 for s in seeds)
    env = gym.make(cfg.env.id, screen_size=SCREEN)
    assert all(len(env.reset(seed=s)[1]["task"]["fields"]) <= 2 for s in seeds)


def test_a_field_limit_no_layout_meets_is_a_config_error_not_a_hang():
    from pixelrl.config import ConfigError
    from pixelrl.gui_agent.train_vlm import config_for
    from pixelrl.gui_agent.vlm_tasks import task_seeds
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("gui/multiturn-grpo").config, ["env.max_fields=1"])
    with pytest.raises(ConfigError, match="env.max_fields=1: no .* layout"):
        task_seeds(cfg, cfg.env.id, "train", 2)


def test_desktop_tokenizer_and_dense_grounding_examples():
    """``tokenizer.screens`` trains a tiny model's tokenizer on the desktop's own words, so a
    label is one token; ``data.grounding_screens`` gives several SFT examples per screen, each
    pointing inside the box of the element its instruction names."""
    from pixelrl.envs.grounding import grounding_samples
    from pixelrl.envs.gui_action import parse_action
    from pixelrl.gui_agent.train_vlm import config_for, load_policy
    from pixelrl.gui_agent.vlm_grounding import grounding_examples
    from pixelrl.gui_agent.vlm_tasks import training_screens
    from pixelrl.recipes import get_recipe

    overrides = ["model=tiny-smolvlm", "env.families=[click-button,choose-radio]",
                 "data.grounding_screens=2"]  # fmt: skip
    plain = load_policy(config_for(get_recipe("gui/sft").config, overrides))
    cfg = config_for(get_recipe("gui/sft").config,
                     [*overrides, "tokenizer.screens=20", "tokenizer.vocab_size=1500"])  # fmt: skip
    policy = load_policy(cfg)
    _, obs, info = next(training_screens(cfg, 1))
    label = next(e["name"] for e in info["a11y"] if e["role"] == "button" and len(e["name"]) > 3)
    assert label in policy.tokenizer.tokenize(f'Click the "{label}" button.')
    assert len(policy.tokenizer.tokenize(obs["instruction"])) < len(
        plain.tokenizer.tokenize(obs["instruction"])
    )
    examples = grounding_examples(training_screens(cfg, 2), policy, SCREEN)
    screens = list(training_screens(cfg, 2))
    samples = [s for _, _, info in screens for s in grounding_samples(info["a11y"], SCREEN)]
    assert len(examples) == len(samples)
    assert len({e.prompt.instruction for e in examples}) > len(screens)
    for e, sample in zip(examples, samples):
        click = parse_action(e.target, SCREEN)
        x0, y0, x1, y1 = sample.bbox
        assert e.prompt.instruction == sample.instruction
        assert click.kind == "click" and x0 <= click.x < x1 and y0 <= click.y < y1


def test_multiturn_grpo_recipe_runs_whole_episodes_end_to_end(tmp_path):
    """Two steps of the multi-turn recipe from a random tiny model: groups of episodes played,
    the lr decayed linearly, evaluations logged and a model folder written."""
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("gui/multiturn-grpo").config, [
        "torch_threads=0", "env.max_steps=2", "env.max_fields=2",
        "grpo.steps=2", "grpo.num_samples=2", "grpo.seeds_per_step=1", "grpo.max_new_tokens=8",
        "grpo.lr=1e-4", "grpo.lr_schedule=linear", "eval.episodes=2", "eval.interval=0",
        f"train.output_dir={tmp_path}", "train.progress=false",
    ])  # fmt: skip
    cfg.recipe = "gui/multiturn-grpo"
    result = train(cfg)
    assert len(result["eval"]) == 2 and (tmp_path / "model").is_dir()
    with open(tmp_path / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["lr"]) for r in rows] == pytest.approx([1e-4, 5e-5])
    assert all(1 <= int(r["steps"]) <= 2 * 2 for r in rows)  # G episodes of at most 2 steps


def test_an_unknown_lr_schedule_is_a_config_error(tmp_path):
    from pixelrl.config import ConfigError
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    overrides = ["data.prompts=2", "eval.grounding_items=2", f"train.output_dir={tmp_path}",
                 "train.progress=false"]  # fmt: skip
    with pytest.raises(ConfigError, match="lr_schedule: 'step'; known: constant, linear, cosine"):
        config_for(get_recipe("gui/grounding-grpo").config, ["grpo.lr_schedule=step", *overrides])
    cfg = config_for(get_recipe("gui/grounding-grpo").config, overrides)
    cfg.recipe, cfg.grpo.lr_schedule = "gui/grounding-grpo", "step"  # set after the config check
    with pytest.raises(ConfigError, match="lr_schedule: 'step'"):
        train(cfg)


def test_sft_recipe_on_grounding_samples_alone(tmp_path):
    """``data.episodes=0`` records no expert episodes: the SFT recipe learns from the grounding
    samples alone; with neither it is a clear config error, not an empty run."""
    from pixelrl.config import ConfigError
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    base = ["model=tiny-smolvlm", "torch_threads=0", "data.episodes=0", "sft.steps=2",
            "eval.grounding_items=2", "eval.interval=0", "train.progress=false"]  # fmt: skip
    cfg = config_for(get_recipe("gui/sft").config,
                     [*base, "data.grounding_screens=1", f"train.output_dir={tmp_path / 'a'}"])  # fmt: skip
    cfg.recipe = "gui/sft"
    result = train(cfg)
    assert not (tmp_path / "a" / "demos").exists() and result["examples"] > 1
    cfg = config_for(get_recipe("gui/sft").config, [*base, f"train.output_dir={tmp_path / 'b'}"])
    cfg.recipe = "gui/sft"
    with pytest.raises(ConfigError, match="nothing to learn"):
        train(cfg)


def test_train_takes_a_vlm_recipe_yaml_file(capsys, tmp_path):
    """``pixelrl train FILE.yaml`` runs the recipe the file names, VLM recipes included, with the
    file's settings under the overrides; a file that is not YAML is a clear error."""
    from pixelrl.cli import main

    assert (
        main(["train", "--print-config", str(CONFIGS / "sft_grounding.yaml"), "sft.steps=5"]) == 0
    )
    out = capsys.readouterr().out
    assert "recipe: gui/sft" in out and "grounding_screens: 300" in out and "steps: 5" in out
    assert main(["train", "--print-config", str(CONFIGS / "grpo_grounding.yaml")]) == 0
    out = capsys.readouterr().out
    assert "recipe: gui/grounding-grpo" in out and "sigma_scale: 2.0" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("recipe: [gui/sft\n  x: : :\n")
    assert main(["train", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pixelrl train: error: ") and "not valid YAML" in err


def test_the_recipe_coordinates_reach_the_policy_codec():
    from pixelrl.config import ConfigError
    from pixelrl.envs.gui_action.coordinates import coordinate_space
    from pixelrl.gui_agent.train_vlm import config_for, load_policy
    from pixelrl.recipes import get_recipe

    config = get_recipe("gui/grounding-grpo").config
    cfg = config_for(config, ["coordinates=smart_resize:ui-tars-1.5", "model=tiny-qwen2_5_vl"])
    policy = load_policy(cfg)
    assert policy.codec.coordinates == coordinate_space("smart_resize:ui-tars-1.5")
    assert policy.action_text(Action.click(160, 120), SCREEN) == "click(start_box='(168,126)')"
    with pytest.raises(ConfigError, match="coordinates: unknown smart_resize preset"):
        load_policy(config_for(config, ["coordinates=smart_resize:nope"]))


def test_a_released_model_name_sets_its_coordinate_space(policy):
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.envs.gui_action.coordinates import coordinate_space
    from pixelrl.vision.vlm import VLMPolicy

    codec = GUIActionCodec.for_model("ByteDance-Seed/UI-TARS-1.5-7B")
    assert codec.coordinates == coordinate_space("smart_resize:ui-tars-1.5")
    ui_tars = VLMPolicy(policy.model, policy.processor, codec)
    assert ui_tars.parse("Action: click(start_box='(168,126)')", SCREEN)[0] == Action.click(
        160, 120
    )
    qwen2 = GUIActionCodec.for_model("Qwen/Qwen2-VL-2B-Instruct")
    assert qwen2.coordinates == coordinate_space("relative1000")
    # a model of ours (no released name) keeps the defaults; an explicit choice wins
    assert GUIActionCodec.for_model("tiny-qwen2_5_vl").coordinates is None
    assert GUIActionCodec.for_model("runs/x/model").coordinates is None
    unit = GUIActionCodec.for_model("Qwen/Qwen2-VL-2B-Instruct", coordinates="unit")
    assert unit.coordinates == coordinate_space("unit")
    with pytest.raises(TypeError, match="needs an action codec"):
        VLMPolicy(policy.model, policy.processor, None)
