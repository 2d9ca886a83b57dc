"""The navigation benchmark, shaped like ``habitat.Benchmark``::

    from pixelrl.embodied.benchmark import Benchmark
    from pixelrl.embodied.agents import ExpertAgent, RandomAgent

    bench = Benchmark("val.json.gz")              # any pixelrl/PointNav-v0 options as keywords
    metrics = bench.evaluate(RandomAgent())       # {"success": ..., "spl": ..., ...}
    metrics = bench.evaluate(ExpertAgent(bench.env), output_dir="out/")
    print(bench.table())                          # means with 95% confidence intervals

``evaluate`` runs the dataset's episodes in order (episode ``k`` by ``reset(options=
{"episode_index": k})``); for each, as habitat's: the env's reset, ``agent.reset()``, then
``agent.act(obs)`` until the episode ends (stop or the step limit). An action is an index, a name
(``"turn_left"``) or ``{"action": index or name}``. An agent that can act for several episodes at
once (a VLM agent: ``copies`` and ``act_batch``) plays ``batch_size`` of them together (default
:data:`DEFAULT_BATCH`), each in its own env, one batched ``generate`` per turn; the rows stay in
the dataset's order and greedy answers give the same numbers as one at a time. Measures are the env's, habitat's definitions: Success, SPL,
SoftSPL, DistanceToGoal (plus path length, collisions, steps). Confidence intervals are
Student-t intervals of the mean over episodes, cut to the range a measure can take (Success and
SPL lie in [0, 1]). An episode that cannot be measured (its start cannot reach its goal in the
scene, or a measure comes out infinite) is kept in ``episodes.csv`` with its ``reason`` and left
out of the means, and the table says so: a table never shows ``inf`` or ``nan``. With
``output_dir`` it writes ``episodes.csv`` (one row per episode) and ``paths.png`` (top-down maps
of the first ``num_path_plots`` episodes, as habitat draws them: start, goal, shortest and walked
path; the figure says which of the run's episodes it draws; a legend). SPL's l is checked: an episode's
``info.geodesic_distance`` that differs from the geodesic recomputed here by more than
max(0.5 m, 10%) (:data:`GEODESIC_TOLERANCE`) is replaced by ours, and one line on stderr counts
those episodes (a negative or non-numeric one is an ``EpisodeFileError`` when the file is read).
The task comes from the file (:func:`~pixelrl.envs.nav.dataset.dataset_task`). :func:`comparison_table` puts several agents' runs
side by side, one named row each (``pixelrl bench nav --agent A --agent B``).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.envs.nav.measures import HEADLINE, bounds, extra_measures, habitat_key

# The measures the table shows (their means and intervals), then the rest the CSV and means hold:
# the registry's (pixelrl.envs.nav.measures), so a new measure is counted here without a change.
MEASURES = HEADLINE
EXTRA = extra_measures()
# env options that choose where episodes come from: a benchmark always uses its dataset (whose
# procedural scene ids carry their generator options, ``apartment`` included).
EPISODE_SOURCE_OPTIONS = (
    "dataset_path",
    "apartment",
    "scenes",
    "num_scenes",
    "scene_seed",
    "episode_rules",
    "instruction_rules",
    "shuffle",
)
# Episodes a batching agent plays together by default (Benchmark.evaluate, pixelrl bench nav
# --batch): a VLM agent answers them in one generate per turn.
DEFAULT_BATCH = 8
TASK_ENV_IDS = {
    "pointnav": "pixelrl/PointNav-v0",
    "objectnav": "pixelrl/ObjectNav-v0",
    "instructnav": "pixelrl/InstructNav-v0",
}

# A file's info.geodesic_distance (SPL's l) that differs from ours by more than max(0.5 m, 10%)
# is wrong, not a navmesh's rounding (habitat's and our geodesics agree to centimetres on the
# same scene): the benchmark uses ours and warns, counting the episodes.
GEODESIC_TOLERANCE = (0.5, 0.10)


def geodesic_disagrees(stored: float, ours: float) -> bool:
    """Whether a stored l and the recomputed one differ beyond :data:`GEODESIC_TOLERANCE`."""
    return abs(stored - ours) > max(GEODESIC_TOLERANCE[0], GEODESIC_TOLERANCE[1] * ours)


# What in an episode says its task (dataset_task), for error messages.
TASK_EVIDENCE = {
    "pointnav": "point goals, no object categories or instructions",
    "objectnav": "they name object categories, their goals have view points",
    "instructnav": "they carry instructions",
}


def interval(measure: str, mean: float, half: float) -> tuple[float, float]:
    """The 95% interval ``mean ± half``, cut to the measure's range (its registered bounds;
    never below 0)."""
    lo, hi = bounds(measure)
    return max(lo, mean - half), min(hi, mean + half)


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

    def __init__(
        self,
        dataset: str | Path,
        task: str | None = None,
        task_source: str | None = None,
        **env_options: Any,
    ):
        """``task``: one of ``TASK_ENV_IDS``; the dataset's episodes say theirs
        (:func:`~pixelrl.envs.nav.dataset.dataset_task`: instructions, object categories or view
        points, else PointNav), and a ``task`` that contradicts them is a ``ValueError`` (naming
        ``task_source``, where the task came from: "task 'pointnav'" by default)."""
        import gymnasium as gym

        import pixelrl.envs  # noqa: F401  (registers the ids)
        from pixelrl.envs.nav.dataset import dataset_task, load_episodes

        dataset = Path(dataset)
        if not dataset.is_file():
            raise FileNotFoundError(f"episode dataset not found: {dataset}")
        self.dataset = dataset
        episodes = load_episodes(dataset)
        self.num_dataset_episodes = len(episodes)
        if task is not None and task not in TASK_ENV_IDS:
            raise ValueError(f"task must be one of {', '.join(TASK_ENV_IDS)}, got {task!r}")
        file_task = dataset_task(dataset, episodes)
        if task is not None and task != file_task:
            raise ValueError(
                f"{task_source or f'task {task!r}'} does not match {dataset.name}: its episodes "
                f"are {file_task} episodes ({TASK_EVIDENCE[file_task]})"
            )
        task = file_task
        env_id = TASK_ENV_IDS[task]
        options = {k: v for k, v in env_options.items() if k not in EPISODE_SOURCE_OPTIONS}
        self.env = gym.make(env_id, dataset_path=str(dataset), **options)
        self.env_id = env_id
        self._env_options = options
        self._more_envs: list[Any] = []  # for batched play (evaluate's batch_size)
        self.rows: list[dict[str, Any]] = []
        self.summary: dict[str, tuple[float, float]] = {}
        self.csv_path: Path | None = None
        self.png_path: Path | None = None
        # (episode_id, the file's l, ours) where the file's info.geodesic_distance was wrong
        self.geodesic_disagreements: list[tuple[str, float, float]] = []

    def evaluate(
        self,
        agent: Any,
        num_episodes: int | None = None,
        output_dir: str | Path | None = None,
        num_path_plots: int = 6,
        seed: int = 0,
        progress: bool = True,
        batch_size: int = DEFAULT_BATCH,
    ) -> dict[str, float]:
        """Mean of every measure over the first ``num_episodes`` episodes (all by default).

        ``batch_size``: an agent that can act for several episodes at once (a VLM agent: it has
        ``copies`` and ``act_batch``) plays up to that many episodes together, each in its own
        env, with one batched ``generate`` per turn; a finished episode's env starts the next
        episode at once. 1 plays one episode at a time. Other agents always play one at a time.
        The rows come in the dataset's order either way, and greedy answers give the same
        per-episode numbers at any batch size."""
        from tqdm import tqdm

        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        n = (
            self.num_dataset_episodes
            if num_episodes is None
            else min(num_episodes, self.num_dataset_episodes)
        )
        disagreements: list[tuple[int, tuple[str, float, float]]] = []
        rows: dict[int, dict[str, Any]] = {}
        maps: dict[int, np.ndarray] = {}

        def finish(env: Any, k: int, state: Any, info: dict, reason: str | None) -> None:
            rows[k] = self._row(k, state, info, reason)
            if k < num_path_plots:
                maps[k] = env.unwrapped.topdown(scale=3, shortest=True)
            bar.update(1)

        with tqdm(total=n, desc="episodes", unit="ep", disable=not progress) as bar:
            batched = batch_size > 1 and n > 1 and _batches(agent)
            if batched:
                self._play_batched(agent, n, min(batch_size, n), seed, disagreements, finish)
            else:
                for k in range(n):
                    obs, info, state, reason = self._start(self.env, k, seed if k == 0 else None,
                                                           disagreements)  # fmt: skip
                    agent.reset()  # after the env's reset, as habitat.Benchmark
                    while reason is None:  # an episode that cannot be measured is not played
                        # habitat's forms: an index, a name, {"action": index or name}
                        obs, info, done = self._step(self.env, agent.act(obs))
                        if done:
                            break
                    finish(self.env, k, state, info, reason)
        self.rows = [rows[k] for k in range(n)]
        self.geodesic_disagreements = [d for _, d in sorted(disagreements, key=lambda x: x[0])]
        if self.geodesic_disagreements:
            import sys

            eid, stored, ours = self.geodesic_disagreements[0]
            print(
                f"warning: {self.dataset.name}: info.geodesic_distance of "
                f"{len(self.geodesic_disagreements)} of "
                f"{n} episodes disagrees with the recomputed geodesic by more than "
                f"max({GEODESIC_TOLERANCE[0]} m, {GEODESIC_TOLERANCE[1]:.0%}) (episode {eid}: "
                f"{stored:g} m in the file, {ours:.3f} m recomputed); their SPL and SoftSPL use "
                "the recomputed one",
                file=sys.stderr,
            )
        valid = [r for r in self.rows if r["valid"]]
        self.summary = {
            m: mean_ci([r[m] for r in valid]) for m in MEASURES + EXTRA if valid and m in valid[0]
        }
        if output_dir is not None:
            out = Path(output_dir)
            out.mkdir(parents=True, exist_ok=True)
            self.csv_path = self.write_csv(out / "episodes.csv")
            plots = [(rows[k], maps[k]) for k in sorted(maps)]
            self.png_path = self.plot_paths(plots, out / "paths.png") if plots else None
        return {m: mean for m, (mean, _) in self.summary.items()}

    def _play_batched(
        self, agent: Any, n: int, size: int, seed: int, disagreements: list, finish: Any
    ) -> None:
        """Episodes ``0..n-1`` in ``size`` envs at once (:meth:`evaluate`): each turn, one
        ``act_batch`` over the episodes still running; an env whose episode ended (or could
        not be measured) starts the next one."""
        envs = self._envs(size)
        agents = agent.copies(size)
        upcoming = iter(range(n))
        running: dict[int, list[Any]] = {}  # env slot -> [k, obs, state]
        seeded = [False] * size

        def start(i: int) -> None:
            for k in upcoming:
                obs, info, state, reason = self._start(
                    envs[i], k, None if seeded[i] else seed, disagreements
                )
                seeded[i] = True
                agents[i].reset()  # after the env's reset, as habitat.Benchmark
                if reason is None:
                    running[i] = [k, obs, state]
                    return
                finish(envs[i], k, state, info, reason)  # not played

        for i in range(size):
            start(i)
        while running:
            slots = sorted(running)
            # Episodes with queued steps play them first, without the model; the others wait,
            # so every generate asks for all running episodes at once (a full batch), not for
            # the few whose queues ran out this step. Each episode's own actions are unchanged.
            slots = [i for i in slots if not getattr(agents[i], "asks", True)] or slots
            actions = agent.act_batch([agents[i] for i in slots], [running[i][1] for i in slots])
            for i, action in zip(slots, actions):
                k, _, state = running[i]
                obs, info, done = self._step(envs[i], action)
                running[i][1] = obs
                if done:
                    del running[i]
                    finish(envs[i], k, state, info, None)
                    start(i)

    def _envs(self, size: int) -> list[Any]:
        """This benchmark's env and ``size - 1`` more like it (made once, kept until close)."""
        import gymnasium as gym

        while 1 + len(self._more_envs) < size:
            env = gym.make(self.env_id, dataset_path=str(self.dataset), **self._env_options)
            sim = getattr(env.unwrapped, "sim", None)
            if hasattr(sim, "share_grids"):  # the embedded simulator: each scene's grid once
                sim.share_grids(self.env.unwrapped.sim)
            self._more_envs.append(env)
        return [self.env, *self._more_envs[: size - 1]]

    def _start(
        self, env: Any, k: int, seed: int | None, disagreements: list
    ) -> tuple[Any, dict, Any, str | None]:
        """Episode ``k`` started in ``env``: (obs, info, state, why it cannot be measured or
        None), SPL's l checked against the file."""
        obs, info = env.reset(seed=seed, options={"episode_index": k})
        state = env.unwrapped.state
        found: list[tuple[str, float, float]] = []
        if self._checked_start(state, found):
            info = {**info, "distance_to_goal": state.measured}
        disagreements += [(k, d) for d in found]
        reason = _unmeasurable(float(state.start_distance), info.get("distance_to_goal"))
        return obs, info, state, reason

    @staticmethod
    def _step(env: Any, action: Any) -> tuple[Any, dict, bool]:
        """One step of ``env`` with an agent's action in any of habitat's forms (an index, a
        name, ``{"action": ...}``) or ``"idle"`` (a text policy's turn): (obs, info, done)."""
        from pixelrl.envs.nav.tasks import ACTION_NAMES, IDLE, IDLE_INDEX, action_index

        names = getattr(env.unwrapped, "action_names", None)
        index = action_index(action, names or ACTION_NAMES, idle=True)
        action = IDLE if index == IDLE_INDEX else index  # "idle": a text policy's turn
        obs, _, terminated, truncated, info = env.step(action)
        return obs, info, terminated or truncated

    @staticmethod
    def _row(k: int, state: Any, info: dict, reason: str | None) -> dict[str, Any]:
        """Episode ``k``'s row of ``episodes.csv`` from its last info."""
        row = {
            "episode": k,
            "episode_id": info.get("episode_id"),
            "scene_id": info.get("scene_id"),
        }
        row["start_geodesic"] = float(state.start_distance)
        row.update({m: float(info[m]) for m in MEASURES + EXTRA if m in info})
        # habitat's key (soft_spl), in the CSV beside ours where they differ
        row.update(
            {habitat_key(m): row[m] for m in MEASURES + EXTRA if m in row and habitat_key(m) != m}
        )
        if reason is None:
            bad = [m for m in MEASURES + EXTRA if m in row and not np.isfinite(row[m])]
            reason = f"{', '.join(bad)} not finite at the end" if bad else None
        # kept in the CSV with its reason, left out of the means, named under the table
        row["valid"], row["reason"] = reason is None, reason or ""
        return row

    @staticmethod
    def _checked_start(state: Any, disagreements: list[tuple[str, float, float]]) -> bool:
        """SPL's l checked against the file: the episode's ``info.geodesic_distance`` is compared
        with the exact geodesic recomputed here; one that disagrees by more than
        :data:`GEODESIC_TOLERANCE` is replaced (True) and listed in ``disagreements``. (An l the
        env already recomputed, from a file not written by us, is ours; one still a grid geodesic
        becomes exact when the episode ends.)"""
        from pixelrl.envs.nav.sim import stored_geodesic

        stored = stored_geodesic(state.episode)
        if stored is None or state.start_pending:
            return False
        ours = float(state.start_distance)
        if ours == stored:  # the file's l, taken as it was: search ours
            ours = float(state.field.exact_distance(state.start_position))
        if not math.isfinite(ours) or not geodesic_disagrees(stored, ours):
            return False  # agreeing, or unreachable (which the benchmark reports on its own)
        disagreements.append((str(state.episode.episode_id), stored, ours))
        state.replace_start_distance(ours)
        return True

    def table(self) -> str:
        """The summary as a text table: measure, mean, 95% CI (cut to the measure's range)."""
        valid = sum(r["valid"] for r in self.rows)
        lines = [
            f"{'measure':<18}{'mean':>10}{'95% CI':>22}   ({valid} episodes, {self.dataset.name})"
        ]
        for m, (mean, half) in self.summary.items():
            lo, hi = interval(m, mean, half)
            lines.append(f"{m:<18}{mean:>10.3f}{f'[{lo:.3f}, {hi:.3f}]':>22}")
        lines += self.unmeasured()
        return "\n".join(lines)

    def unmeasured(self) -> list[str]:
        """One line per reason some episodes could not be measured (none: no lines)."""
        reasons: dict[str, list[str]] = {}
        for r in self.rows:
            if not r["valid"]:
                reasons.setdefault(r["reason"], []).append(str(r["episode_id"]))
        return [
            f"not measured, {len(ids)} episode(s) ({', '.join(ids[:10])}"
            f"{', ...' if len(ids) > 10 else ''}): {reason}"
            for reason, ids in reasons.items()
        ]

    def write_csv(self, path: str | Path) -> Path:
        path = Path(path)
        fields = list(dict.fromkeys(k for row in self.rows for k in row))
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(self.rows)
        return path

    def plot_paths(self, maps: list[tuple[dict[str, Any], np.ndarray]], path: str | Path) -> Path:
        """A grid of top-down maps, habitat's way: start, goal, the shortest path (orange) under
        the walked one (blue). Each panel is titled with its episode's Success, SPL, shortest and
        walked lengths; the figure's title says which of the run's episodes are drawn; a legend
        names the map's colours. Constrained layout keeps titles, maps and legend apart."""
        objectnav = self.env_id == TASK_ENV_IDS["objectnav"]
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        from pixelrl.envs.nav.topdown import COLORS

        cols = min(3, len(maps))
        rows = math.ceil(len(maps) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4.4 * rows + 1.0),
                                 squeeze=False, layout="constrained")  # fmt: skip
        for ax in axes.flat:
            ax.axis("off")
        for ax, (row, image) in zip(axes.flat, maps):
            ax.imshow(image)
            ax.set_title(_panel_title(row), fontsize=9)
            if not row["valid"]:
                ax.text(0.5, 0.5, f"not measured:\n{row['reason']}", transform=ax.transAxes,
                        ha="center", va="center", fontsize=8, color="darkred", wrap=True)  # fmt: skip
        fig.suptitle(self._drawn_note([row for row, _ in maps]), fontsize=10)

        def colour(name: str) -> np.ndarray:
            return np.array(COLORS[name]) / 255

        marks = {"start": "o", "goal": "o", "agent (at the end), heading": "o"}
        handles = []
        for name in COLORS:
            if "ObjectNav" in name and not objectnav:
                continue
            if name in ("shortest path", "walked path"):
                width = 4 if name == "shortest path" else 2
                handles.append(Line2D([], [], color=colour(name), lw=width, label=name))
            elif name in marks:
                filled = name != "start"  # the start is a ring (around the agent at the start)
                handles.append(Line2D([], [], ls="", marker="o", markersize=8, label=name,
                                      markerfacecolor=colour(name) if filled else "none",
                                      markeredgecolor=colour(name)))  # fmt: skip
            else:
                handles.append(Patch(facecolor=colour(name), edgecolor="0.4", label=name))
        fig.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)),
                   fontsize=8, frameon=False)  # fmt: skip
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return Path(path)

    def _drawn_note(self, drawn: list[dict[str, Any]]) -> str:
        """Which of the run's episodes a figure draws: ``all 4 episodes`` or ``the first 6 of
        20 episodes (episodes.csv has every one)``."""
        total = len(self.rows)
        where = f"{self.dataset.name}, {self.env_id}"
        if len(drawn) >= total:
            return f"{where}: all {total} episodes"
        return f"{where}: the first {len(drawn)} of {total} episodes (episodes.csv has every one)"

    def close(self) -> None:
        for env in [self.env, *self._more_envs]:
            env.close()
        self._more_envs = []


