"""A training run's folder, for the PPO trainer and the text-policy recipes alike.

``Run(cfg)`` creates ``train.output_dir`` (or ``runs/<recipe>-<time>``), writes ``config.yaml``,
keeps the history and evaluation rows, and writes them as tables and one curve:

- PPO (:class:`pixelrl.train.Trainer`): ``history.csv`` (a row an update), ``eval.csv`` and
  ``learning_curve.png`` (each measure over the training window against frames, held-out
  evaluations as points: :meth:`Run.plot_measures`).
- Text recipes (SFT, GRPO; GUI and embodied alike): ``history.csv``, ``eval.csv``, ``val.csv``
  (the validation checks that chose the kept model, when the recipe has a validation set), with
  wall and CPU clocks, and ``learning_curve.png`` (training reward or loss beside the held-out
  measure with its 95% interval: :meth:`Run.plot`).
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, dump_config
from pixelrl.envs.nav.measures import SCORES
from pixelrl.recipes import get_recipe


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    import resource

    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Run:
    """The run folder: config, history rows, evaluation rows, the curve.

    Under ``torchrun`` only rank 0's ``Run`` (``main``) writes; another rank's keeps its rows
    and puts what the adapter records (demonstrations) in a scratch folder of its own."""

    def __init__(self, cfg: Config, main: bool = True, folder: str | Path | None = None) -> None:
        """``folder``: where the run writes (default: ``train.output_dir``, else the folder
        ``train.resume`` names, else :meth:`default_folder`)."""
        out = folder or cfg.train.output_dir or cfg.train.get("resume") or self.default_folder(cfg)
        self.main = main
        self.folder = Path(out)  # the run's folder, on every rank (checkpoints)
        self._scratch: Path | None = None
        if main:
            self.folder.mkdir(parents=True, exist_ok=True)
            dump_config(cfg, self.folder / "config.yaml")
        self.cfg = cfg
        self.history: list[dict[str, float]] = []
        self.evals: list[dict[str, float]] = []
        self.validations: list[dict[str, float]] = []
        self.start_wall, self.start_cpu = time.perf_counter(), cpu_seconds()

    @property
    def dir(self) -> Path:
        """Where this rank writes: the run folder (rank 0), else a scratch folder made when
        first asked for (an adapter recording demonstrations), removed at exit."""
        if self.main:
            return self.folder
        if self._scratch is None:
            import atexit
            import shutil
            import tempfile

            self._scratch = Path(tempfile.mkdtemp(prefix="pixelrl-rank-"))
            atexit.register(shutil.rmtree, self._scratch, ignore_errors=True)
        return self._scratch

    @staticmethod
    def default_folder(cfg: Config) -> str:
        return f"runs/{cfg.recipe.replace('/', '-')}-{time.strftime('%Y%m%d-%H%M%S')}"

    def clock(self) -> dict[str, float]:
        """Wall and CPU seconds since the run began (CPU: this process and its children, so
        the figure holds on a shared machine where wall time is inflated)."""
        return {
            "wall_s": round(time.perf_counter() - self.start_wall, 1),
            "cpu_s": round(cpu_seconds() - self.start_cpu, 1),
        }

    def add_eval(self, step: int, row: dict[str, float]) -> None:
        """Keep an evaluation row (with the clock) and show it above the progress bar."""
        from tqdm import tqdm

        row = {**row, **self.clock()}
        self.evals.append({"step": step, **row})
        if not self.main:
            return
        self.write_tables()  # a run stopped later keeps its rows up to here
        shown = "  ".join(
            f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
        )
        tqdm.write(f"[{self.cfg.recipe}] step {step}: held-out {shown}")

    def add_validation(self, step: int, row: dict[str, float]) -> None:
        """Keep a validation row (training-side scenes not trained on) with the clock."""
        from tqdm import tqdm

        self.validations.append({"step": step, **row, **self.clock()})
        if not self.main:
            return
        shown = "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in row.items())  # fmt: skip
        tqdm.write(f"[{self.cfg.recipe}] step {step}: validation {shown}")

    def write(self, measure: str) -> None:
        """A text recipe's tables and curve (``measure``: the held-out one plotted)."""
        if not self.main:
            return
        self.write_tables()
        self.plot(measure)

    def write_tables(self) -> None:
        """``history.csv``, ``eval.csv`` and ``val.csv``, those with rows (rank 0 only); the
        columns in the order they first appear."""
        if not self.main:
            return
        tables = (("history.csv", self.history), ("eval.csv", self.evals),
                  ("val.csv", self.validations))  # fmt: skip
        for name, rows in tables:
            if rows:
                fields = list(dict.fromkeys(k for r in rows for k in r))
                with open(self.dir / name, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=fields)
                    w.writeheader()
                    w.writerows(rows)

    @contextmanager
    def _curve(self, panels: int, title: str) -> Iterator[Sequence[Any]]:
        """``learning_curve.png``: ``panels`` axes side by side to draw on, then saved."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3.6), squeeze=False)
        try:
            yield axes[0]
            for ax in axes[0]:
                ax.grid(alpha=0.3)
            fig.suptitle(title)
            fig.tight_layout()
            fig.savefig(self.dir / "learning_curve.png", dpi=100)
        finally:
            plt.close(fig)

    def plot_measures(self, frames: int) -> Path | None:
        """The PPO curve: each of success, SPL and return (those the rows have) in the training
        window (``train/<name>`` of the history) and held-out (the evaluations) against frames."""
        if not self.main or not self.history:
            return None
        names = [n for n in (*SCORES, "return") if any(f"train/{n}" in r for r in self.history)]
        with self._curve(max(1, len(names)), f"{self.cfg.recipe}  ({frames:,} frames)") as axes:
            for ax, name in zip(axes, names):
                rows = [r for r in self.history if f"train/{name}" in r]
                ax.plot(
                    [r["frames"] for r in rows],
                    [r[f"train/{name}"] for r in rows],
                    label="train (window)",
                )
                evals = [r for r in self.evals if name in r]
                if evals:
                    ax.plot(
                        [r["frames"] for r in evals],
                        [r[name] for r in evals],
                        "o-",
                        label="eval (held-out)",
                    )
                ax.set_xlabel("frames")
                ax.set_title(name)
                ax.legend()
        return self.dir / "learning_curve.png"

    def plot(self, measure: str) -> Path:
        """The text recipes' curve: training reward or loss against steps beside the held-out
        ``measure`` with its 95% interval."""
        title = f"{self.cfg.recipe}  model={self.cfg.init or self.cfg.model}"
        with self._curve(2, title) as axes:
            train_key = next(
                (k for k in ("reward", "loss") if any(k in r for r in self.history)), None
            )
            if train_key:
                rows = [r for r in self.history if train_key in r]
                steps, values = [r["step"] for r in rows], np.array([r[train_key] for r in rows])
                axes[0].plot(steps, values, alpha=0.4 if len(rows) > 40 else 1.0)
                if len(rows) > 40:  # a running mean: GRPO's per-step reward is noisy
                    window = len(rows) // 20
                    smooth = np.convolve(values, np.ones(window) / window, mode="valid")
                    axes[0].plot(steps[window - 1 :], smooth, label=f"mean of {window} steps")
                    axes[0].legend()
                axes[0].set_title(f"train {train_key}")
                axes[0].set_xlabel("step")
            if self.evals:
                steps = [r["step"] for r in self.evals]
                values = np.array([r[measure] for r in self.evals])
                if all("ci_low" in r for r in self.evals):  # Wilson 95% interval as error bars
                    low = values - np.array([r["ci_low"] for r in self.evals])
                    high = np.array([r["ci_high"] for r in self.evals]) - values
                    axes[1].errorbar(steps, values, yerr=[low, high], fmt="o-", capsize=3)
                else:
                    axes[1].plot(steps, values, "o-")
                axes[1].set_ylim(0, 1)
                last = self.evals[-1]
                axes[1].annotate(f"{values[-1]:.2f} (n={last['n']})", (steps[-1], values[-1]),
                                 textcoords="offset points", xytext=(-40, 8))  # fmt: skip
            n = self.evals[-1]["n"] if self.evals else 0
            axes[1].set_title(f"held-out {measure} (n={n}, 95% CI)")
            clock = self.clock()
            axes[1].set_xlabel(
                f"step   (run: {clock['cpu_s'] / 60:.1f} CPU min, "
                f"{clock['wall_s'] / 60:.1f} wall min)"
            )
        return self.dir / "learning_curve.png"


def recipe_config(
    name: str,
    overrides,
    model: str | None,
    print_config: bool,
    config: str | Path | None,
    config_for: Callable[[str | Path, list[str]], Config],
) -> Config | None:
    """A text-policy recipe's config for ``pixelrl train``: the recipe's file (or the YAML file
    ``config`` that names it) under ``overrides`` and ``--model``. With ``print_config`` it is
    printed and None returned."""
    import yaml

    overrides = list(overrides) + ([f"model={model}"] if model else [])
    cfg = config_for(config or get_recipe(name).config, overrides)
    cfg.recipe = name
    if print_config:
        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return None
    return cfg
