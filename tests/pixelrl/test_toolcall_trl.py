"""From our SFT into TRL (issue 55 item 1): ``gui/sft`` with ``action_format: toolcall`` teaches
the JSON tool calls of TRL's GUI environment, with its tools' schemas in the system turn; the
saved model folder loads in TRL's ``GRPOTrainer`` with ``environment_factory``, TRL accepts its
chat template and parses its first answers as calls of our tools."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("trl")

from pixelrl.envs.gui_action import TOOL_ARGUMENTS, Action, GUIActionCodec  # noqa: E402
from pixelrl.trl_env import (  # noqa: E402
    GUIEnvironment,
    environment_factory,
    gui_tool_schemas,
    tools_of,
    train_dataset,
)

CLICK = "pixelrl/Desktop-ClickButton-v0"
GUI_KW = {"screen_size": (320, 240)}


def test_the_dialect_names_the_trl_tools_and_their_arguments():
    env = GUIEnvironment(CLICK, **GUI_KW)
    try:
        from transformers.utils import get_json_schema

        live = [get_json_schema(tool)["function"] for tool in tools_of(env)]
    finally:
        env._close()
    assert [s["function"] for s in gui_tool_schemas()] == live
    assert {s["name"]: tuple(s["parameters"]["properties"]) for s in live} == TOOL_ARGUMENTS


def test_a_tool_call_plays_in_trl_as_the_codec_reads_it():
    """The same text is the same action: played by the codec's parse on a gym env, and by the
    TRL tool TRL would call with its JSON."""
    import json

    import gymnasium

    codec, env, plain = GUIActionCodec("toolcall"), GUIEnvironment(CLICK, **GUI_KW), None
    try:
        env.reset(seed=4)
        plain = gymnasium.make(CLICK, **GUI_KW)
        _, info = plain.reset(seed=4)
        x0, y0, x1, y1 = info["target_bbox"]
        text = codec.render(Action.click((x0 + x1) // 2, (y0 + y1) // 2))
        call = json.loads(text.removeprefix("<tool_call>").removesuffix("</tool_call>"))
        getattr(env, call["name"])(**call["arguments"])
        _, reward, *_ = plain.step(codec.parse(text, GUI_KW["screen_size"])[0])
        assert reward > 0 and env.get_reward() == pytest.approx(float(reward))
    finally:
        env._close()
        if plain is not None:
            plain.close()


def test_the_prompt_shows_the_tools_as_trl_does(tmp_path):
    """A toolcall recipe's tiny model has Qwen3-VL's template, TRL's tool-calling one, and its
    prompt's system turn lists the schemas TRL lists."""
    from trl.chat_template_utils import supports_tool_calling

    from pixelrl.gui_agent.train_vlm import config_for, load_policy
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("gui/sft").config,
                     ["model=tiny-qwen2_5_vl", "action_format=toolcall"])  # fmt: skip
    policy = load_policy(cfg)
    assert supports_tool_calling(policy.processor)
    prompt = policy.build_prompt("Click OK.")
    assert all(f'"name": "{name}"' in prompt for name in TOOL_ARGUMENTS)
    assert prompt.index("<tools>") < prompt.index("Click OK.")
    plain = load_policy(config_for(get_recipe("gui/sft").config, ["model=tiny-qwen2_5_vl"]))
    assert "<tools>" not in plain.build_prompt("Click OK.")  # uitars: as before


def _fixed_target_episodes(root, seeds) -> None:
    """Recorded episodes of one call, done: a target the same on every screen, which a tiny
    model learns in a few steps (an expert's points, which differ on every screen, it cannot)."""
    import gymnasium

    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(gymnasium.make(CLICK, **GUI_KW), root)
    try:
        for seed in seeds:
            env.reset(seed=seed)
            env.step(Action.done())
    finally:
        env.close()


def test_a_toolcall_sft_model_calls_our_tools_in_trl_from_its_first_step(tmp_path):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import supports_tool_calling

    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    _fixed_target_episodes(tmp_path / "demos", seeds=range(0, 16, 2))  # training seeds
    cfg = config_for(get_recipe("gui/sft").config, [
        "model=tiny-qwen2_5_vl", "action_format=toolcall", "tokenizer.vocab_size=2000",
        f"data.dataset={tmp_path / 'demos'}", "sft.steps=100", "sft.batch_size=2", "sft.lr=5e-3",
        "eval.grounding_items=0", "eval.interval=0", "eval.episodes=1", "torch_threads=1",
        f"train.output_dir={tmp_path / 'sft'}", "train.progress=false"])  # fmt: skip
    cfg.recipe = "gui/sft"
    train(cfg)
    folder = tmp_path / "sft" / "model"

    processor = AutoProcessor.from_pretrained(folder, trust_remote_code=False)
    model = AutoModelForImageTextToText.from_pretrained(folder, trust_remote_code=False)
    assert supports_tool_calling(processor)
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), num_generations=2, logging_steps=1,
                      report_to=[], use_cpu=True, save_strategy="no", seed=0, max_steps=1,
                      gradient_checkpointing=False, per_device_train_batch_size=2,
                      max_completion_length=300, max_tool_calling_iterations=1,
                      generation_kwargs={"do_sample": False})  # fmt: skip
    trainer = GRPOTrainer(model=model, args=args, processing_class=processor,
                          train_dataset=train_dataset(CLICK, [1], **GUI_KW),
                          environment_factory=environment_factory(CLICK, **GUI_KW))  # fmt: skip
    trainer.train()
    row = next(r for r in trainer.state.log_history if "reward" in r)
    assert row["tools/call_frequency"] > 0 and row["tools/failure_frequency"] == 0, row
