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
    "torch_threads": 0,
    "model": "tiny-qwen2_vl",  # tiny-<family>, a model folder or a transformers name
    "dtype": None,
    "text_size": {},  # tiny-<family>: the language model's shape (pixelrl.vision.tiny_vlm)
    "vision_size": {},  # tiny-<family> but llava: the vision side
    "tokenizer": {"vocab_size": 600},  # tiny-<family>: the BPE tokenizer's size
    "init": "",  # a model folder to start from (an SFT run's model/), over model's weights
    "lora": {"enabled": False, "r": 16, "alpha": 32, "dropout": 0.0},
    "gradient_checkpointing": False,  # recompute activations in backward (large models)
    # under torchrun (pixelrl.rl.text.parallel): ddp (replicated) or fsdp (FSDP2, sharded);
    # param_dtype: fsdp's compute dtype (bfloat16 on GPUs; gradients reduced in fp32)
    "distributed": {"shard": "ddp", "param_dtype": "", "timeout_s": 1800},
    "sft": {"steps": 200, "batch_size": 8, "lr": 1e-3, "weight_decay": 0.0},
    "grpo": dict(GRPO_DEFAULTS),
    "eval": {"interval": 10},
    # checkpoint_interval: steps between checkpoints (0: none); resume: a run folder to go on
    "train": {"output_dir": "", "progress": True, "checkpoint_interval": 0, "resume": ""},
}


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
