"""``pixelrl train`` for text-policy recipes: the config, the adapter, the loop, a summary.

A domain's recipe module exposes ``run_recipe`` (the registry's ``text`` kind) as
``functools.partial(run_recipe, Adapter, config_for)``: ``config_for(file, overrides)`` reads
and checks its config, ``Adapter(cfg)`` is its task adapter (:mod:`pixelrl.rl.text.adapter`),
whose ``RECIPES`` names the loop of each recipe.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pixelrl.config import Config, ConfigError

LOOPS = ("sft", "grpo", "multiturn")


def train(cfg: Config, adapter) -> dict[str, Any]:
    """Run ``cfg.recipe`` with ``adapter``."""
    from pixelrl.rl.text.config import check_text_config
    from pixelrl.rl.text.grpo import run_grpo
    from pixelrl.rl.text.multiturn import run_multiturn
    from pixelrl.rl.text.parallel import check_parallel
    from pixelrl.rl.text.sft import run_sft
    from pixelrl.rl.vector_envs import local_env_workers
    from pixelrl.threads import choose as choose_threads
    from pixelrl.threads import use as use_threads

    check_text_config(cfg)
    if cfg.recipe not in adapter.RECIPES:
        raise ConfigError(
            f"recipe {cfg.recipe!r} is not one of this module's ({', '.join(adapter.RECIPES)})"
        )
    check_parallel(cfg)
    # torch_threads 0: the thread policy (pixelrl.threads); config.yaml records the count
    workers = local_env_workers(cfg, 0)
    cfg.torch_threads = use_threads(choose_threads(cfg.torch_threads, workers)).count
    loop = {"sft": run_sft, "grpo": run_grpo, "multiturn": run_multiturn}
    return loop[adapter.RECIPES[cfg.recipe]](cfg, adapter)


def run_recipe(
    adapter_class,
    config_for,
    name: str,
    overrides=(),
    model: str | None = None,
    print_config: bool = False,
    config: str | Path | None = None,
) -> dict[str, Any] | None:
    """Config (the recipe's own, or the YAML file ``config`` that names this recipe) under
    ``overrides`` and ``--model``; the run; a table of the held-out evaluations."""
    from pixelrl.run_folder import recipe_config

    cfg = recipe_config(name, overrides, model, print_config, config, config_for)
    if cfg is None:
        return None
    result = train(cfg, adapter_class(cfg))
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun: rank 0 speaks
        print_summary(result)
    return result


def print_summary(result: dict[str, Any]) -> None:
    """One line per held-out evaluation: the measure with its 95% CI, and what else it holds."""
    rows = result["eval"]
    print(f"\nrun folder: {result['run_dir']}")
    val_key = next((k for k in result if k.startswith("val_")), None)
    if val_key:
        print(f"model/ holds the best-validated weights: step {result['kept_step']}, "
              f"validation {val_key[4:]} {result[val_key]:.3f} (val.csv)")  # fmt: skip
    if not rows:
        print("no held-out evaluation (eval.episodes is 0)")
        return
    measure = next(m for m in ("accuracy", "success") if m in rows[-1])
    extra = [k for k in ("spl", "format") if k in rows[-1]]
    head = f"{'step':>6}{'held-out ' + measure:>22}{'95% CI':>16}"
    print(head + "".join(f"{k:>8}" for k in extra) + f"{'n':>6}{'cpu s':>9}{'wall s':>9}")
    for row in rows:
        ci = f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        cells = "".join(f"{row[k]:>8.3f}" for k in extra)
        print(f"{row['step']:>6}{row[measure]:>22.3f}{ci:>16}{cells}{row['n']:>6}"
              f"{row['cpu_s']:>9.0f}{row['wall_s']:>9.0f}")  # fmt: skip
