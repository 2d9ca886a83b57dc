"""Navigation VLM agents on the same held-out episodes, with paired tests.

    .venv/bin/python bench/vlm_nav_paired.py RUN_A/model RUN_B/model [--episodes 200] [--envs 8]
    .venv/bin/python bench/vlm_nav_paired.py RUN/model random forward-only checkpoint=RESNET_RUN

Each agent folder (``pixelrl train embodied/vlm-sft`` / ``vlm-grpo``'s ``RUN/model``) plays the
held-out starts its recipe evaluates on (the run's ``env.eval_kwargs`` scenes, seeds from
``EVAL_SEED_BASE``), greedy answers, ``--envs`` episodes batched per ``generate`` (the recipe's
own evaluation, :func:`pixelrl.embodied.vlm_episodes.play`). Every agent sees the same episodes, so
the comparison is paired: the table gives Success (Wilson 95% CI), SPL (t 95% CI) and the parse
rate per agent, then each agent against the first: the Success difference with McNemar's exact
test (episodes one agent solves and the other does not) and the SPL difference with a paired t
test. ``--csv`` writes the per-episode rows.

Besides agent folders: ``random`` and ``forward-only`` (habitat's baselines) and
``checkpoint=PATH`` (a ResNet+GRU run of ``pixelrl train``, sampled actions as habitat evaluates;
it must have been trained on the same env options) play the same episodes in the first VLM
agent's env, one action per step.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "agents", nargs="+", help="agent folders (RUN/model), random, forward-only, checkpoint=PATH"
    )
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--csv", default=None)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (2 on a loaded 2-core box: 10x slower)",
    )
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)

    from pixelrl.embodied import vlm_train as vt

    seeds = [vt.EVAL_SEED_BASE + k for k in range(args.episodes)]
    if len(set(args.agents)) < len(args.agents):
        parser.error(f"an agent is named twice: {' '.join(args.agents)}")
    label = dict(zip(args.agents, labels(args.agents)))
    results: dict[str, list[dict]] = {}
    eval_cfg = None  # the first VLM agent's run config: the baselines play in its env
    for name in args.agents:
        if name in ("random", "forward-only") or name.startswith("checkpoint="):
            if eval_cfg is None:
                parser.error(f"{name}: name a VLM agent folder first (its env is the baselines')")
            env = vt.make_env(eval_cfg, "eval")
            results[label[name]] = play_baseline(name, env, seeds)
            env.close()
            continue
        run = Path(name).parent
        eval_cfg = eval_cfg or vt.config_for(run / "config.yaml", ["train.progress=false"])
        results[label[name]] = play_agent(name, seeds, args.envs)

    print(
        f"\n{'agent':<22}{'success':>9}{'95% CI':>16}{'SPL':>8}{'95% CI':>16}{'parsed':>8}{'n':>5}"
    )
    for name, rows in results.items():
        m = measures(rows)
        ci = f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
        spl_ci = f"[{m['spl_low']:.3f}, {m['spl_high']:.3f}]"
        print(f"{name:<22}{m['success']:>9.3f}{ci:>16}{m['spl']:>8.3f}{spl_ci:>16}"
              f"{m['parsed']:>8.2f}{m['n']:>5}")  # fmt: skip
    names = list(results)
    base = results[names[0]]
    for name in names[1:]:
        c = paired(base, results[name])
        print(f"\n{name} - {names[0]}: success {c['d_success']:+.3f} (solved only by "
              f"{name}: {c['only_b']}, only by {names[0]}: {c['only_a']}; McNemar exact "
              f"p = {c['p_success']:.2g}); SPL {c['d_spl']:+.3f} (paired t p = {c['p_spl']:.2g})")  # fmt: skip
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["agent", "episode", "seed", "success", "spl", "num_steps", "parsed"])
            for name, rows in results.items():
                for k, r in enumerate(rows):
                    writer.writerow([name, k, seeds[k], r["success"], r["spl"], r["num_steps"],
                                     round(r["parsed"], 3)])  # fmt: skip


def play_agent(folder: str | Path, seeds: list[int], n_envs: int = 8) -> list[dict]:
    """A VLM agent folder (``RUN/model``) on ``seeds`` (held-out starts of its run's
    ``env.eval_kwargs``), greedy, ``n_envs`` episodes per ``generate``: each episode's
    measures, its share of parsed answers and why the others were refused."""
    from pixelrl.embodied import vlm_train as vt
    from pixelrl.embodied.vlm_agent import load_agent
    from pixelrl.embodied.vlm_episodes import play

    run = Path(folder).parent
    cfg = vt.config_for(run / "config.yaml", ["train.progress=false"])
    envs = [vt.make_env(cfg, "eval") for _ in range(n_envs)]
    nav = envs[0].unwrapped.cfg
    agent = load_agent(str(folder), nav.forward_step, nav.turn_degrees)
    episodes = []
    for s in range(0, len(seeds), len(envs)):
        chunk = seeds[s : s + len(envs)]
        episodes += play(agent.policy, agent.spec, envs[: len(chunk)], chunk, sample=False)
        print(f"\r{run.name}: {len(episodes)}/{len(seeds)} episodes", end="", flush=True)
    print()
    for env in envs:
        env.close()
    return [
        {**e.measures, "parsed": np.mean([t.completion.parsed for t in e.turns]),
         "refused": [str(t.completion.error)[:60] for t in e.turns if not t.completion.parsed]}
        for e in episodes
    ]  # fmt: skip


def measures(rows: list[dict]) -> dict[str, float]:
    """Success with its Wilson 95% interval, SPL with its t interval, the parse rate, n."""
    from scipy import stats

    from pixelrl.stats import wilson_interval

    s = np.array([r["success"] for r in rows])
    spl = np.array([r["spl"] for r in rows])
    lo, hi = wilson_interval(int(s.sum()), len(s))
    half = stats.t.ppf(0.975, len(spl) - 1) * spl.std(ddof=1) / math.sqrt(len(spl))
    return dict(success=float(s.mean()), ci_low=lo, ci_high=hi, spl=float(spl.mean()),
                    spl_low=max(0.0, spl.mean() - half), spl_high=min(1.0, spl.mean() + half),
                    parsed=float(np.mean([r["parsed"] for r in rows])), n=len(rows))  # fmt: skip


def paired(base: list[dict], rows: list[dict]) -> dict[str, float]:
    """``rows`` against ``base`` on the same episodes: the Success difference with McNemar's
    exact test (episodes one solves and the other does not), the SPL difference with a paired
    t test."""
    from scipy import stats

    a = np.array([r["success"] for r in base], bool)
    b = np.array([r["success"] for r in rows], bool)
    only_b, only_a = int((b & ~a).sum()), int((a & ~b).sum())
    p_success = stats.binomtest(only_b, only_b + only_a, 0.5).pvalue if only_a + only_b else 1.0
    d_spl = np.array([r["spl"] for r in rows]) - np.array([r["spl"] for r in base])
    p_spl = stats.ttest_1samp(d_spl, 0.0).pvalue if d_spl.std() > 0 else 1.0
    return {"d_success": float(b.mean() - a.mean()), "only_b": only_b, "only_a": only_a,
            "p_success": float(p_success), "d_spl": float(d_spl.mean()), "p_spl": float(p_spl)}  # fmt: skip


def labels(agents: list[str]) -> list[str]:
    """A short name per agent for the table: its run folder (``RUN`` of ``RUN/model``, a
    checkpoint run's last folder), with as many parent folders as it takes to tell agents apart
    (``seed1/grpo`` and ``seed2/grpo``, not two rows called ``grpo``)."""

    def parts(agent: str) -> list[str]:
        if agent in ("random", "forward-only"):
            return [agent]
        checkpoint = agent.startswith("checkpoint=")
        path = Path(agent.split("=", 1)[1]) if checkpoint else Path(agent).parent
        return list(reversed(path.parts))

    def prefix(agent: str) -> str:
        return "checkpoint=" if agent.startswith("checkpoint=") else ""

    depth = 1
    while True:
        names = [prefix(a) + "/".join(reversed(parts(a)[:depth])) for a in agents]
        if len(set(names)) == len(names) or depth > max(len(parts(a)) for a in agents):
            return names
        depth += 1


def play_baseline(name: str, env, seeds: list[int]) -> list[dict]:
    """``random``, ``forward-only`` or ``checkpoint=PATH`` on ``seeds`` in ``env``: the measures
    of each episode (``parsed`` is 1: these agents answer with action ids)."""
    from pixelrl.embodied.agents import ForwardOnlyAgent, PolicyAgent, RandomAgent
    from pixelrl.embodied.vlm_episodes import MEASURES

    if name == "random":
        agent = RandomAgent(seed=0)
    elif name == "forward-only":
        agent = ForwardOnlyAgent()
    else:
        path = name.split("=", 1)[1]
        agent = PolicyAgent.from_checkpoint(path, env.observation_space, env.action_space, seed=0)
    rows = []
    for k, seed in enumerate(seeds):
        agent.reset()
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs))
            done = terminated or truncated
        rows.append({**{m: float(info[m]) for m in MEASURES}, "parsed": 1.0})
        print(f"\r{name}: {k + 1}/{len(seeds)} episodes", end="", flush=True)
    print()
    return rows


if __name__ == "__main__":
    main()
