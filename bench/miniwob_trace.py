"""What a MiniWoB++ pointer policy does, step by step, beside what the oracle would do (issue 54).

For each held-out episode (the seeds ``bench/miniwob_table.py`` plays with the same ``--seed``,
MiniWoB's default env), each step prints the policy's action, the oracle's next action on the
same page and the box it aims at, whether the policy's click landed in that box, and the reward.
``--failed`` plays on until it has ``--episodes`` failed episodes (at most ``--max-episodes``),
the ones worth reading::

    python bench/miniwob_trace.py runs/wide --task click-checkboxes-large --episodes 4 --failed
    python bench/miniwob_trace.py runs/wide --task enter-date click-tab-2 --episodes 2

The oracle only watches: it plans from the page the policy left (tasks it replans) or hands out
its plan's next step (the others), so once the policy has strayed its "target" is the plan's,
not necessarily the page's. Where the plan's steps may come in any order (the boxes to tick), a
click in any box the plan still ticks counts as ``in``. The last lines give each task's successes and the steps' kinds.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np


def describe(action) -> str:
    """One action as a short text: ``click (62, 118)``, ``type 'Kasie'``, ``key enter``."""
    if action is None:
        return "-"
    if action.x is not None:
        return f"{action.kind} ({action.x}, {action.y})"
    if action.kind == "type":
        return f"type {action.text!r}"
    if action.keys:
        return f"{action.kind} {'+'.join(action.keys)}"
    return action.kind


def landed(action, box: list[int] | None, others: tuple[list[int], ...] = ()) -> str:
    """``in`` / ``out`` when a pointer action meets a target box (or one of ``others``, the boxes
    as right as it: the other boxes the plan still ticks), else empty."""
    if action is None or action.x is None or box is None or len(box) != 4:
        return ""  # no box, or the oracle's aim is not one box (printed as it is)
    inside = any(x0 <= action.x <= x1 and y0 <= action.y <= y1 for x0, y0, x1, y1 in (box, *others))
    return "in" if inside else "out"


class Tracer:
    """An agent that acts as ``agent`` does and notes, each step, the oracle's plan for the page."""

    def __init__(self, agent) -> None:
        self.agent = agent
        self.env = None
        self.steps: list[dict] = []

    def reset(self) -> None:
        self.agent.reset()
        self.steps = []

    def on_reset(self, env, info: dict) -> None:
        self.env = env
        if hasattr(self.agent, "on_reset"):
            self.agent.on_reset(env, info)

    def act(self, screenshot: np.ndarray, instruction: str):
        from pixelrl.envs.web.oracle import OracleError

        action = self.agent.act(screenshot, instruction)
        web = self.env.unwrapped
        others: tuple[list[int], ...] = ()
        try:  # asked after the policy, so the oracle plans from the page the policy acts on
            expert, box = web.expert_action(), web.expert_target_bbox
            others = web.expert_alternative_bboxes
        except OracleError as e:  # a page the oracle cannot read (the policy broke it)
            expert, box = None, f"oracle: {e}"
        self.steps.append({"action": action, "expert": expert, "box": box, "others": others,
                           "instruction": instruction})  # fmt: skip
        return action

    def on_step(self, obs, action, reward: float, info: dict, next_obs) -> None:
        """:func:`~pixelrl.gui_agent.evaluate.run_episode`'s hook: the step's reward."""
        self.steps[-1]["reward"] = reward


def trace_task(agent, task: str, args) -> tuple[int, int, Counter]:
    """Play ``task``'s held-out seeds, print the chosen episodes' steps; (successes, played, kinds)."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs import task_family
    from pixelrl.envs.families import seeds_of
    from pixelrl.gui_agent.evaluate import run_episode

    env_id = task_family("miniwob").env_id(task)
    budget = args.max_episodes if args.failed else args.episodes
    seeds = seeds_of(env_id).seeds("eval", budget, np.random.default_rng(args.seed))
    tracer, env = Tracer(agent), gym.make(env_id)
    wins = shown = played = 0
    kinds: Counter = Counter()
    try:
        for seed in seeds:
            result = run_episode(env, tracer, seed, tracer.on_step)
            played += 1
            wins += result["success"]
            kinds.update(s["action"].kind for s in tracer.steps)
            if args.failed and result["success"]:
                continue
            shown += 1
            print(f"\n{task} seed {seed}: {'success' if result['success'] else 'FAILED'}, "
                  f"return {result['return']:.2f}, {result['length']} steps")  # fmt: skip
            print(f"  instruction: {tracer.steps[0]['instruction']}")
            for n, step in enumerate(tracer.steps):
                box = step["box"]
                aim = f"box {box}" if isinstance(box, list) else (box or "")
                print(f"  {n:>2} policy {describe(step['action']):<26} "
                      f"{landed(step['action'], box, step['others']):<4}oracle {describe(step['expert']):<26} "
                      f"{aim:<24} r {step['reward']:+.2f}")  # fmt: skip
            if shown >= args.episodes:
                break
    finally:
        env.close()
    return wins, played, kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("policy", help="a gui/miniwob checkpoint or run folder")
    ap.add_argument("--task", nargs="+", required=True, help="MiniWoB++ task names")
    ap.add_argument("--episodes", type=int, default=4, help="episodes to print a task")
    ap.add_argument("--seed", type=int, default=0, help="as bench/miniwob_table.py --seed")
    ap.add_argument("--failed", action="store_true", help="print failed episodes only")
    ap.add_argument("--max-episodes", type=int, default=50, help="with --failed: play at most")
    args = ap.parse_args()
    if args.episodes < 1 or args.max_episodes < 1:
        ap.error("--episodes and --max-episodes must be >= 1")
    import torch

    from pixelrl.gui_agent.agents import load_agent

    torch.set_num_threads(1)
    agent = load_agent(args.policy)
    summary = []
    for task in args.task:
        wins, played, kinds = trace_task(agent, task, args)
        summary.append((task, wins, played, kinds))
    print(f"\n{'task':<26}{'success':>10}  actions taken")
    for task, wins, played, kinds in summary:
        taken = ", ".join(f"{k} {n}" for k, n in kinds.most_common())
        print(f"{task:<26}{f'{wins}/{played}':>10}  {taken}")


if __name__ == "__main__":
    main()
