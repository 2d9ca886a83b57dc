"""What the navigation domain offers the spine, by name (:mod:`pixelrl.registry`).

Found through the entry point ``embodied`` of the group ``pixelrl.domains`` (``pyproject.toml``);
it imports nothing heavy: every value is a ``"module:attr"`` string, imported when used.
"""

from __future__ import annotations

from pixelrl.recipes import register_recipe, register_variant
from pixelrl.registry import register

_PPO, _VLM = "pixelrl.embodied.task", "pixelrl.embodied.vlm_train"
# (name, config, task module, kind, one line for `pixelrl train --list`: what it trains, and how)
# fmt: off
_RECIPES = [
    ("embodied/pointnav", "embodied/configs/pointnav.yaml", _PPO, "ppo", "PointNav from depth + GPS/compass: imitation, then PPO / DD-PPO"),
    ("embodied/pointnav-small", "embodied/configs/pointnav_small.yaml", _PPO, "ppo", "small PointNav agent, learns in a few CPU minutes (the demo's)"),
    ("embodied/pointnav-rgbd", "embodied/configs/pointnav_rgbd.yaml", _PPO, "ppo", "PointNav from RGB-D + GPS/compass with PPO"),
    ("embodied/objectnav", "embodied/configs/objectnav.yaml", _PPO, "ppo", "ObjectNav from RGB-D (long runs)"),
    ("embodied/objectnav-small", "embodied/configs/objectnav_small.yaml", _PPO, "ppo", "ObjectNav in small apartments from RGB: imitation, then PPO"),
    ("embodied/vlm-sft", "embodied/configs/vlm_sft.yaml", _VLM, "text", "navigation VLM agent, step 1: SFT on the shortest-path follower"),
    ("embodied/vlm-grpo", "embodied/configs/vlm_grpo.yaml", _VLM, "text", "navigation VLM agent, step 2: multi-turn GRPO from the SFT model"),
]
# fmt: on
for recipe in _RECIPES:
    register_recipe(*recipe)
register_variant("embodied/vlm-sft-toolcall", "embodied/configs/vlm_sft_toolcall.yaml", "embodied/vlm-sft",
                 "embodied/vlm-sft in TRL's tool-call form: a CPU-sized start for scripts/trl_grpo.py")  # fmt: skip

register("bench", "nav", "pixelrl.embodied.cli:add_bench_parser")  # pixelrl bench nav
register("record_agent", "vlm", "pixelrl.embodied.cli:VLMRecording")  # pixelrl record --agent vlm
register("demo", "nav", "pixelrl.embodied.demo:pointnav_demo")  # pixelrl demo --parts nav
register("trl_env", "nav", "pixelrl.embodied.trl_env:NavEnvironment")  # pixelrl.trl_env
register("user_error", "AgentFileError", "pixelrl.embodied.vlm_agent:AgentFileError")
