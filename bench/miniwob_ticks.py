"""Which boxes a MiniWoB++ pointer policy ticks, read from the page, and where its click mass
lies once every named box is ticked (issue 54's click-checkboxes-large).

``bench/miniwob_trace.py`` compares each step with the oracle's plan, which stops meaning much
once the policy has strayed; here the page itself says what is ticked (the checkboxes' DOM
state, read for this diagnosis only: the policy and the oracle see pixels and the a11y tree).
For each held-out episode (``bench/miniwob_table.py``'s seeds for the same ``--seed``) it prints
the boxes in the order they were toggled (``+name`` ticked, ``-name`` unticked, ``*`` a box the
instruction does not name) and, at the first step where every named box is ticked (the state
where the oracle clicks Submit), the policy's click mass on the Submit button and whether its
greedy click landed there::

    python bench/miniwob_ticks.py runs/wide --task click-checkboxes-large --episodes 30

The last lines count the episodes that ticked a box too many, missed one, and the mean Submit
mass in the "all ticked" state.
"""

from __future__ import annotations

import argparse
import re

import numpy as np

CHECKBOXES = """return [Array.from(document.querySelectorAll('#area input[type=checkbox]')).map(
  c => [c.parentElement.textContent.trim(), c.checked]),
  (b => [b.left, b.top, b.right, b.bottom])(document.querySelector('#subbtn').getBoundingClientRect())];"""
NAMED = re.compile(r"Select (.*) and click Submit")
TASKS = ("click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer")


def named_boxes(instruction: str) -> list[str]:
    """The labels an instruction asks to tick (``Select nothing and click Submit.``: none)."""
    match = NAMED.search(instruction)
    if match is None:
        raise SystemExit(f"not a checkbox instruction: {instruction!r}")
    names = [name.strip() for name in match.group(1).split(",")]
    return [] if names == ["nothing"] else names


def mass_in(heat: np.ndarray, box, cell: int) -> float:
    """P(click in ``box``) (screen pixels, x0 y0 x1 y1) by the cells whose centre lies in it."""
    rows, cols = heat.shape
    ys, xs = (np.arange(rows)[:, None] + 0.5) * cell, (np.arange(cols)[None, :] + 0.5) * cell
    inside = (xs >= box[0]) & (xs <= box[2]) & (ys >= box[1]) & (ys <= box[3])
    return float(heat[inside].sum())


class Watcher:
    """Acts as ``agent`` does and keeps, each step, its click heatmap and the page's boxes."""

    def __init__(self, agent) -> None:
        self.agent, self.env, self.steps = agent, None, []

    def reset(self) -> None:
        self.agent.reset()
        self.steps = []

    def on_reset(self, env, info: dict) -> None:
        self.env = env
        self.agent.on_reset(env, info)
        self.page = env.unwrapped.driver.execute_script(CHECKBOXES)

    def act(self, screenshot: np.ndarray, instruction: str):
        self.instruction = instruction
        action = self.agent.act(screenshot, instruction)
        self.steps.append({"action": action, "heat": self.agent.last_heatmap[0], "page": self.page})
        return action

    def on_step(self, obs, action, reward: float, info: dict, next_obs) -> None:
        self.page = self.env.unwrapped.driver.execute_script(CHECKBOXES)
        self.steps[-1]["after"] = self.page


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("policy", help="a gui/miniwob checkpoint or run folder")
    ap.add_argument("--task", default="click-checkboxes-large", choices=TASKS,
                    help="a task whose instruction is 'Select ... and click Submit'")  # fmt: skip
    ap.add_argument("--episodes", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0, help="as bench/miniwob_table.py --seed")
    args = ap.parse_args()
    if args.episodes < 1:
        ap.error("--episodes must be >= 1")
    import gymnasium as gym
    import torch

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs import task_family
    from pixelrl.envs.families import seeds_of
    from pixelrl.gui_agent.agents import load_agent
    from pixelrl.gui_agent.evaluate import run_episode

    torch.set_num_threads(1)
    from pixelrl.checkpoint import CheckpointError

    try:
        agent = load_agent(args.policy)
    except CheckpointError as e:
        ap.error(str(e))
    env_id = task_family("miniwob").env_id(args.task)  # an unknown task: one line
    seeds = seeds_of(env_id).seeds("eval", args.episodes, np.random.default_rng(args.seed))
    watcher, env = Watcher(agent), gym.make(env_id)
    wins = extra = missed = 0
    stop_mass, stop_hits = [], []
    try:
        for seed in seeds:
            result = run_episode(env, watcher, seed, watcher.on_step)
            wins += result["success"]
            named = named_boxes(watcher.instruction)
            toggles, stop = [], None
            for step in watcher.steps:
                before, after = dict(step["page"][0]), dict(step["after"][0])
                if stop is None and all(before.get(name) for name in named):
                    submit, action = step["page"][1], step["action"]
                    hit = action.x is not None and (
                        submit[0] <= action.x <= submit[2] and submit[1] <= action.y <= submit[3]
                    )
                    stop = (mass_in(step["heat"], submit, agent.spec.cell), hit)
                for name, ticked in after.items():
                    if before.get(name) != ticked:
                        toggles.append(
                            f"{'+' if ticked else '-'}{name}{'' if name in named else '*'}"
                        )
            final = dict(watcher.steps[-1]["after"][0])
            extra += any(ticked and name not in named for name, ticked in final.items())
            missed += any(not final.get(name) for name in named)
            if stop is not None:
                stop_mass.append(stop[0])
                stop_hits.append(stop[1])
            where = (
                f"Submit mass {stop[0]:.2f}, clicked {'it' if stop[1] else 'elsewhere'}"
                if stop
                else "never all ticked"
            )
            print(f"seed {seed:>10} {'ok ' if result['success'] else 'BAD'} {len(named):>2} named | "
                  f"{' '.join(toggles) or '-'} | {where}", flush=True)  # fmt: skip
    finally:
        env.close()
    n = len(seeds)
    print(
        f"\n{args.task}: success {wins}/{n}; a box too many {extra}/{n}; a named box left {missed}/{n}"
    )
    if stop_mass:
        print(f"every named box ticked in {len(stop_mass)}/{n}: Submit mass mean {np.mean(stop_mass):.2f}"
              f" (median {np.median(stop_mass):.2f}); greedy click on Submit {sum(stop_hits)}/{len(stop_hits)}")  # fmt: skip


if __name__ == "__main__":
    main()
