"""Per-task MiniWoB++ success of a trained policy next to the published human and agent numbers.

    python bench/miniwob_table.py runs/miniwob --episodes 100 --csv docs/results/miniwob_table.csv
    python bench/miniwob_table.py oracle --episodes 20      # the scripted oracle (a sanity row)
    python bench/miniwob_table.py oracle --tasks wide       # the 32 tasks of miniwob_wide.yaml
    python bench/miniwob_table.py oracle --tasks table      # every oracle task with published figures
    python bench/miniwob_table.py oracle --tasks gestures   # the oracle's drag/scroll/slider tasks
    python bench/miniwob_table.py --merge a.json b.json      # one table from runs split by task
                                                             # or by --seed (pooled per task)
    python bench/miniwob_table.py --merge a.json b.json --markdown \
        --beside "no memory=docs/results/miniwob_wide_table.csv"  # the docs' table, an older run beside
    python bench/miniwob_table.py --merge a.json b.json --paired c.json d.json  # episode by episode

POLICY is a ``gui/miniwob`` (or ``gui/ppo``) checkpoint, run folder or model folder, or
``oracle``. ``--tasks`` names the tasks (``twelve``: the ``gui/miniwob`` recipe's, ``wide``: all
of :data:`PUBLISHED`, the 32 of ``miniwob_wide.yaml``, ``table``: every task of :data:`TABLE`,
those and issue 54's further oracle tasks, ``gestures``: the oracle's drag, scroll and slider
tasks); by default a ``gui/miniwob`` run's own ``env.tasks``, else the twelve.
Each task plays ``--episodes`` held-out (odd) seeds through
:func:`pixelrl.gui_agent.evaluate.evaluate_success`, the same path as ``pixelrl eval``; the table
gives each task's success with its Wilson 95% interval, the published numbers, and the means over
the tasks that have them.

Published numbers: Human, CC-Net (SL+RL: Humphreys et al., "A data-driven approach for learning
to control computers", ICML 2022) and Pix2Act (Shaw et al., "From Pixels to UI Actions",
NeurIPS 2023), as tabulated in Zheng et al., "Synapse" (arXiv:2306.07863), Appendix A, Table 3,
p. 14 of the NeurIPS 2023 FMDM workshop version, whose caption says its human data come from
CC-Net. Pix2Act did not evaluate the tasks marked None (its task list,
google-deepmind/pix2act ``pix2act/tasks/miniwob/eval/tasks.txt``). The table was read from the
PDF that the Synapse authors publish (github.com/ltzheng/Synapse, branch gh-pages, commit
2ca60bc, ``static/Synapse.pdf``); its 104 rows reproduce its printed averages (Pix2Act 0.962 over
59 tasks; human and CC-Net 0.935 over 104).
"""

from __future__ import annotations

import argparse
import csv
import json
import time

import numpy as np

from pixelrl.envs.web.oracle import GESTURE_TASKS, SLIDER_TASKS