def _batches(agent: Any) -> bool:
    """Whether ``agent`` can act for several episodes at once (``copies`` and ``act_batch``,
    as :class:`~pixelrl.embodied.vlm_agent.VLMNavAgent`)."""
    return callable(getattr(agent, "copies", None)) and callable(getattr(agent, "act_batch", None))


def _panel_title(row: dict[str, Any]) -> str:
    """A path panel's title: the episode, its Success and SPL, then its shortest (l) and walked
    lengths and steps."""
    head = f"episode {row['episode_id']} (#{row['episode']})"
    if not row["valid"]:
        return f"{head}\nnot measured"
    return (
        f"{head}\nsuccess {row.get('success', 0):.0f}, SPL {row.get('spl', 0):.2f}, "
        f"{row.get('distance_to_goal', 0):.2f} m left\nshortest {row['start_geodesic']:.2f} m, "
        f"walked {row.get('path_length', 0):.2f} m in {int(row.get('num_steps', 0))} steps"
    )


def _unmeasurable(start_geodesic: float, distance_to_goal: float | None) -> str | None:
    """Why an episode cannot be measured from its start, or None: SPL needs a finite, positive
    start distance (l), DistanceToGoal a goal the start can reach."""
    if start_geodesic == 0:
        # habitat's SPL divides by l; its generator never makes such an episode (min 1 m)
        return "the episode starts on its goal (l = 0: SPL and SoftSPL are undefined)"
    if not np.isfinite(start_geodesic) or start_geodesic < 0:
        return f"start geodesic distance {start_geodesic} (SPL needs a finite l > 0)"
    if distance_to_goal is None or not np.isfinite(distance_to_goal):
        return "the start cannot reach the goal in this scene (DistanceToGoal is infinite)"
    return None


