"""What the GUI domain offers the spine, by name (:mod:`pixelrl.registry`).

Found through the entry point ``gui`` of the group ``pixelrl.domains`` (``pyproject.toml``); it
imports nothing heavy: every value is a ``"module:attr"`` string, imported when used.
"""

from __future__ import annotations

from pixelrl.recipes import register_recipe, register_variant
from pixelrl.registry import register

_PPO, _VLM = "pixelrl.gui_agent.ppo_task", "pixelrl.gui_agent.train_vlm"
# (name, config, task module, kind, one line for `pixelrl train --list`: what it trains, and how)
# fmt: off
_RECIPES = [
    ("gui/ppo", "gui_agent/configs/ppo.yaml", _PPO, "ppo", "pixel pointer policy on one desktop task: behaviour cloning, then PPO"),
    ("gui/miniwob", "gui_agent/configs/miniwob.yaml", "pixelrl.gui_agent.miniwob_task", "ppo", "pointer policy on 12 MiniWoB++ tasks at once: cloning, then PPO"),
    ("gui/sft", "gui_agent/configs/sft.yaml", _VLM, "text", "SFT of a vision-language policy on recorded expert episodes"),
    ("gui/grounding-grpo", "gui_agent/configs/grounding_grpo.yaml", _VLM, "text", "one-step grounding GRPO: screenshot + instruction -> click"),
    ("gui/multiturn-grpo", "gui_agent/configs/multiturn_grpo.yaml", _VLM, "text", "multi-turn GRPO of a vision-language policy on whole tasks"),
]
# fmt: on
# The other shipped configs (README, docs/results), each by name too: (name, config, base, line)
# fmt: off
_VARIANTS = [
    ("gui/ppo-bc", "gui_agent/configs/ppo_bc.yaml", "gui/ppo", "gui/ppo with a long warm start: 98-100% in ~10 min on 2 cores"),
    ("gui/miniwob-wide", "gui_agent/configs/miniwob_wide.yaml", "gui/miniwob", "gui/miniwob on 32 MiniWoB++ tasks (about an hour of CPU)"),
    ("gui/miniwob-widest", "gui_agent/configs/miniwob_widest.yaml", "gui/miniwob", "gui/miniwob on the 64 MiniWoB++ tasks it can clone that have human figures (half recipe: 0.762 / 0.773 vs human 0.958)"),
    ("gui/grounding-sft", "gui_agent/configs/sft_grounding.yaml", "gui/sft", "SFT of a tiny SmolVLM on grounding samples (start of gui/grounding-grpo-sft)"),
    ("gui/grounding-sft-marks", "gui_agent/configs/sft_grounding_marks.yaml", "gui/sft", "gui/grounding-sft answering with Set-of-Mark numbers, click(mark=7)"),
    ("gui/grounding-grpo-sft", "gui_agent/configs/grpo_grounding.yaml", "gui/grounding-grpo", "grounding GRPO from gui/grounding-sft's model (init=RUN/model)"),
    ("gui/grounding-pointer-sft", "gui_agent/configs/sft_grounding_pointer.yaml", "gui/sft", "gui/grounding-sft with an attention pointer head: clicks are image cells, not text"),
    ("gui/grounding-pointer-read-sft", "gui_agent/configs/sft_grounding_pointer_read.yaml", "gui/sft", "gui/grounding-pointer-sft with the screen reader's cells added to the image tokens"),
    ("gui/grounding-pointer-grpo", "gui_agent/configs/grpo_grounding_pointer.yaml", "gui/grounding-grpo", "grounding GRPO through the pointer head from gui/grounding-pointer-sft's model"),
    ("gui/miniwob-vlm-sft", "gui_agent/configs/miniwob_vlm_sft.yaml", "gui/sft", "vision-language policy cloned from the MiniWoB++ oracle"),
    ("gui/miniwob-vlm-pointer-sft", "gui_agent/configs/miniwob_vlm_pointer_sft.yaml", "gui/sft", "gui/miniwob-vlm-sft through the pointer head (in-cell offset, reader cells)"),
    ("gui/miniwob-vlm-grpo", "gui_agent/configs/miniwob_vlm_grpo.yaml", "gui/multiturn-grpo", "multi-turn GRPO on live MiniWoB++ tasks from gui/miniwob-vlm-sft's model"),
]
# fmt: on
for recipe in _RECIPES:
    register_recipe(*recipe)
for variant in _VARIANTS:
    register_variant(*variant)

register("command", "eval", "pixelrl.gui_agent.cli:add_parser")  # pixelrl eval
register("demo", "experts", "pixelrl.gui_agent.demo:experts_demo")  # pixelrl demo --parts experts
register("demo", "gui", "pixelrl.gui_agent.demo:pointer_bc_demo")  # pixelrl demo --parts gui
