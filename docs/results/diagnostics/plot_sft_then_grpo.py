"""One curve for SFT then GRPO: held-out accuracy (the runs' own evaluations, 95% CI) against
the CPU seconds of both runs together, the switch marked.

    python docs/results/diagnostics/plot_sft_then_grpo.py SFT_RUN GRPO_RUN OUT.png [TITLE]
"""

from __future__ import annotations

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(run: str) -> list[dict[str, float]]:
    with open(f"{run}/eval.csv") as f:
        return [
            {k: float(v) for k, v in r.items() if v not in ("", None)} for r in csv.DictReader(f)
        ]


def main(sft: str, grpo: str, out: str, title: str = "SFT, then grounding GRPO") -> None:
    a, b = rows(sft), rows(grpo)
    offset = a[-1]["cpu_s"]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for part, shift, label in ((a, 0.0, "SFT"), (b, offset, "GRPO")):
        x = [r["cpu_s"] + shift for r in part]
        y = [r["accuracy"] for r in part]
        err = [
            [r["accuracy"] - r["ci_low"] for r in part],
            [r["ci_high"] - r["accuracy"] for r in part],
        ]
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, label=label)
    ax.axvline(offset, color="gray", ls="--", lw=1)
    ax.axvline(1200, color="red", ls=":", lw=1, label="20 CPU minutes")
    ax.set_xlabel("CPU seconds (SFT + GRPO, evaluations included)")
    ax.set_ylabel(f"held-out click accuracy (n={int(a[-1]['n'])})")
    ax.set_ylim(0, max(0.5, max(r["ci_high"] for r in a + b) + 0.05))
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main(*sys.argv[1:5])
