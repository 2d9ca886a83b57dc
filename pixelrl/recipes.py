"""Training recipes by name: ``pixelrl train embodied/pointnav`` looks the name up here.

A recipe is a YAML config plus a *task module* that knows how to build its envs and policy::

    def make_envs(cfg, num_envs: int, seed: int, split: str) -> gymnasium.vector.VectorEnv
    def make_policy(cfg, observation_space, action_space) -> torch.nn.Module  # a Policy

``split`` is ``"train"`` or ``"eval"`` (held-out scenes). The trainer (:mod:`pixelrl.train`) does
the rest. Other packages add their recipes with :func:`register_recipe` (e.g. ``gui/...`` from
``gui_agent``); the table below lists the built-in ones.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Recipe:
    name: str
    config: Path  # the recipe's YAML
    task_module: str  # import path of the module with make_envs / make_policy

    def load_task(self) -> ModuleType:
        module = importlib.import_module(self.task_module)
        for fn in ("make_envs", "make_policy"):
            if not callable(getattr(module, fn, None)):
                raise TypeError(f"recipe {self.name!r}: module {self.task_module} has no {fn}()")
        return module


RECIPES: dict[str, Recipe] = {}


def register_recipe(name: str, config: str | Path, task_module: str) -> None:
    """Add (or replace) recipe ``name``; ``config`` relative paths are from the repository root."""
    path = Path(config)
    RECIPES[name] = Recipe(name, path if path.is_absolute() else REPO_ROOT / path, task_module)


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; an unknown name is an error listing the nearest ones."""
    if name not in RECIPES:
        near = difflib.get_close_matches(name, RECIPES, n=3, cutoff=0.3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise KeyError(f"unknown recipe {name!r}{hint} (known: {', '.join(sorted(RECIPES))})")
    return RECIPES[name]


register_recipe("embodied/pointnav", "embodied/configs/pointnav.yaml", "embodied.task")
register_recipe("embodied/pointnav-small", "embodied/configs/pointnav_small.yaml", "embodied.task")
register_recipe("embodied/pointnav-rgbd", "embodied/configs/pointnav_rgbd.yaml", "embodied.task")
register_recipe("embodied/objectnav", "embodied/configs/objectnav.yaml", "embodied.task")
register_recipe("gui/ppo", "gui_agent/configs/ppo.yaml", "gui_agent.ppo_task")
register_recipe("gui/sft", "gui_agent/configs/sft.yaml", "gui_agent.train_vlm")
register_recipe(
    "gui/grounding-grpo", "gui_agent/configs/grounding_grpo.yaml", "gui_agent.train_vlm"
)
register_recipe(
    "gui/multiturn-grpo", "gui_agent/configs/multiturn_grpo.yaml", "gui_agent.train_vlm"
)