def comparison_table(benches: dict[str, Benchmark], measures: tuple[str, ...] = MEASURES) -> str:
    """Several agents' runs side by side: one row per agent (by name), a column per measure
    (mean and 95% interval), then the episodes each could not measure."""
    width = max(12, *(len(name) for name in benches))
    cells = {m: max(len(m), 21) for m in measures}
    lines = [f"{'agent':<{width}}" + "".join(f"  {m:>{cells[m]}}" for m in measures) + "  episodes"]
    notes = []
    for name, bench in benches.items():
        row = f"{name:<{width}}"
        for m in measures:
            if m in bench.summary:
                mean, half = bench.summary[m]
                lo, hi = interval(m, mean, half)
                row += f"  {f'{mean:.3f} [{lo:.3f}, {hi:.3f}]':>{cells[m]}}"
            else:
                row += f"  {'-':>{cells[m]}}"
        valid = sum(r["valid"] for r in bench.rows)
        lines.append(row + f"  {valid}/{len(bench.rows)}")
        notes += [f"{name}: {line}" for line in bench.unmeasured()]
    return "\n".join(lines + notes)


# ``pixelrl bench nav --agent KIND [PATH]``: the agent kinds, and the ones that take a PATH.
# A new kind is a name here and a branch in agent_env_options (if it needs its own env options)
# and in build_agent.
AGENT_KINDS = ("checkpoint", "vlm", "expert", "random", "forward-only", "stop")
PATH_KINDS = ("checkpoint", "vlm")
# Agents that do not look still need an env that renders something: small depth frames.
BLIND_OPTIONS = {"sensors": ["depth"], "width": 32, "height": 32}


