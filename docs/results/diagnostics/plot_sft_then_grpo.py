"""SFT then GRPO, one curve per run pair: held-out accuracy (the runs' own evaluations, 95% CI)
against the CPU seconds of both runs together, the switch to GRPO marked on each.

    python docs/results/diagnostics/plot_sft_then_grpo.py OUT.png SFT_RUN GRPO_RUN [SFT_RUN GRPO_RUN ...]
        [--title TITLE] [--labels seed1,seed2,...]
"""

from __future__ import annotations

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(run: str) -> list[dict[str, float]]:
    with open(f"{run}/eval.csv") as f:
        return [
            {k: float(v) for k, v in r.items() if v not in ("", None)} for r in csv.DictReader(f)
        ]


def main(out: str, runs: list[str], title: str, labels: list[str]) -> None:
    if not runs or len(runs) % 2:
        raise SystemExit("give SFT_RUN GRPO_RUN pairs")
    pairs = list(zip(runs[::2], runs[1::2]))
    labels = labels or [f"run {i + 1}" for i in range(len(pairs))]
    fig, ax = plt.subplots(figsize=(7.5, 4))
    top = 0.5
    for (sft, grpo), label, color in zip(pairs, labels, plt.cm.tab10.colors):
        a, b = rows(sft), rows(grpo)
        offset = a[-1]["cpu_s"]
        part = a + [dict(r, cpu_s=r["cpu_s"] + offset) for r in b[1:]]  # GRPO's step 0 = SFT's end
        x = [r["cpu_s"] for r in part]
        y = [r["accuracy"] for r in part]
        err = [
            [r["accuracy"] - r["ci_low"] for r in part],
            [r["ci_high"] - r["accuracy"] for r in part],
        ]
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=2, color=color, alpha=0.85, label=label)
        ax.axvline(offset, color=color, ls="--", lw=0.8, alpha=0.6)
        top = max(top, max(r["ci_high"] for r in part) + 0.05)
    ax.axvline(1200, color="red", ls=":", lw=1, label="20 CPU minutes")
    ax.set_xlabel("CPU seconds (SFT + GRPO, evaluations included; dashed: GRPO starts)")
    ax.set_ylabel(f"held-out click accuracy (n={int(rows(pairs[0][0])[-1]['n'])})")
    ax.set_ylim(0, top)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("runs", nargs="+")
    p.add_argument("--title", default="SFT, then grounding GRPO")
    p.add_argument("--labels", default="")
    a = p.parse_args()
    main(a.out, a.runs, a.title, [s for s in a.labels.split(",") if s])
