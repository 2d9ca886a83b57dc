"""The config keys every text-policy recipe shares, with their defaults; a domain adds its own
(:func:`text_defaults`), and the adapter's values win where both name a key."""

from __future__ import annotations

import copy
from typing import Any

from pixelrl.rl.grpo import RECIPE_DEFAULTS as GRPO_DEFAULTS

COMMON: dict[str, Any] = {
    "recipe": "",
    "seed": 1,
    "device": "cpu",
    "torch_threads": 0,  # 0: the thread policy (pixelrl.threads)
    "model": "tiny-qwen2_vl",  # tiny-<family>, a model folder or a transformers name
    "dtype": None,
    "text_size": {},  # tiny-<family>: the language model's shape (pixelrl.vision.tiny_vlm)
    "vision_size": {},  # tiny-<family> but llava: the vision side
    # tiny-<family>: the BPE tokenizer's size; tool_tokens: with action_format toolcall, the
    # call tags and each tool's name one token each (pixelrl.vision.tiny_vlm.tool_tokens; a
    # domain may turn it on: navigation does)
    "tokenizer": {"vocab_size": 600, "tool_tokens": False},
    "init": "",  # a model folder to start from (an SFT run's model/), over model's weights
    # answers point with an attention pointer head over the image tokens (a <|pointer|> token
    # where a click's point goes; pixelrl.vision.pointer_head) instead of writing coordinates;
    # a model folder saved with its head (pointer_head.safetensors) loads it either way
    "pointer_head": False,
    # the pointer head's image tokens also get what the screen reader read in their screen box
    # (pixelrl.vision.read_cells: named and text channels; needs pointer_head and the reader)
    "reader_cells": False,
    # the pointer head also says where in its chosen cell to click (an offset trained towards
    # the target box by SFT: for targets smaller than a cell, e.g. 14-px check-boxes)
    "pointer_offset": False,
    "lora": {"enabled": False, "r": 16, "alpha": 32, "dropout": 0.0},
    "gradient_checkpointing": False,  # recompute activations in backward (large models)
    # under torchrun (pixelrl.rl.text.parallel): ddp (replicated) or fsdp (FSDP2, sharded);
    # param_dtype: fsdp's compute dtype (bfloat16 on GPUs; gradients reduced in fp32)
    "distributed": {"shard": "ddp", "param_dtype": "", "timeout_s": 1800},
    # lr_schedule: constant, linear or cosine, after a warmup_ratio share of linear warm-up
    "sft": {
        "steps": 200,
        "batch_size": 8,
        "lr": 1e-3,
        "weight_decay": 0.0,
        "lr_schedule": "constant",
        "warmup_ratio": 0.0,
    },
    # format_floor: a step whose sampled answers parse less often than this share is not
    # learned from; the weights go back to the best validated ones (0: no guard)
    "grpo": {**GRPO_DEFAULTS, "format_floor": 0.0},
    # patience: validations in a row without a better validation measure before the run stops
    # (0: never); with a validation set the run's model/ is its best-validated weights
    "eval": {"interval": 10, "patience": 0},
    # checkpoint_interval: steps between checkpoints (0: none); resume: a run folder to go on
    "train": {"output_dir": "", "progress": True, "checkpoint_interval": 0, "resume": ""},
}


def check_text_config(cfg) -> None:
    """:class:`~pixelrl.config.ConfigError` for a shared key no run can use (schedules,
    warm-up, patience, the format guard), before any run folder."""
    from pixelrl.config import ConfigError, check_ranges
    from pixelrl.rl.schedule import check_schedule
    from pixelrl.threads import check_config_threads

    check_ranges(cfg, (), ("eval.patience",))
    try:
        check_config_threads(cfg.torch_threads)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    for key in ("sft", "grpo"):
        try:
            check_schedule(str(cfg[key].lr_schedule), cfg[key].warmup_ratio, key)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    for key, value in (("pointer_head", cfg.pointer_head),
                       ("tokenizer.tool_tokens", cfg.tokenizer.tool_tokens)):  # fmt: skip
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, got {value!r}")
    _check_pointer_family(cfg)
    # what only the pointer head can use, and why
    for key, why in (("reader_cells", "the reader's cells are added to the pointer head's image tokens"),
                     ("pointer_offset", "the offset says where in the pointer head's chosen cell to click")):  # fmt: skip
        if not isinstance(cfg[key], bool):
            raise ConfigError(f"{key} must be true or false, got {cfg[key]!r}")
        if cfg[key] and not cfg.pointer_head:
            raise ConfigError(f"{key}: true needs pointer_head: true ({why})")
    floor = cfg.grpo.format_floor
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor < 1:
        raise ConfigError(f"grpo.format_floor must be in [0, 1), got {floor!r}")


def _check_pointer_family(cfg) -> None:
    """``pointer_head`` on a tiny model whose image tokens have no known place on the screen is
    a :class:`~pixelrl.config.ConfigError` before any run folder (named models: when loaded)."""
    from pixelrl.config import ConfigError
    from pixelrl.vision.vlm import tiny_family

    family = tiny_family(str(cfg.init or cfg.model))
    if not cfg.pointer_head or family is None:
        return
    from pixelrl.vision.pointer_head import POINTER_FAMILIES

    if family not in POINTER_FAMILIES:
        raise ConfigError(
            f"pointer_head: tiny-{family}'s image tokens have no known place on the screen; "
            f"families with one: {', '.join(POINTER_FAMILIES)}"
        )


def check_tool_template(cfg) -> None:
    """``action_format: toolcall`` on a tiny model whose family has no tool-calling chat
    template TRL accepts is a :class:`~pixelrl.config.ConfigError` before any run folder
    (released models bring their own template)."""
    from pixelrl.config import ConfigError
    from pixelrl.vision.tiny_vlm import TOOL_CALLING_FAMILIES
    from pixelrl.vision.vlm import tiny_family

    family = tiny_family(str(cfg.model))  # None: a released model, its own template
    if cfg.action_format == "toolcall" and family and family not in TOOL_CALLING_FAMILIES:
        raise ConfigError(
            f"action_format: toolcall needs a tool-calling chat template, which tiny-{family} "
            f"has not; tiny models that have one: "
            f"{', '.join('tiny-' + f for f in TOOL_CALLING_FAMILIES)}"
        )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and value:
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def text_defaults(domain: dict[str, Any]) -> dict[str, Any]:
    """:data:`COMMON` with a domain's keys and values on top."""
    return _merge(COMMON, domain)