def agent_env_options(kind: str, path: str | None = None) -> tuple[dict[str, Any], str | None]:
    """The env options and task (None: from the dataset) an agent of ``kind`` needs: a
    checkpoint's or VLM agent's own (the sensors and resolution it learned on), else
    :data:`BLIND_OPTIONS`. A file from anyone chooses only the options that shape an episode
    (never a path on this machine): anything else in it is a one-line error."""
    from pixelrl.envs.recording.env_options import replay_kwargs

    if kind == "vlm":
        from pixelrl.embodied.vlm_agent import read_spec

        spec = read_spec(path)
        options = replay_kwargs(TASK_ENV_IDS[spec.task], dict(spec.env_kwargs), None, str(path),
                                source="an agent file")  # fmt: skip
        return options, spec.task
    if kind == "checkpoint":
        from pixelrl.checkpoint import CheckpointError, load_checkpoint

        env = load_checkpoint(path)["config"].get("env") or {}
        task = {v: k for k, v in TASK_ENV_IDS.items()}.get(env.get("id"))
        if task is None:
            raise CheckpointError(
                f"{path}: not a navigation checkpoint (trained on {str(env.get('id'))[:80]}); "
                f"bench nav benchmarks agents of {', '.join(TASK_ENV_IDS.values())}"
            )
        options = replay_kwargs(TASK_ENV_IDS[task], dict(env.get("kwargs") or {}), None,
                                str(path), source="a checkpoint")  # fmt: skip
        return options, task
    return dict(BLIND_OPTIONS), None


