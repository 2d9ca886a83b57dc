"""Recording throughput: steps/s of a GUI env played by its expert (``expert_action``), bare
and recorded (PNG frames), then load and replay speed and bytes per step.

    .venv/bin/python bench/recording.py --env pixelrl/Desktop-FillForm-v0 --episodes 10
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import gymnasium

import pixelrl.envs  # noqa: F401
from pixelrl.envs.recording import EpisodeDataset, RecordEpisodes, replay_dataset


def play(env, episodes: int, seed: int) -> int:
    steps = 0
    for k in range(episodes):
        env.reset(seed=seed + k)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.unwrapped.expert_action())
            done = terminated or truncated
            steps += 1
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="pixelrl/Desktop-FillForm-v0")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    args = parser.parse_args()
    kwargs = {"screen_size": (args.width, args.height)} if "Desktop" in args.env else {}
    root = Path(tempfile.mkdtemp(prefix="pixelrl-bench-rec-")) / "demos"
    import pandas  # noqa: F401  (pyarrow imports it on first use: keep that out of the timing)
    import pyarrow.parquet  # noqa: F401

    try:
        env = gymnasium.make(args.env, **kwargs)
        t = time.perf_counter()
        steps = play(env, args.episodes, 0)
        bare = steps / (time.perf_counter() - t)
        env.close()

        env = RecordEpisodes(gymnasium.make(args.env, **kwargs), root)
        t = time.perf_counter()
        play(env, args.episodes, 0)
        recorded = steps / (time.perf_counter() - t)
        env.close()

        t = time.perf_counter()
        data = EpisodeDataset(root)
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        results = replay_dataset(data)
        replay = steps / (time.perf_counter() - t)
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        exact = sum(r.ok for r in results)
        print(f"env {args.env} {kwargs}, {args.episodes} episodes, {steps} steps")
        print(f"{'measure':<28} {'value':>12}")
        print(f"{'bare env steps/s':<28} {bare:>12.1f}")
        print(f"{'recorded steps/s':<28} {recorded:>12.1f}")
        print(f"{'recording overhead':<28} {bare / recorded:>11.2f}x")
        print(f"{'load + validate (s)':<28} {load_s:>12.3f}")
        print(f"{'replay steps/s':<28} {replay:>12.1f}")
        print(f"{'bytes per step':<28} {size / steps:>12.0f}")
        print(f"{'episodes replayed exactly':<28} {exact:>9}/{len(results)}")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
