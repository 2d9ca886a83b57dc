"""A recording killed with SIGKILL mid-episode leaves every finished episode loadable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium
import recording_toy_env  # noqa: F401

from pixelrl.envs.recording import EpisodeDataset, RecordEpisodes, replay_dataset

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys, time
    import gymnasium, recording_toy_env
    from pixelrl.envs.actions import Action
    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(gymnasium.make("recording_toy/ToyGUI-v0"), sys.argv[1])
    for k in range(10_000):
        env.reset(seed=k)
        env.step(Action.type_text("abc"))
        print("mid", k, flush=True)
        time.sleep(0.05)
        env.step(env.unwrapped.expert_action())
        print("finished", k, flush=True)
    """
)


def test_sigkill_mid_episode_keeps_finished_episodes(tmp_path):
    root = tmp_path / "demos"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(Path(__file__).parent)]))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    finished = -1
    try:
        deadline = time.monotonic() + 60
        for line in child.stdout:
            word, k = line.split()
            if word == "finished":
                finished = int(k)
            elif int(k) >= 4:  # in the middle of episode k (>= 4 finished before it)
                child.send_signal(signal.SIGKILL)
                break
            assert time.monotonic() < deadline, "the recorder child is too slow"
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    data = EpisodeDataset(root)
    assert not data.problems
    assert data.episode_indices == list(range(finished + 1))  # every finished one, no partial
    assert all(r.ok for r in replay_dataset(data))
    # a new run resumes the dataset, cleaning what the killed episode left behind
    rec = RecordEpisodes(gymnasium.make("recording_toy/ToyGUI-v0"), root, resume=True)
    rec.reset(seed=100)
    rec.step(rec.unwrapped.expert_action())
    rec.close()
    data = EpisodeDataset(root)
    assert (
        data.episode_indices == list(range(finished + 2))
        and data.episodes[finished + 1].seed == 100
    )
