"""Training recipes by name: ``pixelrl train embodied/pointnav`` looks the name up here.

A recipe is a YAML config, a *task module* and its *kind*, which says what the module provides:

- ``"ppo"`` (PPO, DD-PPO, behaviour cloning: :mod:`pixelrl.train` runs it) -- the module builds
  the envs and the policy::

      def make_envs(cfg, num_envs: int, seed: int, split: str) -> gymnasium.vector.VectorEnv
      def make_policy(cfg, observation_space, action_space) -> torch.nn.Module  # a Policy

  ``split`` is ``"train"`` or ``"eval"`` (held-out scenes);
- ``"text"`` (SFT and GRPO of a vision-language policy) -- the module runs its own loop::

      def run_recipe(name, overrides, model, print_config, config) -> dict | None

A *variant* (:func:`register_variant`) is another shipped YAML for a recipe's task: ``gui/ppo-bc``
runs ``gui_agent/configs/ppo_bc.yaml``, exactly as ``pixelrl train gui_agent/configs/ppo_bc.yaml``
does (the file's ``recipe:`` key, its *base*, says whose task and loop it runs, and is what the run
records). Every shipped config is a recipe or a variant, so ``pixelrl train --list`` names them
all and they load from an installed wheel too.

The domains add their recipes with :func:`register_recipe` from their registration modules
(:mod:`pixelrl.registry`: the spine names no domain); :data:`RECIPES` loads them the first time it
is read, so ``pixelrl train --list`` names every installed domain's recipes.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pixelrl.legacy import current_module
from pixelrl.registry import ENTRY_POINT_GROUP, load_domains

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
    description: str = ""  # one line for `pixelrl train --list`
    base: str = ""  # a variant's recipe (its YAML's `recipe:` key); "" for a recipe itself

    @property
    def runs_as(self) -> str:
        """The recipe name the run records (a variant's base): what the task module knows."""
        return self.base or self.name

    def load_task(self) -> ModuleType:
        module = importlib.import_module(current_module(self.task_module))
        for fn in KINDS[self.kind]:
            if not callable(getattr(module, fn, None)):
                raise TypeError(f"recipe {self.name!r}: module {self.task_module} has no {fn}()")
        return module


class _Recipes(dict):
    """The recipes by name; reading it first loads the domains' registrations
    (:func:`pixelrl.registry.load_domains`), so every installed domain's recipes are in it."""

    def _loaded(self) -> _Recipes:
        load_domains()
        return self

    def __getitem__(self, name: str) -> Recipe:
        return dict.__getitem__(self._loaded(), name)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self._loaded(), name)

    def __iter__(self):
        return dict.__iter__(self._loaded())

    def __len__(self) -> int:
        return dict.__len__(self._loaded())

    def get(self, name: str, default=None):
        return dict.get(self._loaded(), name, default)

    def keys(self):
        return dict.keys(self._loaded())

    def values(self):
        return dict.values(self._loaded())

    def items(self):
        return dict.items(self._loaded())


RECIPES: dict[str, Recipe] = _Recipes()


def _config_path(config: str | Path) -> Path:
    path = Path(config)
    return path if path.is_absolute() else package_file(path)


def register_recipe(
    name: str, config: str | Path, task_module: str, kind: str = "ppo", description: str = ""
) -> None:
    """Add (or replace) recipe ``name`` of ``kind`` (:data:`KINDS`); a relative ``config`` is a
    package file (:func:`package_file`, e.g. ``"gui_agent/configs/ppo.yaml"``)."""
    if kind not in KINDS:
        raise ValueError(f"recipe {name!r}: kind must be one of {sorted(KINDS)}, got {kind!r}")
    RECIPES[name] = Recipe(name, _config_path(config), task_module, kind, description)


def register_variant(name: str, config: str | Path, base: str, description: str = "") -> None:
    """Add recipe ``name``: the YAML ``config``, whose ``recipe:`` key is ``base`` (a registered
    recipe), run with ``base``'s task module and recorded as ``base``."""
    parent = RECIPES[base]
    RECIPES[name] = Recipe(
        name, _config_path(config), parent.task_module, parent.kind, description, base
    )


def config_file(text: str | Path) -> Path | None:
    """The YAML file that ``pixelrl train TEXT`` names, or None: ``TEXT`` itself where it is a
    file, else a shipped file named by its repository path (``gui_agent/configs/ppo_bc.yaml``),
    which so works from any folder and from an installed wheel."""
    path = Path(text)
    if path.is_file():
        return path
    if path.is_absolute() or path.suffix not in (".yaml", ".yml") or ".." in path.parts:
        return None
    try:
        shipped = package_file(path)
    except (ImportError, ValueError):  # a first part that is no package name
        return None
    return shipped if shipped.is_file() else None


def get_recipe(name: str) -> Recipe:
    """The recipe called ``name``; an unknown name is an error listing the nearest ones."""
    if name not in RECIPES:
        near = difflib.get_close_matches(name, RECIPES, n=3, cutoff=0.3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        # none at all: the domains' entry points are missing (a checkout installed before them)
        known = ", ".join(sorted(RECIPES)) or (
            f"none: no domain is installed (entry points {ENTRY_POINT_GROUP!r}; in a checkout, "
            "pip install -e .)"
        )
        raise KeyError(f"unknown recipe {name!r}{hint} (known: {known})")
    return RECIPES[name]
