"""The screen reader's line cache: CPU a frame with and without it, on MiniWoB++ oracle episodes
read in the order they were played (as the pointer policy's maps read them), and whether every
frame reads to the same words.

    .venv/bin/python bench/reader_line_cache.py                       # 6 tasks x 6 episodes, live
    .venv/bin/python bench/reader_line_cache.py --episodes 10 --tasks click-checkboxes-large
    .venv/bin/python bench/reader_line_cache.py --demos RUN_DEMOS     # a gui/miniwob run's
                                                                      # policy.bc_demos folder

Both readers keep the frame cache (64 frames, as in the env); "off" has ``line_cache_size=0``.
Frames are taken first (a live browser would share the pinned core), then each reader, fresh and
warmed on one unrelated frame, reads them all on one core; CPU by ``time.process_time``.
"""

from __future__ import annotations

import argparse
import glob
import os
import time

import numpy as np

TASKS = ("click-checkboxes-large", "click-tab-2", "click-button", "click-collapsible-2",
         "enter-text", "login-user")  # fmt: skip


def oracle_frames(task: str, episodes: int, seed: int) -> list[np.ndarray]:
    """The screenshots of ``episodes`` oracle episodes of ``task`` on training seeds, in order."""
    import gymnasium

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.families import expert_of

    env = gymnasium.make(f"pixelrl/MiniWoB-{task}-v0")
    frames = []
    try:
        expert = expert_of(env)
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + 2 * episode)  # even: the training seeds
            expert.reset()
            frames.append(obs["screenshot"])
            for _ in range(30):
                obs, _, terminated, truncated, _ = env.step(expert.act())
                frames.append(obs["screenshot"])
                if terminated or truncated:
                    break
    finally:
        env.close()
    return frames


def demo_frames(folder: str, episodes: int) -> dict[str, list[np.ndarray]]:
    """A ``policy.bc_demos`` folder's recorded frames, ``episodes`` a task, in order."""
    from PIL import Image

    out = {}
    for task_dir in sorted(glob.glob(os.path.join(folder, "*", "frames"))):
        task = os.path.basename(os.path.dirname(task_dir))
        paths = []
        for episode in sorted(glob.glob(os.path.join(task_dir, "episode_*")))[:episodes]:
            paths += sorted(glob.glob(os.path.join(episode, "frame_*.png")))
        out[task] = [np.asarray(Image.open(p).convert("RGB")) for p in paths]
    if not out:
        raise SystemExit(
            f"{folder}: no <task>/frames/episode_*/ folders (a policy.bc_demos folder)"
        )
    return out


def timed(reader, frames: list[np.ndarray]) -> tuple[float, list]:
    start = time.process_time()
    words = [reader.read(frame) for frame in frames]
    return time.process_time() - start, words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--episodes", type=int, default=6, help="episodes a task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--demos", help="read a policy.bc_demos folder's frames instead")
    args = parser.parse_args()
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    from pixelrl.vision.reader import ScreenReader

    if args.demos:
        sources = demo_frames(args.demos, args.episodes)
    else:
        sources = {task: oracle_frames(task, args.episodes, args.seed) for task in args.tasks}
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    warm = next(iter(sources.values()))[0][::-1].copy()  # loads the models; not a frame read below
    head = (f"{'task':<26} {'frames':>6} {'lines':>6} {'seen before':>11} {'CPU ms/frame off':>16} "
            f"{'on':>6} {'on/off':>6} {'same words':>10}")  # fmt: skip
    print(head + "\n" + "-" * len(head))
    total = {"frames": 0, "off": 0.0, "on": 0.0, "lines": 0, "hits": 0, "same": True}
    for task, frames in sources.items():
        off, on = ScreenReader(line_cache_size=0), ScreenReader()
        off.read(warm), on.read(warm)
        off._cache.clear(), on._cache.clear(), on._lines.clear()
        on._lines.hits = on._lines.misses = 0
        cpu_off, words_off = timed(off, frames)
        cpu_on, words_on = timed(on, frames)
        same = words_off == words_on
        lines = on.line_hits + on.line_misses
        print(f"{task:<26} {len(frames):>6} {lines:>6} {on.line_hits / max(1, lines):>11.2f} "
              f"{1000 * cpu_off / len(frames):>16.1f} {1000 * cpu_on / len(frames):>6.1f} "
              f"{cpu_on / cpu_off:>6.2f} {'yes' if same else 'NO':>10}")  # fmt: skip
        total["frames"] += len(frames)
        total["off"] += cpu_off
        total["on"] += cpu_on
        total["lines"] += lines
        total["hits"] += on.line_hits
        total["same"] &= same
    n = total["frames"]
    print(f"{'all':<26} {n:>6} {total['lines']:>6} {total['hits'] / max(1, total['lines']):>11.2f} "
          f"{1000 * total['off'] / n:>16.1f} {1000 * total['on'] / n:>6.1f} "
          f"{total['on'] / total['off']:>6.2f} {'yes' if total['same'] else 'NO':>10}")  # fmt: skip


if __name__ == "__main__":
    main()
