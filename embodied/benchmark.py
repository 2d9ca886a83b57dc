"""The navigation benchmark, shaped like ``habitat.Benchmark``::

    from pixelrl.embodied.benchmark import Benchmark
    from pixelrl.embodied.agents import ExpertAgent, RandomAgent

    bench = Benchmark("val.json.gz")              # any pixelrl/PointNav-v0 options as keywords
    metrics = bench.evaluate(RandomAgent())       # {"success": ..., "spl": ..., ...}
    metrics = bench.evaluate(ExpertAgent(bench.env), output_dir="out/")
    print(bench.table())                          # means with 95% confidence intervals

``evaluate`` runs the dataset's episodes in order (episode ``k`` by ``reset(options=
{"episode_index": k})``); for each: ``agent.reset()``, then ``agent.act(obs)`` until the episode
ends (stop or the step limit). Measures are the env's, habitat's definitions: Success, SPL,
SoftSPL, DistanceToGoal (plus path length, collisions, steps). Confidence intervals are
Student-t intervals of the mean over episodes. With ``output_dir`` it writes ``episodes.csv``
(one row per episode) and ``paths.png`` (top-down maps of the first episodes' paths).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

MEASURES = ("success", "spl", "softspl", "distance_to_goal")
EXTRA = ("path_length", "collisions", "num_steps")
# env options that choose where episodes come from: a benchmark always uses its dataset.
# (``apartment`` stays: procedural scene ids name only the seed, the generator knobs rebuild them.)
EPISODE_SOURCE_OPTIONS = (
    "dataset_path",
    "scenes",
    "num_scenes",
    "scene_seed",
    "episode_rules",
    "instruction_rules",
    "shuffle",
)
TASK_ENV_IDS = {
    "pointnav": "pixelrl/PointNav-v0",
    "objectnav": "pixelrl/ObjectNav-v0",
    "instructnav": "pixelrl/InstructNav-v0",
}


def mean_ci(values: list[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of its Student-t confidence interval (0 for fewer than 2 values)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return float("nan"), float("nan")
    if len(x) < 2:
        return float(x.mean()), 0.0
    from scipy import stats

    half = stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean()), float(half)


class Benchmark:
    """Evaluate agents over an episode dataset with the embedded simulator (module doc)."""

    def __init__(self, dataset: str | Path, task: str | None = None, **env_options: Any):
        """``task``: one of ``TASK_ENV_IDS``; by default "instructnav" when the dataset's episodes
        carry instructions, else "pointnav"."""
        import gymnasium as gym

        import pixelrl.envs  # noqa: F401  (registers the ids)
        from pixelrl.envs.nav.dataset import load_episodes

        dataset = Path(dataset)
        if not dataset.is_file():
            raise FileNotFoundError(f"episode dataset not found: {dataset}")
        self.dataset = dataset
        episodes = load_episodes(dataset)
        self.num_dataset_episodes = len(episodes)
        if task is None:
            task = "instructnav" if any(e.instruction for e in episodes) else "pointnav"
        env_id = TASK_ENV_IDS.get(task)
        if env_id is None:
            raise ValueError(f"task must be one of {', '.join(TASK_ENV_IDS)}, got {task!r}")
        options = {k: v for k, v in env_options.items() if k not in EPISODE_SOURCE_OPTIONS}
        self.env = gym.make(env_id, dataset_path=str(dataset), **options)
        self.env_id = env_id
        self.rows: list[dict[str, Any]] = []
        self.summary: dict[str, tuple[float, float]] = {}
        self.csv_path: Path | None = None
        self.png_path: Path | None = None

    def evaluate(
        self,
        agent: Any,
        num_episodes: int | None = None,
        output_dir: str | Path | None = None,
        num_path_plots: int = 6,
        seed: int = 0,
        progress: bool = True,
    ) -> dict[str, float]:
        """Mean of every measure over the first ``num_episodes`` episodes (all by default)."""
        from tqdm import tqdm

        n = (
            self.num_dataset_episodes
            if num_episodes is None
            else min(num_episodes, self.num_dataset_episodes)
        )
        self.rows, maps = [], []
        for k in tqdm(range(n), desc="episodes", unit="ep", disable=not progress):
            agent.reset()
            obs, info = self.env.reset(seed=seed if k == 0 else None, options={"episode_index": k})
            while True:
                action = agent.act(obs)
                if isinstance(action, dict):  # habitat agents return {"action": a}
                    action = action["action"]
                obs, _, terminated, truncated, info = self.env.step(int(action))
                if terminated or truncated:
                    break
            state = self.env.unwrapped.state
            row = {
                "episode": k,
                "episode_id": info.get("episode_id"),
                "scene_id": info.get("scene_id"),
            }
            row["start_geodesic"] = float(state.start_distance)
            row.update({m: float(info[m]) for m in MEASURES + EXTRA if m in info})
            # a start the simulator cannot connect to its goal has no defined SPL: keep the row,
            # leave it out of the means and say so in the table
            row["valid"] = bool(np.isfinite(row["start_geodesic"]) and row["start_geodesic"] > 0)
            self.rows.append(row)
            if len(maps) < num_path_plots:
                maps.append((row, self.env.unwrapped.topdown(scale=3)))
        valid = [r for r in self.rows if r["valid"]]
        self.summary = {
            m: mean_ci([r[m] for r in valid]) for m in MEASURES + EXTRA if valid and m in valid[0]
        }
        if output_dir is not None:
            out = Path(output_dir)
            out.mkdir(parents=True, exist_ok=True)
            self.csv_path = self.write_csv(out / "episodes.csv")
            self.png_path = self.plot_paths(maps, out / "paths.png") if maps else None
        return {m: mean for m, (mean, _) in self.summary.items()}

    def table(self) -> str:
        """The summary as a text table: measure, mean, 95% CI."""
        valid = sum(r["valid"] for r in self.rows)
        lines = [
            f"{'measure':<18}{'mean':>10}{'95% CI':>22}   ({valid} episodes, {self.dataset.name})"
        ]
        for m, (mean, half) in self.summary.items():
            lines.append(f"{m:<18}{mean:>10.3f}{f'[{mean - half:.3f}, {mean + half:.3f}]':>22}")
        if valid < len(self.rows):
            bad = [str(r["episode_id"]) for r in self.rows if not r["valid"]]
            lines.append(
                f"left out {len(bad)} episode(s) whose start cannot reach the goal: {', '.join(bad)}"
            )
        return "\n".join(lines)

    def write_csv(self, path: str | Path) -> Path:
        path = Path(path)
        fields = list(dict.fromkeys(k for row in self.rows for k in row))
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(self.rows)
        return path

    @staticmethod
    def plot_paths(maps: list[tuple[dict[str, Any], np.ndarray]], path: str | Path) -> Path:
        """A grid of top-down maps, each titled with its episode's Success and SPL."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cols = min(3, len(maps))
        rows = math.ceil(len(maps) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4.2 * rows), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, (row, image) in zip(axes.flat, maps):
            ax.imshow(image)
            ax.set_title(
                f"ep {row['episode_id']}: S={row.get('success', 0):.0f} SPL={row.get('spl', 0):.2f}\n"
                f"d_goal={row.get('distance_to_goal', 0):.2f} m, {int(row.get('num_steps', 0))} steps",
                fontsize=9,
            )
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return Path(path)

    def close(self) -> None:
        self.env.close()


