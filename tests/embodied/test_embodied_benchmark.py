"""The navigation benchmark on scripted agents, its files, and ``pixelrl bench nav``."""

from __future__ import annotations

import csv

import pytest
from nav_testdata import APARTMENT, make_pointnav_dataset

from pixelrl.embodied.agents import ExpertAgent, ForwardOnlyAgent, RandomAgent, StopAgent
from pixelrl.embodied.benchmark import Benchmark, mean_ci


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
    assert {"success", "spl", "softspl", "distance_to_goal", "path_length"} <= set(rows[0])
    assert (tmp_path / "paths.png").stat().st_size > 1000


def test_stop_at_start_and_forward_only_never_succeed(bench):
    stop = bench.evaluate(StopAgent(), progress=False)
    assert stop["success"] == 0.0 and stop["spl"] == 0.0
    assert stop["path_length"] == 0.0
    # DistanceToGoal after stopping at once is the start distance (grid vs exact geodesic: ~1%)
    assert all(
        r["distance_to_goal"] == pytest.approx(r["start_geodesic"], rel=0.05) for r in bench.rows
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


def test_cli_bench_nav(dataset, tmp_path, capsys):
    from pixelrl.cli import main

    code = main(
        [
            "bench",
            "nav",
            "--dataset",
            str(dataset),
            "--agent",
            "stop",
            "--out",
            str(tmp_path),
            "apartment={rooms: [2, 3]}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "success" in out and "spl" in out and "95% CI" in out
    assert (tmp_path / "episodes.csv").is_file() and (tmp_path / "paths.png").is_file()

    assert (
        main(["bench", "nav", "--dataset", str(tmp_path / "missing.json.gz"), "--agent", "random"])
        == 2
    )
    assert "episode dataset not found" in capsys.readouterr().out
    assert (
        main(
            [
                "bench",
                "nav",
                "--dataset",
                str(dataset),
                "--agent",
                "checkpoint",
                str(tmp_path / "no.pt"),
            ]
        )
        == 2
    )
    assert "checkpoint not found" in capsys.readouterr().out
    assert main(["bench", "nav", "--dataset", str(dataset), "--agent", "walker"]) == 2