def build_agent(
    kind: str, env: Any, path: str | None = None, seed: int = 0, deterministic: bool = False
) -> Any:
    """The agent of ``kind`` acting in ``env`` (a :class:`Benchmark`'s env)."""
    from pixelrl.embodied.agents import (
        ExpertAgent,
        ForwardOnlyAgent,
        PolicyAgent,
        RandomAgent,
        StopAgent,
    )

    if kind == "checkpoint":
        return PolicyAgent.from_checkpoint(
            path, env.observation_space, env.action_space, deterministic=deterministic, seed=seed
        )
    if kind == "vlm":  # a navigation VLM agent's folder (pixelrl train embodied/vlm-sft)
        from pixelrl.embodied.vlm_agent import load_agent

        nav = env.unwrapped.cfg
        return load_agent(path, nav.forward_step, nav.turn_degrees)  # greedy answers
    if kind == "expert":
        return ExpertAgent(env)
    if kind == "random":
        return RandomAgent(seed)
    if kind == "forward-only":
        return ForwardOnlyAgent()
    if kind == "stop":
        return StopAgent()
    raise ValueError(f"unknown agent kind {kind!r}; kinds: {', '.join(AGENT_KINDS)}")


def make_agent(
    kind: str,
    dataset: str | Path,
    path: str | None = None,
    task: str | None = None,
    seed: int = 0,
    deterministic: bool = False,
    scene_dir: str | None = None,
    checkpoint: str | None = None,
    **env_options: Any,
) -> tuple[Benchmark, Any]:
    """A benchmark for ``dataset`` and the agent ``kind`` (the ``pixelrl bench nav`` choices;
    ``path`` for the :data:`PATH_KINDS`, ``checkpoint`` is its old name). ``env_options``
    override the agent's (:func:`agent_env_options`)."""
    path = path if path is not None else checkpoint
    if kind not in AGENT_KINDS:
        raise ValueError(f"unknown agent kind {kind!r}; kinds: {', '.join(AGENT_KINDS)}")
    if (kind in PATH_KINDS) != (path is not None):
        raise ValueError(f"agent {kind!r} {'needs' if kind in PATH_KINDS else 'takes no'} path")
    options, agent_task = agent_env_options(kind, path)
    options.update(env_options)
    if scene_dir is not None:
        options["scene_dir"] = scene_dir
    source = None if task is not None or agent_task is None else f"this {agent_task} agent"
    bench = Benchmark(dataset, task=task or agent_task, task_source=source, **options)
    try:
        agent = build_agent(kind, bench.env, path, seed, deterministic)
    except BaseException:
        bench.close()
        raise
    return bench, agent