# task: (human, CC-Net SL+RL, Pix2Act)
PUBLISHED: dict[str, tuple[float, float, float | None]] = {
    "click-button": (0.98, 1.00, 0.99),
    "click-checkboxes": (0.97, 0.98, 1.00),
    "click-dialog": (1.00, 1.00, 1.00),
    "click-link": (0.99, 0.99, 0.98),
    "click-tab": (0.99, 1.00, 1.00),
    "enter-text": (0.98, 1.00, None),
    "focus-text": (1.00, 1.00, None),
    "choose-list": (0.98, 0.99, None),
    "click-option": (0.99, 0.99, 1.00),
    "click-widget": (0.83, 1.00, 1.00),
    "enter-password": (0.96, 1.00, None),
    "login-user": (0.96, 1.00, None),
    # issue 41's wide set: the further tasks that the oracle (pixelrl.envs.web.oracle) plays
    "click-test": (1.00, 1.00, 1.00),
    "click-test-2": (0.99, 1.00, 1.00),
    "click-test-transfer": (0.99, 1.00, 1.00),
    "unicode-test": (0.99, 1.00, 1.00),
    "click-button-sequence": (0.94, 1.00, 0.99),
    "click-dialog-2": (0.99, 1.00, 1.00),
    "focus-text-2": (0.99, 1.00, None),
    "enter-text-2": (0.91, 0.98, 0.97),
    "enter-text-dynamic": (0.97, 1.00, None),
    "enter-date": (0.97, 1.00, 1.00),
    "enter-time": (0.98, 0.97, 1.00),
    "click-checkboxes-large": (0.87, 0.71, 0.99),
    "click-checkboxes-transfer": (0.98, 0.99, 1.00),
    "grid-coordinate": (0.87, 1.00, 0.92),
    "identify-shape": (0.98, 1.00, 1.00),
    "click-collapsible": (0.99, 1.00, 0.94),
    "click-collapsible-2": (0.97, 0.98, 0.97),
    "click-tab-2": (0.97, 0.98, 0.98),
    "click-tab-2-hard": (0.96, 0.98, 0.97),
    "navigate-tree": (0.98, 0.99, 0.99),
}
# issue 54: the further tasks of the same table that the oracle plays (TABLE_TASKS in
# pixelrl.envs.web.oracle), read from the same PDF (its pp. 14-15); PUBLISHED stays the wide set
MORE_PUBLISHED: dict[str, tuple[float, float, float | None]] = {
    "click-tab-2-easy": (0.99, 0.99, 0.99),
    "click-tab-2-medium": (0.97, 0.99, 1.00),
    "read-table": (0.97, 0.97, None),
    "read-table-2": (0.95, 0.94, None),
    "simple-arithmetic": (0.96, 0.86, 1.00),
    "simple-algebra": (0.86, 0.75, 1.00),
    "visual-addition": (0.97, 0.99, 1.00),
    "find-word": (0.96, 0.88, None),
    "text-transform": (0.86, 0.60, 0.92),
    "copy-paste": (0.94, 0.79, None),
    "copy-paste-2": (0.94, 0.63, None),
    "use-spinner": (0.98, 1.00, None),
    "multi-layouts": (0.95, 1.00, None),
    "multi-orderings": (0.96, 1.00, None),
    "click-color": (0.97, 1.00, 0.99),
    "click-shades": (0.91, 1.00, 0.99),
    "click-shape": (0.88, 0.95, 0.94),
    "count-shape": (0.82, 0.85, 0.70),
    "count-sides": (0.98, 1.00, 1.00),
    "guess-number": (0.99, 1.00, None),
    "login-user-popup": (0.94, 1.00, None),
    "search-engine": (0.97, 1.00, None),
    "use-autocomplete": (0.98, 1.00, 0.99),
    "email-inbox": (0.96, 1.00, None),
    "email-inbox-delete": (0.99, 1.00, 1.00),
    "email-inbox-forward": (0.96, 1.00, None),
    "email-inbox-forward-nl": (0.91, 1.00, None),
    "email-inbox-forward-nl-turk": (0.88, 1.00, None),
    "email-inbox-important": (0.99, 1.00, 1.00),
    "email-inbox-nl-turk": (0.93, 1.00, None),
    "email-inbox-noscroll": (0.96, 1.00, None),
    "email-inbox-reply": (0.91, 1.00, None),
    "email-inbox-star-reply": (0.95, 1.00, None),
    "social-media": (0.96, 0.90, None),
    "social-media-all": (0.89, 0.75, None),
    "social-media-some": (0.91, 0.85, None),
    "terminal": (0.88, -0.01, None),
    "choose-date": (0.97, 0.97, 0.79),
    "choose-date-easy": (0.99, 0.99, None),
    "choose-date-medium": (0.98, 0.99, None),
    "click-menu": (0.97, 0.94, None),
    "click-menu-2": (0.98, 0.83, None),
    "click-pie": (0.98, 0.97, 0.99),
}
TABLE = {**PUBLISHED, **MORE_PUBLISHED}  # every task the oracle plays that has published figures
TWELVE = list(PUBLISHED)[:12]  # the gui/miniwob recipe's tasks (issue 26)
TASK_SETS = {"twelve": TWELVE, "wide": list(PUBLISHED), "table": list(TABLE),
             "gestures": [*GESTURE_TASKS, *SLIDER_TASKS]}  # fmt: skip


