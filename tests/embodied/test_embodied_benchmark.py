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
    from pixelrl.embodied import benchmark
    from pixelrl.embodied import cli as command

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


def test_a_wrong_stored_geodesic_is_replaced_by_ours_and_counted(bench, dataset, tmp_path, capsys):
    """info.geodesic_distance 0.001 on a 5 m episode made the expert's SPL 0.0002: the benchmark
    recomputes l, uses its own beyond max(0.5 m, 10%), and says so in one line on stderr."""
    with gzip.open(dataset, "rt") as f:
        raw = json.load(f)
    truth = raw["episodes"][0]["info"]["geodesic_distance"]
    raw["episodes"][0]["info"]["geodesic_distance"] = 0.001
    raw["episodes"][1]["info"]["geodesic_distance"] *= 1.05  # within the tolerance: kept
    tampered = tmp_path / "lying.json.gz"
    with gzip.open(tampered, "wt") as f:
        json.dump(raw, f)
    plain = bench.evaluate(ExpertAgent(bench.env), num_episodes=2, progress=False)
    plain_rows = bench.rows
    capsys.readouterr()
    lying = Benchmark(tampered, sensors=["depth"], width=16, height=16)
    try:
        means = lying.evaluate(ExpertAgent(lying.env), num_episodes=2, progress=False)
    finally:
        lying.close()
    assert lying.rows[0]["spl"] == pytest.approx(plain_rows[0]["spl"])
    assert lying.rows[0]["start_geodesic"] == pytest.approx(truth, rel=1e-6)
    assert lying.rows[1]["spl"] != plain_rows[1]["spl"]  # 5% off: the file's l stands
    assert [e for e, _, _ in lying.geodesic_disagreements] == ["0"]
    assert means["success"] == plain["success"] == 1.0
    err = capsys.readouterr().err
    assert "info.geodesic_distance of 1 of 2 episodes disagrees" in err
    assert "(episode 0: 0.001 m in the file" in err


def test_the_task_comes_from_the_file_and_a_contradicting_one_is_refused(dataset):
    with pytest.raises(ValueError, match="task 'objectnav' does not match val.json.gz: its "
                       "episodes are pointnav episodes"):  # fmt: skip
        Benchmark(dataset, task="objectnav", sensors=["depth"], width=16, height=16)


def test_an_objectnav_file_is_benchmarked_as_objectnav_without_task(tmp_path):
    """Its episodes say ObjectNav (categories, view points): it ran as PointNav before (the
    expert's SPL then measured to the object's centre, 0.993 instead of 0.937)."""
    from pixelrl.envs.nav.sim import generate_dataset

    path = tmp_path / "objnav.json.gz"
    generate_dataset(str(path), 1, seed=4, task="objectnav", num_scenes=1, scene_seed=9)
    bench = Benchmark(path, sensors=["depth"], width=16, height=16)
    try:
        assert bench.env_id == "pixelrl/ObjectNav-v0"
        assert bench.env.unwrapped.cfg.success_radius == 0.1
    finally:
        bench.close()
    with pytest.raises(ValueError, match="its episodes are objectnav episodes"):
        Benchmark(path, task="pointnav", sensors=["depth"], width=16, height=16)
