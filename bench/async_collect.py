"""Frames/s of ``pixelrl train embodied/pointnav`` with collection overlapping learning
(``train.async=true``) against the one-process path (``train.async=false``), same run.

Each variant trains the recipe as it ships (64 px depth, 8 envs x 128 steps, the ResNet+GRU
policy) for ``--imitation`` imitation updates (the shortest-path teacher drives) and then ``--ppo``
PPO updates, evaluation and checkpoints off. Frames/s = env frames / wall seconds of the
training loop (``history.csv``'s ``train_minutes``), per phase; CPU% = CPU seconds of the
learner and its env worker / wall seconds (100% = one core busy); frames per CPU second shows
what the overlap itself costs, which a loaded machine measures better than frames/s. The env worker's start (its
scenes) is not in the loop's time, so the first update of each variant is left out of the rates.
Variants alternate ``--repeats`` times and the medians are compared, since the machine may be
shared::

    .venv/bin/python bench/async_collect.py                      # 20 imitation + 20 PPO updates
    .venv/bin/python bench/async_collect.py --imitation 0 --ppo 40 --repeats 3
    .venv/bin/python bench/async_collect.py --override torch_threads=2   # learner threads

Prints one line per run and a table: frames/s per phase, CPU%, and the async/sync ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile


def run(flag: str, args: argparse.Namespace) -> dict[str, float]:
    from pixelrl.train import Trainer, config_for

    updates = args.imitation + args.ppo
    with tempfile.TemporaryDirectory() as out:
        cfg = config_for(
            "embodied/pointnav",
            [
                f"train.async={flag}",
                f"imitation.updates={args.imitation}",
                "ppo.critic_warmup_updates=0",  # same work in every PPO update
                f"train.total_frames={updates * 8 * 128}",
                "train.time_limit_minutes=0",
                f"train.output_dir={out}",
                "train.eval_interval=0",
                "train.final_eval=false",
                "train.checkpoint_interval=0",
                "train.tensorboard=false",
                "train.progress=false",
                f"seed={args.seed}",
                *args.override,
            ],
        )
        trainer = Trainer(cfg)
        trainer.run()
        rows = trainer.history
    for before, row in zip([{"frames": 0}, *rows], rows):
        row["frames_in_update"] = row["frames"] - before["frames"]
    result: dict[str, float] = {}
    phases = {
        "imitation": [r for r in rows if "imitation_update" in r],
        "ppo": [r for r in rows if "imitation_update" not in r],
    }
    for phase, part in phases.items():
        if len(part) < 2:
            continue
        # rows hold running totals: the difference of the last and the first leaves update 1 out
        wall = 60 * (part[-1]["train_minutes"] - part[0]["train_minutes"])
        cpu = 60 * (part[-1]["cpu_minutes"] - part[0]["cpu_minutes"])
        frames = part[-1]["frames"] - part[0]["frames"]
        collect = sum(r["frames_in_update"] / r["collect_fps"] for r in part[1:])
        result[f"{phase}_fps"] = frames / wall
        result[f"{phase}_cpu%"] = 100 * cpu / wall
        # frames per CPU second: the overlap's own cost (on a loaded machine, where the wall
        # clock says more about the other jobs than about this code)
        result[f"{phase}_frames/cpu_s"] = frames / cpu
        # sync: the share of the loop spent collecting; async: the learner's wait for rollouts
        result[f"{phase}_collect%"] = 100 * collect / wall
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imitation", type=int, default=20, help="imitation updates")
    parser.add_argument("--ppo", type=int, default=20, help="PPO updates")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--override", action="append", default=[], help="a config override for both variants"
    )
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}  load average: {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[dict[str, float]]] = {"false": [], "true": []}
    for _ in range(args.repeats):
        for flag in ("false", "true"):
            result = run(flag, args)
            runs[flag].append(result)
            print(
                f"train.async={flag:<5} "
                + "  ".join(f"{k} {v:.0f}" for k, v in result.items())
                + f"  (load average {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    keys = list(runs["false"][0])
    print(
        f"\n{'median of ' + str(args.repeats):<18}{'async=false':>12}{'async=true':>12}{'ratio':>8}"
    )
    for key in keys:
        sync = statistics.median(r[key] for r in runs["false"])
        overlap = statistics.median(r[key] for r in runs["true"])
        print(f"{key:<18}{sync:>12.0f}{overlap:>12.0f}{overlap / sync:>8.2f}")
    for phase in ("imitation", "ppo"):
        if f"{phase}_collect%" in keys:
            share = statistics.median(r[f"{phase}_collect%"] for r in runs["false"]) / 100
            print(
                f"{phase}: sync spends {100 * share:.0f}% of its loop collecting; on two free "
                f"cores the overlap can reach {1 / max(share, 1 - share):.2f}x "
                "(1 / max(collect share, learn share))"
            )


if __name__ == "__main__":
    main()
