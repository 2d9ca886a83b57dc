"""Training recipes by name: ``pixelrl train embodied/pointnav`` looks the name up here.

A recipe is a YAML config, a *task module* and its *kind*, which says what the module provides:

- ``"ppo"`` (PPO, DD-PPO, behaviour cloning: :mod:`pixelrl.train` runs it) -- the module builds
  the envs and the policy::

      def make_envs(cfg, num_envs: int, seed: int, split: str) -> gymnasium.vector.VectorEnv
      def make_policy(cfg, observation_space, action_space) -> torch.nn.Module  # a Policy

  ``split`` is ``"train"`` or ``"eval"`` (held-out scenes);
- ``"text"`` (SFT and GRPO of a vision-language policy) -- the module runs its own loop::

      def run_recipe(name, overrides, model, print_config, config) -> dict | None
 Other packages add their recipes with :func:`register_recipe` (e.g. ``gui/...`` from
``gui_agent``); the table below lists the built-in ones.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGE_ROOT = Path(__file__).resolve().parent


def package_file(relative: str | Path) -> Path:
    """A file shipped inside a subpackage, named from the repository layout.

    ``"embodied/configs/pointnav.yaml"`` is ``pixelrl.embodied``'s ``configs/pointnav.yaml``
    wherever that package lives: the repository's top-level ``embodied/`` folder in an editable
    install, ``site-packages/pixelrl/embodied/`` in a wheel (pyproject's ``package-dir``)."""
    import importlib.util

    head, *rest = Path(relative).parts
    spec = importlib.util.find_spec(f"pixelrl.{head}")
    if spec is None or not spec.submodule_search_locations:
        return PACKAGE_ROOT / relative
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*rest)


# What a task module of each kind of recipe provides.
KINDS = {"ppo": ("make_envs", "make_policy"), "text": ("run_recipe",)}


@dataclass(frozen=True)
class Recipe:
    name: str
    config: Path  # the recipe's YAML
    task_module: str  # import path of the module with what its kind needs (KINDS)
    kind: str = "ppo"

    def load_task(self) -> ModuleType:
        from pixelrl.legacy import current_module

        module = importlib.import_module(current_module(self.task_module))
        for fn in KINDS[self.kind]:
            if not callable(getattr(module, fn, None)):
                raise TypeError(f"recipe {self.name!r}: module {self.task_module} has no {fn}()")
        return module


RECIPES: dict[str, Recipe] = {}


def register_recipe(name: str, config: str | Path, task_module: str, kind: str = "ppo") -> None:
    """Add (or replace) recipe ``name`` of ``kind`` (:data:`KINDS`); a relative ``config`` is a
    package file (:func:`package_file`, e.g. ``"gui_agent/configs/ppo.yaml"``)."""
    if kind not in KINDS:
        raise ValueError(f"recipe {name!r}: kind must be one of {sorted(KINDS)}, got {kind!r}")
    path = Path(config)
    config_path = path if path.is_absolute() else package_file(path)
    RECIPES[name] = Recipe(name, config_path, task_module, kind)


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; an unknown name is an error listing the nearest ones."""
    if name not in RECIPES:
        near = difflib.get_close_matches(name, RECIPES, n=3, cutoff=0.3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise KeyError(f"unknown recipe {name!r}{hint} (known: {', '.join(sorted(RECIPES))})")
    return RECIPES[name]


register_recipe("embodied/pointnav", "embodied/configs/pointnav.yaml", "pixelrl.embodied.task")
register_recipe(
    "embodied/pointnav-small", "embodied/configs/pointnav_small.yaml", "pixelrl.embodied.task"
)
register_recipe(
    "embodied/pointnav-rgbd", "embodied/configs/pointnav_rgbd.yaml", "pixelrl.embodied.task"
)
register_recipe("embodied/objectnav", "embodied/configs/objectnav.yaml", "pixelrl.embodied.task")
register_recipe(
    "embodied/objectnav-small", "embodied/configs/objectnav_small.yaml", "pixelrl.embodied.task"
)
register_recipe(
    "embodied/vlm-sft", "embodied/configs/vlm_sft.yaml", "pixelrl.embodied.vlm_train", "text"
)
register_recipe(
    "embodied/vlm-grpo", "embodied/configs/vlm_grpo.yaml", "pixelrl.embodied.vlm_train", "text"
)
register_recipe("gui/ppo", "gui_agent/configs/ppo.yaml", "pixelrl.gui_agent.ppo_task")
register_recipe("gui/miniwob", "gui_agent/configs/miniwob.yaml", "pixelrl.gui_agent.miniwob_task")
register_recipe("gui/sft", "gui_agent/configs/sft.yaml", "pixelrl.gui_agent.train_vlm", "text")
register_recipe(
    "gui/grounding-grpo",
    "gui_agent/configs/grounding_grpo.yaml",
    "pixelrl.gui_agent.train_vlm",
    "text",
)
register_recipe(
    "gui/multiturn-grpo",
    "gui_agent/configs/multiturn_grpo.yaml",
    "pixelrl.gui_agent.train_vlm",
    "text",
)