class OracleAgent:
    """The MiniWoB++ oracle behind ``act(screenshot, instruction)`` (it reads the page's a11y)."""

    env = None

    def reset(self) -> None:
        pass

    def on_reset(self, env, info: dict) -> None:
        self.env = env

    def act(self, screenshot, instruction):
        from pixelrl.envs.gui_action import Action
        from pixelrl.envs.web.oracle import OracleError

        try:
            return self.env.unwrapped.expert_action()
        except OracleError:  # a page the oracle cannot read: that episode fails, the table goes on
            return Action.fail()


def _fmt(v: float | None) -> str:
    return "   -" if v is None else f"{v:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("policy", nargs="?", help="checkpoint / run / model folder, or 'oracle'")
    ap.add_argument("--tasks", nargs="+", help="task names, 'twelve', 'wide' or 'table' (default: the "
                    "run's own env.tasks, else twelve)")  # fmt: skip
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", help="write the table here")
    ap.add_argument("--json", help="write the rows (with the run's settings) here")
    ap.add_argument("--merge", nargs="+", help="print one table from these --json (or --csv) "
                    "files instead")  # fmt: skip
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown (docs)")
    ap.add_argument("--beside", action="append", default=[], metavar="LABEL=CSV",
                    help="with --markdown: another run's --csv table as a column (repeatable)")  # fmt: skip
    ap.add_argument("--paired", nargs="+", metavar="JSON",
                    help="compare episode by episode with another run's --json table(s)")  # fmt: skip
    args = ap.parse_args()
    try:
        beside = dict(read_beside(item) for item in args.beside)
        merged = [r for path in args.merge or () for r in read_rows(path)]
        other = pool([r for path in args.paired or () for r in read_rows(path)])
    except ValueError as e:
        ap.error(str(e))
    if beside and not args.markdown:
        ap.error("--beside needs --markdown")
    if args.merge:
        rows = pool(merged)
    elif args.policy:
        try:
            tasks = task_list(args.tasks, None) if args.tasks else None
        except ValueError as e:
            ap.error(str(e))
        rows = evaluate_tasks(args.policy, tasks, args.episodes, args.seed)
    else:
        ap.error("give POLICY, or --merge JSON...")
    print(markdown_table(rows, beside) if args.markdown else "", end="")
    if not args.markdown:
        print_table(rows)
    if args.paired:
        try:
            print("\n" + paired_table(rows, other), end="")
        except (TypeError, ValueError) as e:  # no episodes in common, or malformed ones
            ap.error(f"--paired: {e}" if isinstance(e, TypeError) else str(e))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            fields = [k for k in rows[0] if k != "outcomes"]  # the episodes: --json only
            writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"policy": args.policy, "episodes": args.episodes, "seed": args.seed,
                       "rows": rows}, f, indent=2)  # fmt: skip


