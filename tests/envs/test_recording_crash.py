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
import recording_toy_env

from pixelrl.envs.recording import EpisodeDataset, RecordEpisodes, replay_dataset

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys, time
    import gymnasium, recording_toy_env
    from pixelrl.envs.gui_action import Action
    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(gymnasium.make("pixelrl/RecordingToyGUI-v0"), sys.argv[1])
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
    rec = RecordEpisodes(gymnasium.make("pixelrl/RecordingToyGUI-v0"), root, resume=True)
    rec.reset(seed=100)
    rec.step(rec.unwrapped.expert_action())
    rec.close()
    data = EpisodeDataset(root)
    assert (
        data.episode_indices == list(range(finished + 2))
        and data.episodes[finished + 1].seed == 100
    )


# `pixelrl record` with a toy env slowed down enough that a SIGKILL lands mid-run.
RECORD_CHILD = textwrap.dedent(
    """
    import sys, time
    import gymnasium, recording_toy_env
    from pixelrl.cli import main

    class Slow(recording_toy_env.ToyGUIEnv):
        def step(self, action):
            time.sleep(0.03)
            return super().step(action)

    gymnasium.register("pixelrl/RecordingSlowToyGUI-v0", entry_point=Slow)
    sys.exit(main(sys.argv[1:]))
    """
)


def test_record_resume_after_sigkill_completes_the_seeds_once(tmp_path):
    """Issue 27: the same `pixelrl record` command with --resume after a SIGKILL records the
    seeds the killed run did not finish, each once (it used to record them all again)."""
    if "pixelrl/RecordingSlowToyGUI-v0" not in gymnasium.registry:  # here: for loading and replay
        gymnasium.register(
            "pixelrl/RecordingSlowToyGUI-v0", entry_point=recording_toy_env.ToyGUIEnv
        )
    root = tmp_path / "demos"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(Path(__file__).parent)]))
    argv = [sys.executable, "-c", RECORD_CHILD, "record", "--env", "pixelrl/RecordingSlowToyGUI-v0",
            "--agent", "expert", "--episodes", "40", "--seed", "100", "--out", str(root)]  # fmt: skip
    child = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL)
    manifest = root / "meta" / "episodes.jsonl"
    try:
        deadline = time.monotonic() + 60
        while not (manifest.exists() and len(manifest.read_text().splitlines()) >= 5):
            assert child.poll() is None, "the recorder ended before it could be killed"
            assert time.monotonic() < deadline, "the recorder child is too slow"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    killed = [e.seed for e in EpisodeDataset(root).episodes.values()]
    assert 5 <= len(killed) < 40 and killed == list(range(100, 100 + len(killed)))

    resumed = subprocess.run(argv + ["--resume"], env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"recording the other {40 - len(killed)}" in resumed.stdout
    data = EpisodeDataset(root)
    assert sorted(e.seed for e in data.episodes.values()) == list(range(100, 140))  # once each
    assert not data.problems and all(r.ok for r in replay_dataset(data))

    again = subprocess.run(argv + ["--resume"], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert again.returncode == 0 and len(EpisodeDataset(root)) == 40
    assert "recording the other 0" in again.stdout
