"""The ``env.family`` and ``env.tasks`` keys of a config: a task family and the tasks of it a
recipe plays (``env.family: miniwob`` with ``env.tasks: [click-button, ...]``), checked against
the family registry (:mod:`pixelrl.envs.families`) before any run folder or env exists.

``env.tasks`` used to mean MiniWoB++ task names; now it means the tasks of ``env.family``, and a
config with tasks but no family is refused in one line that names the key to add. Configs saved
before (``env.id: miniwob`` beside ``env.tasks``: run folders, checkpoints) read ``env.id`` as the
family where it names one, so old runs still evaluate and resume.
"""

from __future__ import annotations

from pixelrl.config import Config, ConfigError
from pixelrl.envs import FAMILIES, TaskFamily, unknown_family_message
from pixelrl.envs.registry import unknown_env_message


def names_family(cfg: Config) -> bool:
    """Whether the config plays a family's tasks (``env.family`` or ``env.tasks`` set)."""
    return bool(cfg.env.get("family") or cfg.env.get("tasks"))


def family_name(cfg: Config) -> str:
    """``env.family``; else ``env.id`` where it names a family (configs saved before the key)."""
    legacy = str(cfg.env.get("id") or "")
    return str(cfg.env.get("family") or "") or (legacy if legacy in FAMILIES else "")


def family_tasks(cfg: Config, expert_for: str = "") -> tuple[TaskFamily, list[str]]:
    """``env.family`` and its ``env.tasks``, each a registered task; with ``expert_for`` (what
    to set to do without demonstrations, e.g. ``"policy.bc_steps=0"``) each one the family's
    expert plays. :class:`ConfigError` in one line names the first key that is wrong."""
    name = family_name(cfg)
    tasks = [str(t) for t in (cfg.env.get("tasks") or [])]
    if not name:
        raise ConfigError(
            "env.tasks: name the task family they belong to with env.family "
            "(env.family=miniwob for MiniWoB++ task names, which env.tasks alone meant before)"
        )
    problem = unknown_family_message(name)
    if problem:
        raise ConfigError(f"env.family: {problem}")
    family = FAMILIES[name]
    if not tasks:
        example = family.tasks[0] if family.tasks else "..."
        raise ConfigError(f"env.tasks: list the {name} tasks to train on, e.g. [{example}]")
    for task in tasks:
        problem = unknown_env_message(family.env_id(task))
        if problem:
            raise ConfigError(f"env.tasks: {task!r}: {problem}")
        if expert_for and not family.expert_plays(task):
            plays = [t for t in family.tasks if family.expert_plays(t)]
            raise ConfigError(
                f"env.tasks: the {name} family's expert cannot play {task!r}, so it has no "
                f"demonstrations to clone (it plays {', '.join(plays)}); "
                f"drop it or set {expert_for}"
            )
    return family, tasks
