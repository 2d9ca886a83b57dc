"""The navigation domain's command-line pieces, registered by name (:mod:`pixelrl.registry`):
``pixelrl bench nav`` (the bench ``nav``) and ``pixelrl record --agent vlm FOLDER`` (the record
agent ``vlm``)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from pixelrl.commands.args import (
    add_threads_argument,
    agent_action,
    batch_size,
    non_negative_int,
    positive_int,
    use_threads,
)

NAV_DESCRIPTION = """``pixelrl bench nav``: habitat's measures of one or more agents over an episode dataset.

Examples::

    pixelrl bench nav --dataset val.json.gz --agent expert
    pixelrl bench nav --dataset val.json.gz --agent checkpoint runs/embodied-pointnav-... \\
        --agent expert --agent random                  # side by side, one row per agent
    pixelrl bench nav --dataset val.json.gz --agent random --episodes 50 --env-option width=64
    pixelrl bench nav --dataset val.json.gz --agent vlm runs/nav-vlm-sft/model  # a VLM agent
    pixelrl bench nav --dataset val.json.gz --agent vlm RUN/model --batch 16  # 16 episodes a generate

Runs the dataset's episodes in order with each agent, prints Success, SPL, SoftSPL and
DistanceToGoal (mean and 95% confidence interval) in one table with a named row per agent, and
writes ``summary.csv`` and, per agent, ``<agent>/episodes.csv`` and ``<agent>/paths.png``
(top-down maps of the first episodes) into ``--out`` (default ``outputs/bench_nav/<dataset>``).
The scenes are the ones the dataset's scene ids name (procedural ids carry their generator
options); ``--env-option`` sets the others (sensors, resolution, ...), over what each agent needs.
A VLM agent plays ``--batch`` episodes together (default 8), each in its own env, with one batched
``generate`` per turn over the episodes still running; ``--batch 1`` plays one at a time.
"""

# Kept in step with pixelrl.embodied.benchmark.AGENT_KINDS / PATH_KINDS (not imported here, so
# that `pixelrl --help` stays instant); tests/embodied/test_embodied_benchmark.py checks they agree.
AGENTS = ("checkpoint", "vlm", "expert", "random", "forward-only", "stop")
PATH_AGENTS = ("checkpoint", "vlm")


def env_option(text: str) -> tuple[str, Any]:
    """``key=value`` (value read as YAML) for a navigation env option, checked by name."""
    import difflib

    from pixelrl.config import ConfigError, parse_override
    from pixelrl.embodied.benchmark import EPISODE_SOURCE_OPTIONS
    from pixelrl.envs.nav.config import NavConfig, check_option

    try:
        parts, value = parse_override(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    key = ".".join(parts)
    names = list(NavConfig.__dataclass_fields__)
    if key in EPISODE_SOURCE_OPTIONS:
        raise argparse.ArgumentTypeError(
            f"{key!r} chooses where episodes come from; bench nav takes them from --dataset "
            "(its scene ids carry their generator options)"
        )
    if key not in names:
        near = difflib.get_close_matches(key, names, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise argparse.ArgumentTypeError(f"unknown env option {key!r}{hint}")
    try:
        check_option(key, value)  # its type and range on its own; the rest when the env is made
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return key, value


def add_bench_parser(kinds: argparse._SubParsersAction) -> None:
    """``pixelrl bench nav`` (registered as the bench ``nav``: :mod:`pixelrl.registry`)."""
    nav = kinds.add_parser(
        "nav",
        help="navigation benchmark over a habitat .json.gz episode dataset",
        description=NAV_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    nav.add_argument("--dataset", required=True, help="habitat episode file (.json.gz)")
    nav.add_argument("--agent", nargs="+", required=True, metavar="KIND [PATH]",
                     action=agent_action(AGENTS, PATH_AGENTS, repeat=True),
                     help=f"repeatable; one of {', '.join(AGENTS)}; 'checkpoint' takes the "
                     "checkpoint path (or run folder), 'vlm' a navigation VLM agent's folder "
                     "(RUN/model of pixelrl train embodied/vlm-sft or vlm-grpo; greedy answers)")  # fmt: skip
    nav.add_argument(
        "--task",
        choices=("pointnav", "objectnav", "instructnav"),
        default=None,
        help="the dataset's (its episodes say it: object categories, instructions or points); "
        "a --task that contradicts them is an error",
    )
    nav.add_argument("--episodes", type=positive_int, default=None, help="the first N episodes")
    nav.add_argument("--batch", type=batch_size, default=8, metavar="N",
                     help="VLM agents: episodes played together, one batched generate per turn "
                     "over their envs (default 8; 1: one at a time, as before); the same numbers "
                     "for greedy answers. Other agents play one episode at a time")  # fmt: skip
    nav.add_argument("--out", default=None,
                     help="folder for the CSVs and paths.png (default outputs/bench_nav/<dataset>)")  # fmt: skip
    nav.add_argument("--seed", type=int, default=0)
    nav.add_argument(
        "--deterministic", action="store_true", help="checkpoint agent: argmax actions"
    )
    nav.add_argument(
        "--scene-dir", default=None, help="where relative scene ids of the dataset live"
    )
    nav.add_argument("--paths", type=non_negative_int, default=6,
                     help="episodes drawn in paths.png (0: none)")  # fmt: skip
    nav.add_argument("--env-option", type=env_option, action="append", default=[],
                     metavar="KEY=VALUE", help="env option, repeatable (e.g. width=128)")  # fmt: skip
    add_threads_argument(nav, "the agents")
    nav.set_defaults(func=run_nav, prog=nav.prog)


def agent_name(kind: str, path: str | None) -> str:
    """A row name: the kind, and for a path the run it names (``checkpoint pointnav-0101``,
    ``vlm nav-vlm-sft`` for ``runs/nav-vlm-sft/model``)."""
    if path is None:
        return kind
    p = Path(path)
    while p.name in ("latest.pt", "checkpoints", "model") or p.suffix == ".pt" and p.parent.name == "checkpoints":  # fmt: skip
        p = p.parent
    return f"{kind} {p.name or path}"


def run_nav(args: argparse.Namespace) -> int:
    import csv

    from pixelrl.cli import UsageError, is_user_error
    from pixelrl.embodied.benchmark import MEASURES, comparison_table, interval, make_agent

    dataset = Path(args.dataset)
    if not dataset.is_file():
        raise UsageError(f"no such episode dataset: {dataset}")
    if args.task is not None:  # the episodes say their task; a --task must agree
        from pixelrl.embodied.benchmark import TASK_EVIDENCE
        from pixelrl.envs.nav.dataset import dataset_task, load_episodes

        file_task = dataset_task(dataset, load_episodes(dataset))
        if args.task != file_task:
            raise UsageError(
                f"--task {args.task} does not match {dataset.name}: its episodes are "
                f"{file_task} episodes ({TASK_EVIDENCE[file_task]}); leave --task out"
            )
    out = Path(args.out) if args.out else Path("outputs/bench_nav") / dataset.name.split(".")[0]
    names = _unique([agent_name(kind, path) for kind, path in args.agent])
    use_threads(args)
    runs = {}
    try:
        for name, (kind, path) in zip(names, args.agent):  # all built before any is run
            try:
                runs[name] = make_agent(
                    kind, dataset, path, task=args.task, seed=args.seed,
                    deterministic=args.deterministic, scene_dir=args.scene_dir,
                    **dict(args.env_option),
                )  # fmt: skip
            except (ValueError, FileNotFoundError) as e:
                if is_user_error(e):
                    raise
                raise UsageError(f"--agent {kind}: {e}") from e
        for name, (bench, agent) in runs.items():
            print(f"{name}:")
            folder = out / re.sub(r"[^\w.-]+", "-", name)
            bench.evaluate(agent, num_episodes=args.episodes, output_dir=folder,
                           num_path_plots=args.paths, batch_size=args.batch)  # fmt: skip
    finally:
        for bench, _ in runs.values():
            bench.close()
    benches = {name: bench for name, (bench, _) in runs.items()}
    print(f"\n{dataset.name}: habitat's measures, mean [95% CI]")
    print(comparison_table(benches))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "summary.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["agent", "episodes", "measured"] + [
            f"{m}{suffix}" for m in MEASURES for suffix in ("", "_ci_low", "_ci_high")
        ])  # fmt: skip
        for name, bench in benches.items():
            row = [name, len(bench.rows), sum(r["valid"] for r in bench.rows)]
            for m in MEASURES:
                mean, half = bench.summary.get(m, (None, None))
                row += [mean, *interval(m, mean, half)] if mean is not None else ["", "", ""]
            writer.writerow(row)
    print(f"\nsummary: {out / 'summary.csv'}")
    for name, bench in benches.items():
        print(f"{name}: {bench.csv_path}" + (f", {bench.png_path}" if bench.png_path else ""))
    return 0


class VLMRecording:
    """``pixelrl record --agent vlm FOLDER``: a navigation VLM agent's folder, played with greedy
    answers (registered as the record agent ``vlm``: :mod:`pixelrl.registry`)."""

    @staticmethod
    def env_kwargs(path: str, env_id: str) -> dict[str, Any]:
        """The env options the agent learned with; an agent of another task is a one-line
        error naming the env to record it in."""
        from pixelrl.cli import UsageError
        from pixelrl.embodied.vlm_agent import TASKS, read_spec

        spec = read_spec(path)  # AgentFileError: one line
        if TASKS.get(env_id) != spec.task:
            trained = [k for k, v in TASKS.items() if v == spec.task]
            raise UsageError(
                f"--agent vlm: {path} is a {spec.task} agent; record it in {trained[0]}, "
                f"not {env_id}"
            )
        return dict(spec.env_kwargs)

    @staticmethod
    def make(path: str, env: Any) -> Any:
        """The agent (``reset``, ``act``, ``last_text``) for ``env``, a navigation env."""
        from pixelrl.embodied.vlm_agent import load_agent

        nav = getattr(env.unwrapped, "cfg", None)
        if not hasattr(nav, "forward_step"):
            raise ValueError(f"a navigation VLM agent acts in navigation envs, not {env.spec.id}")
        return load_agent(path, nav.forward_step, nav.turn_degrees)  # greedy answers


def _unique(names: list[str]) -> list[str]:
    """``random``, ``random`` -> ``random``, ``random #2`` (rows and folders stay apart)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out
