"""Record -> replay on the real X11 backend: a task's scripted solution, recorded through
`pixelrl record --agent expert`, replays with every frame exact.

Two tasks (a Tk app and an Xt app) keep the runtime down. (XeditAppendItem does not replay
exactly: xedit shows the env's random temporary work folder in its title bar; replay reports
that as a divergence at frame 0, which is what it is for.)
"""

from __future__ import annotations

import argparse
import shutil

import gymnasium
import pytest

import pixelrl.envs  # noqa: F401  (registers pixelrl/*)
from pixelrl.commands import record
from pixelrl.envs.recording import EpisodeDataset, replay_dataset

TASKS = ["pixelrl/XDesktop-TkCounterThree-v0", "pixelrl/XDesktop-XcalcMultiply-v0"]


@pytest.mark.parametrize("env_id", TASKS)
def test_x11_solution_records_and_replays_exactly(env_id, tmp_path):
    if env_id not in gymnasium.registry:
        pytest.skip(f"{env_id} is not registered (X11 backend in progress)")
    if not shutil.which("Xvfb"):
        pytest.skip("needs Xvfb (scripts/install_system_deps.sh installs it)")
    out = tmp_path / "demos"
    parser = argparse.ArgumentParser()
    record.add_parser(parser.add_subparsers())
    argv = ["record", "--env", env_id, "--agent", "expert", "--episodes", "1", "--out", str(out)]
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    data = EpisodeDataset(out)
    assert len(data) == 1 and data.episodes[0].success, f"{env_id}: the solution failed"
    (result,) = replay_dataset(data)
    assert result.ok and result.frame_match_rate == 1.0, result