def make_agent(
    kind: str,
    dataset: str | Path,
    checkpoint: str | None = None,
    task: str | None = None,
    seed: int = 0,
    deterministic: bool = False,
    scene_dir: str | None = None,
    **env_options: Any,
) -> tuple[Benchmark, Any]:
    """A benchmark for ``dataset`` and the agent ``kind`` (the ``pixelrl bench nav`` choices).

    A checkpoint agent's env gets the checkpoint's sensor options (resolution, sensors, ...);
    the scripted agents need no images and use small depth frames.
    """
    from pixelrl.embodied.agents import (
        ExpertAgent,
        ForwardOnlyAgent,
        PolicyAgent,
        RandomAgent,
        StopAgent,
    )

    options: dict[str, Any] = {}
    if kind == "checkpoint":
        from pixelrl.checkpoint import load_checkpoint

        cfg = load_checkpoint(checkpoint)["config"]
        options.update(cfg["env"]["kwargs"])
        task = task or {v: k for k, v in TASK_ENV_IDS.items()}.get(cfg["env"]["id"])
    else:
        options.update(sensors=["depth"], width=32, height=32)
    options.update(env_options)
    if scene_dir is not None:
        options["scene_dir"] = scene_dir
    bench = Benchmark(dataset, task=task, **options)
    if kind == "checkpoint":
        agent = PolicyAgent.from_checkpoint(
            checkpoint,
            bench.env.observation_space,
            bench.env.action_space,
            deterministic=deterministic,
            seed=seed,
        )
    elif kind == "expert":
        agent = ExpertAgent(bench.env)
    elif kind == "random":
        agent = RandomAgent(seed)
    elif kind == "forward-only":
        agent = ForwardOnlyAgent()
    elif kind == "stop":
        agent = StopAgent()
    else:
        raise ValueError(f"unknown agent kind {kind!r}")
    return bench, agent
