"""``pixelrl train RECIPE [key=value ...]``: train with PPO (DD-PPO under torchrun), or a text
policy with SFT / GRPO (DDP or FSDP2 under torchrun: :mod:`pixelrl.rl.text.parallel`).

Examples::

    pixelrl train embodied/pointnav                           # the default recipe
    pixelrl train embodied/pointnav train.async=false         # one process: exact reruns
    pixelrl train embodied/pointnav ppo.lr=1e-4 env.num_envs=4 train.total_frames=2e6
    pixelrl train embodied/pointnav train.resume=runs/embodied-pointnav-20260101-120000
    pixelrl train my_recipe.yaml                              # a YAML that names its recipe
    pixelrl train --print-config embodied/pointnav ppo.lr=1e-4   # flags go before the recipe
    torchrun --nproc-per-node 4 -m pixelrl train embodied/pointnav distributed.backend=nccl device=cuda
    torchrun --nproc-per-node 2 -m pixelrl train gui/grounding-grpo torch_threads=1   # text, DDP
    torchrun --nproc-per-node 8 -m pixelrl train gui/sft device=cuda distributed.shard=fsdp

train.async=true (the embodied PPO recipes' default) runs the envs, and the imitation teacher, in
an env worker process that collects the next rollout while the learner updates on the last one
(the acting policy is one update behind; PPO's ratio uses the stored behaviour log-probs).
train.async=false collects and learns in turn in one process, reproducible bit for bit.
torch_threads sets the learner's threads, collect.torch_threads the collecting policy's.
train.time_limit_minutes=M stops training after M wall minutes, train.cpu_limit_minutes=M after
M minutes of its CPU time: the whole run, warm starts (behaviour cloning, imitation) included,
evaluations excluded; the summary says what ended the run.
"""

from __future__ import annotations

import argparse

from pixelrl.cli import UsageError, is_user_error
from pixelrl.commands.args import constructor_error, nearest_option
from pixelrl.recipes import RECIPES
from pixelrl.recipes import config_file as find_config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="train a recipe: PPO / DD-PPO, behaviour cloning, SFT or GRPO (--list: the recipes)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("recipe", nargs="?", help="recipe name (see --list) or a YAML config file")
    p.add_argument("overrides", nargs="*", help="dotted config overrides, e.g. ppo.lr=1e-4")
    p.add_argument("--list", action="store_true", help="list the recipes and exit")
    p.add_argument("--print-config", action="store_true", help="print the full config and exit")
    p.add_argument("--model", help="VLM recipes: a model name or path, or tiny-<family>")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import yaml

    from pixelrl.config import ConfigError

    if args.list or not args.recipe:
        print_recipes(RECIPES)
        return 0 if args.list else 2
    from pixelrl.train import Trainer, config_for

    name, config_file = args.recipe, None
    if name in RECIPES and RECIPES[name].base:  # a variant: its YAML, run as its base recipe
        name, config_file = RECIPES[name].base, RECIPES[name].config
    elif name not in RECIPES and (config_file := find_config(name)):  # a YAML naming its recipe
        try:
            named = yaml.safe_load(config_file.read_text())
        except yaml.YAMLError as e:
            raise ConfigError(f"{name} is not valid YAML: {e}") from None
        name = str(named.get("recipe", "")) if isinstance(named, dict) else ""
    if name in RECIPES and RECIPES[name].kind == "text":  # SFT / GRPO: the recipe's own loop
        task = RECIPES[name].load_task()
        task.run_recipe(name, args.overrides, args.model, args.print_config, config_file)
        return 0  # ConfigError and the like: one line (pixelrl.cli)

    try:
        cfg = config_for(args.recipe, args.overrides)
    except KeyError as e:  # an unknown recipe, with the nearest names
        raise UsageError(e.args[0]) from e
    if args.print_config:
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return 0
    try:
        trainer = Trainer(cfg)  # ConfigError, CheckpointError (train.resume): one line
    except (TypeError, ValueError) as e:  # an env or policy option its constructor refuses
        if is_user_error(e):
            raise
        hint = nearest_option(str(cfg.env.id), dict(cfg.env.kwargs))  # a misspelled env option
        raise UsageError(
            f"cannot build the run from this config: {constructor_error(e)}{hint} (--debug: where)"
        ) from e
    result = trainer.run()
    if trainer.dist.is_main:
        print_summary(result)
    return 0


def print_recipes(recipes: dict) -> None:
    """One line a recipe: its name and what it trains (``--print-config NAME``: its config)."""
    width = max(map(len, recipes), default=0)
    for name, recipe in sorted(recipes.items()):
        print(f"{name:<{width}}  {recipe.description}")
    print(f"\n{len(recipes)} recipes; `pixelrl train --print-config NAME` shows one's config")


def print_summary(result: dict) -> None:
    """The last training window and evaluation as one table."""
    train, evaluation = result.get("train", {}), result.get("eval", {})
    from pixelrl.envs.nav.measures import HEADLINE

    names = [*HEADLINE, "return", "length", "episodes"]
    print(f"\nrun folder: {result['run_dir']}")
    print(
        f"frames {int(train.get('frames', 0)):,}  updates {int(train.get('update', 0))}  fps {train.get('fps', 0):.0f}"
    )
    if "ended" in result:  # what stopped it: its frames or a time limit
        print(f"ended: {result['ended']} after {result['train_minutes']:.1f} training minutes")
    print(f"{'measure':<18}{'train (window)':>16}{'eval (held-out)':>18}")
    for name in names:
        t, e = train.get(f"train/{name}"), evaluation.get(name)
        if t is None and e is None:
            continue
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        print(f"{name:<18}{fmt(t):>16}{fmt(e):>18}")
