"""The navigation benchmark on scripted agents, its files, and ``pixelrl bench nav``."""

from __future__ import annotations

import csv
import gzip
import json
import math
import re

import pytest
from nav_testdata import APARTMENT, make_pointnav_dataset

from pixelrl.embodied.agents import ExpertAgent, ForwardOnlyAgent, RandomAgent, StopAgent
from pixelrl.embodied.benchmark import Benchmark, interval, mean_ci


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_pointnav_dataset(tmp_path_factory.mktemp("nav") / "val.json.gz", episodes=10)


@pytest.fixture(scope="module")
def bench(dataset):
    b = Benchmark(dataset, sensors=["depth"], width=16, height=16, apartment=APARTMENT)
    yield b
    b.close()


def test_expert_is_near_optimal(bench, tmp_path):
    metrics = bench.evaluate(
        ExpertAgent(bench.env), output_dir=tmp_path, num_path_plots=4, progress=False
    )
    print(bench.table())
    assert len(bench.rows) == 10 and all(r["valid"] for r in bench.rows)
    assert metrics["success"] == 1.0
    assert metrics["spl"] >= 0.95
    assert metrics["distance_to_goal"] < 0.2
    with open(tmp_path / "episodes.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["episode_id"] for r in rows] == [str(k) for k in range(10)]  # in dataset order
    assert {"success", "spl", "softspl", "soft_spl", "distance_to_goal", "path_length"} <= set(
        rows[0]
    )
    assert (tmp_path / "paths.png").stat().st_size > 1000


def test_stop_at_start_and_forward_only_never_succeed(bench):
    stop = bench.evaluate(StopAgent(), progress=False)
    assert stop["success"] == 0.0 and stop["spl"] == 0.0
    assert stop["path_length"] == 0.0
    # DistanceToGoal after stopping at once is the start distance: both the exact geodesic
    assert all(
        r["distance_to_goal"] == pytest.approx(r["start_geodesic"], abs=1e-9) for r in bench.rows
    )
    assert stop["softspl"] == pytest.approx(0.0, abs=1e-9)
    forward = bench.evaluate(ForwardOnlyAgent(), num_episodes=3, progress=False)
    assert forward["success"] == 0.0 and len(bench.rows) == 3


def test_random_agent_is_near_zero(bench):
    metrics = bench.evaluate(RandomAgent(seed=0), progress=False)
    assert metrics["success"] <= 0.1
    assert metrics["spl"] <= 0.1
    assert "95% CI" in bench.table()


def test_mean_ci_is_a_t_interval():
    mean, half = mean_ci([0.0, 1.0, 0.0, 1.0])
    assert mean == 0.5
    assert half == pytest.approx(3.182446 * 0.57735 / 2, rel=1e-4)  # t(0.975, 3) * s / sqrt(n)
    assert mean_ci([1.0]) == (1.0, 0.0)


def test_cli_bench_nav_side_by_side(dataset, tmp_path, capsys):
    """The dataset alone names its scenes (non-default apartments: rooms 2-3): the expert scores
    Success 1 without any env option; one named row per agent; files per agent."""
    from pixelrl.cli import main

    argv = ["bench", "nav", "--dataset", str(dataset), "--episodes", "4", "--out", str(tmp_path)]
    code = main(argv + ["--agent", "expert", "--agent", "stop", "--env-option", "width=16"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line[:6] in ("expert", "stop  ")
    }
    assert rows["expert"][1] == "1.000" and rows["stop"][1] == "0.000", out  # success column
    assert rows["expert"][-1] == rows["stop"][-1] == "4/4"
    assert not re.search(r"\b(inf|nan)\b", out), out
    for agent in ("expert", "stop"):
        assert (tmp_path / agent / "episodes.csv").is_file()
        assert (tmp_path / agent / "paths.png").is_file()
    with open(tmp_path / "summary.csv") as f:
        summary = list(csv.DictReader(f))
    assert [r["agent"] for r in summary] == ["expert", "stop"]
    assert float(summary[0]["success_ci_high"]) <= 1.0


def test_cli_bench_nav_writes_under_outputs_by_default(dataset, tmp_path, monkeypatch, capsys):
    from pixelrl.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["bench", "nav", "--dataset", str(dataset), "--agent", "stop", "--episodes", "1"]
    assert main(argv) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs"]
    assert (tmp_path / "outputs/bench_nav/val/stop/episodes.csv").is_file()
    capsys.readouterr()


def test_an_episode_that_cannot_be_measured_is_reported_not_averaged(dataset, tmp_path):
    """A start the scene cannot connect to its goal: the row keeps its reason, the means and
    the table leave it out (no inf, no nan)."""
    with gzip.open(dataset, "rt") as f:
        raw = json.load(f)
    raw["episodes"][1]["start_position"] = [-40.0, 0.0, -40.0]  # outside the apartment
    tampered = tmp_path / "tampered.json.gz"
    with gzip.open(tampered, "wt") as f:
        json.dump(raw, f)
    bench = Benchmark(tampered, sensors=["depth"], width=16, height=16)
    try:
        means = bench.evaluate(ExpertAgent(bench.env), num_episodes=3, progress=False)
    finally:
        bench.close()
    assert [r["valid"] for r in bench.rows] == [True, False, True]
    assert "cannot reach the goal" in bench.rows[1]["reason"]
    assert all(math.isfinite(v) for v in means.values()) and means["success"] == 1.0
    table = bench.table()
    assert not re.search(r"\b(inf|nan)\b", table), table
    assert "not measured, 1 episode(s) (1): the start cannot reach the goal" in table


def test_confidence_intervals_stay_in_the_measures_range():
    assert interval("success", 0.75, 0.39) == (0.36, 1.0)
    assert interval("distance_to_goal", 0.1, 0.3) == (0.0, 0.4)


def test_cli_agent_kinds_match_the_benchmarks():
    from pixelrl.commands import bench as command
    from pixelrl.embodied import benchmark

    assert command.AGENTS == benchmark.AGENT_KINDS
    assert command.PATH_AGENTS == benchmark.PATH_KINDS


def test_habitat_action_forms_and_call_order(bench):
    """Agents may answer as habitat's do (a name, {"action": name or index}); ``agent.reset``
    comes after the env's reset, as in habitat.Benchmark (the agent sees the new episode)."""
    from pixelrl.envs.nav.tasks import ACTION_NAMES

    class NamedExpert(ExpertAgent):
        def reset(self):
            super().reset()
            seen.append(self.env.state.episode.episode_id)

        def act(self, observations):
            a = super().act(observations)
            self.k = getattr(self, "k", 0) + 1
            forms = (ACTION_NAMES[a], {"action": ACTION_NAMES[a]}, {"action": a})
            return forms[self.k % 3]

    seen = []
    named = bench.evaluate(NamedExpert(bench.env), num_episodes=3, progress=False)
    assert seen == [r["episode_id"] for r in bench.rows]
    plain = bench.evaluate(ExpertAgent(bench.env), num_episodes=3, progress=False)
    assert named == plain and named["success"] == 1.0

    class Bad(StopAgent):
        def act(self, observations):
            return "jump"

    with pytest.raises(ValueError, match="unknown action 'jump'; the env's actions: stop,"):
        bench.evaluate(Bad(), num_episodes=1, progress=False)


def test_an_episode_starting_on_its_goal_is_not_averaged(dataset, tmp_path):
    with gzip.open(dataset, "rt") as f:
        raw = json.load(f)
    ep = raw["episodes"][0]
    ep["start_position"] = ep["goals"][0]["position"]
    ep["info"]["geodesic_distance"] = 0.0
    tampered = tmp_path / "on_goal.json.gz"
    with gzip.open(tampered, "wt") as f:
        json.dump(raw, f)
    bench = Benchmark(tampered, sensors=["depth"], width=16, height=16)
    try:
        bench.evaluate(StopAgent(), num_episodes=2, progress=False)
    finally:
        bench.close()
    assert [r["valid"] for r in bench.rows] == [False, True]
    assert "starts on its goal (l = 0" in bench.rows[0]["reason"]