def read_rows(path: str) -> list[dict]:
    """The rows of a ``--json`` or ``--csv`` file of this bench; anything else a ValueError."""
    try:
        if not path.endswith(".csv"):
            with open(path) as f:
                return json.load(f)["rows"]
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        for r in rows:  # csv keeps text: the numbers back, an empty published cell as None
            r["n"] = int(r["n"])
            for key in ("success", "ci_low", "ci_high", "seconds"):
                r[key] = float(r[key])
            for key in ("human", "ccnet", "pix2act"):
                r[key] = float(r[key]) if r[key] else None
        return rows
    except (OSError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a --json or --csv table of this bench ({e!r})") from None


def read_beside(item: str) -> tuple[str, dict[str, float]]:
    """``LABEL=CSV`` (a ``--csv`` or ``--json`` table of this bench) as (label, {task: success})."""
    label, sep, path = item.partition("=")
    if not sep or not label or not path:
        raise ValueError(f"--beside takes LABEL=CSV (a --csv table of this bench), got {item!r}")
    return label, {r["task"]: r["success"] for r in read_rows(path)}


def markdown_table(rows: list[dict], beside: dict[str, dict[str, float]] | None = None) -> str:
    """The table as markdown: per task our success and Wilson 95% interval, the ``beside``
    runs' success, the published columns; then the means over every task with published
    figures (with the pooled episodes' interval), the twelve of ``gui/miniwob``, the wide set's
    further tasks and the tasks Pix2Act reports."""
    from pixelrl.stats import wilson_interval

    beside = beside or {}
    head = ["task", "ours [95% CI]", *beside, "human", "CC-Net", "Pix2Act"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["task"], f"{r['success']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]",
                 *(_fmt(b.get(r["task"])).strip() for b in beside.values()),
                 *(_fmt(r[k]).strip() for k in ("human", "ccnet", "pix2act"))]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    known = [r for r in rows if r["human"] is not None]
    further = [r for r in known if r["task"] in PUBLISHED and r["task"] not in TWELVE]
    groups = [
        ("{} tasks", known),
        ("the {} of `gui/miniwob`", [r for r in known if r["task"] in TWELVE]),
        ("the {} further tasks of the wide set", further),
        ("the {} Pix2Act tasks", [r for r in known if r["pix2act"] is not None]),
    ]
    for name, group in groups:
        if not group:
            continue
        wins = sum(round(r["success"] * r["n"]) for r in group)
        n = sum(r["n"] for r in group)
        low, high = wilson_interval(wins, n)
        ours = f"**{wins / n:.3f}** [{low:.3f}, {high:.3f}]"
        cells = ["mean, " + name.format(len(group)), ours]
        for b in beside.values():
            known_b = [b[r["task"]] for r in group if r["task"] in b]
            cells.append(
                f"{sum(known_b) / len(known_b):.3f}" if len(known_b) == len(group) else "-"
            )
        for key in ("human", "ccnet", "pix2act"):
            values = [r[key] for r in group if r[key] is not None]
            cells.append(f"{sum(values) / len(values):.3f}" if len(values) == len(group) else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paired_table(rows: list[dict], other: list[dict]) -> str:
    """Markdown: per task, this run against ``other`` (rows of another run of this bench) on the
    episodes both played (the same held-out seeds): each run's success, the episodes only one
    solved and McNemar's exact p; then the same over every task's episodes pooled."""
    from pixelrl.stats import mcnemar_exact

    theirs = {r["task"]: dict(map(tuple, r.get("outcomes", []))) for r in other}
    lines = ["| task | episodes | ours | theirs | only ours | only theirs | McNemar p |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    total = [0, 0, 0, 0]  # episodes, ours, only ours, only theirs
    for r in rows:
        mine = dict(map(tuple, r.get("outcomes", [])))
        seeds = [seed for seed in mine if seed in theirs.get(r["task"], {})]
        if not seeds:
            continue
        a = np.array([mine[seed] for seed in seeds], bool)
        b = np.array([theirs[r["task"]][seed] for seed in seeds], bool)
        only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
        lines.append(f"| {r['task']} | {len(seeds)} | {a.mean():.2f} | {b.mean():.2f} | {only_a} | "
                     f"{only_b} | {mcnemar_exact(only_a, only_b):.3g} |")  # fmt: skip
        total = [total[0] + len(seeds), total[1] + int(a.sum()), total[2] + only_a,
                 total[3] + only_b]  # fmt: skip
    if not total[0]:
        raise ValueError("--paired: no task has episodes on the same seeds in both runs (tables "
                         "written before the episodes were kept have none)")  # fmt: skip
    n, ours, only_a, only_b = total
    theirs_wins = ours - only_a + only_b
    lines.append(f"| **all** | {n} | **{ours / n:.3f}** | {theirs_wins / n:.3f} | {only_a} | "
                 f"{only_b} | {mcnemar_exact(only_a, only_b):.3g} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def pool(rows: list[dict]) -> list[dict]:
    """One row per task (runs over other seeds pooled: successes summed, interval recomputed),
    in the published table's order."""
    from pixelrl.stats import wilson_interval

    by_task: dict[str, dict] = {}
    for r in rows:
        wins = round(r["success"] * r["n"])
        if r["task"] in by_task:
            b = by_task[r["task"]]
            b["wins"], b["n"], b["seconds"] = (
                b["wins"] + wins,
                b["n"] + r["n"],
                b["seconds"] + r["seconds"],
            )
            if "outcomes" in b and "outcomes" in r:  # both halves kept their episodes
                b["outcomes"] = b["outcomes"] + r["outcomes"]
            else:
                b.pop("outcomes", None)
        else:
            by_task[r["task"]] = {**r, "wins": wins}
    for b in by_task.values():
        b["success"] = b["wins"] / b["n"]
        b["ci_low"], b["ci_high"] = wilson_interval(b.pop("wins"), b["n"])
    order = {t: i for i, t in enumerate(TABLE)}
    return sorted(by_task.values(), key=lambda r: order.get(r["task"], len(order)))


def task_list(names: list[str] | None, agent) -> list[str]:
    """``--tasks`` as task names: a set's name expanded; by default the agent's own tasks. A
    name that is no MiniWoB++ task is a ValueError saying so."""
    if not names:
        return list(getattr(agent, "tasks", None) or TWELVE)
    from pixelrl.envs import task_family
    from pixelrl.envs.registry import unknown_env_message

    tasks = [t for name in names for t in TASK_SETS.get(name, [name])]
    for task in tasks:
        problem = unknown_env_message(task_family("miniwob").env_id(task))
        if problem:
            raise ValueError(f"--tasks: {task!r} (or a set: {', '.join(TASK_SETS)}): {problem}")
    return tasks


def evaluate_tasks(policy: str, tasks: list[str] | None, episodes: int, seed: int) -> list[dict]:
    """One row per task: success, its Wilson 95% interval, the published numbers, seconds."""
    from pixelrl.envs import task_family
    from pixelrl.envs.families import seeds_of
    from pixelrl.gui_agent import evaluate

    if policy == "oracle":
        agent = OracleAgent()
    else:
        from pixelrl.gui_agent.agents import load_agent

        agent = load_agent(policy)
    tasks = task_list(tasks, agent)
    rows = []
    for task in tasks:
        tic = time.perf_counter()
        env_id = task_family("miniwob").env_id(task)
        # evaluate_success's seeds and episodes, each episode's outcome kept (--paired)
        seeds = seeds_of(env_id).seeds("eval", episodes, np.random.default_rng(seed))
        results = evaluate.play_episodes(agent, env_id, seeds, progress=False)
        result = evaluate.success_rows(results, env_id)[0]
        human, ccnet, pix2act = TABLE.get(task, (None, None, None))
        rows.append({"task": task, "n": result["n"], "success": result["success"],
                     "ci_low": result["ci_low"], "ci_high": result["ci_high"],
                     "human": human, "ccnet": ccnet, "pix2act": pix2act,
                     "seconds": time.perf_counter() - tic,
                     "outcomes": [[int(s), int(r["success"])] for s, r in zip(seeds, results)]})  # fmt: skip
        r = rows[-1]
        print(f"{task:<18}{r['success']:>7.3f}  [{r['ci_low']:.2f}, {r['ci_high']:.2f}]  "
              f"({r['seconds']:.0f} s)", flush=True)  # fmt: skip
    return rows


def print_table(rows: list[dict]) -> None:
    """Our success per task with its interval, the published numbers, and the means."""
    print(f"\n{'task':<18}{'ours':>7}{'95% CI':>15}{'human':>8}{'CC-Net':>8}{'Pix2Act':>9}")
    for r in rows:
        ci = f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        print(f"{r['task']:<18}{r['success']:>7.3f}{ci:>15}{_fmt(r['human']):>8}"
              f"{_fmt(r['ccnet']):>8}{_fmt(r['pix2act']):>9}")  # fmt: skip

    def mean(key: str, rs: list[dict]) -> float:
        return sum(r[key] for r in rs) / len(rs)

    known = [r for r in rows if r["human"] is not None]
    if known:
        print(f"{'mean, ' + str(len(known)) + ' tasks':<18}{mean('success', known):>7.3f}"
              f"{'':>15}{mean('human', known):>8.3f}{mean('ccnet', known):>8.3f}")  # fmt: skip
    with_p = [r for r in known if r["pix2act"] is not None]
    if with_p:
        print(f"{'mean, ' + str(len(with_p)) + ' Pix2Act':<18}{mean('success', with_p):>7.3f}"
              f"{'':>15}{mean('human', with_p):>8.3f}{mean('ccnet', with_p):>8.3f}"
              f"{mean('pix2act', with_p):>9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
