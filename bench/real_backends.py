"""Throughput of the real GUI backends: X11 desktop (Xvfb, 1280x800) and MiniWoB++ (Chromium).

Prints, for each backend, the screenshot latency (mean / p50 / p95 in ms) and steps per second
of a full ``env.step`` (act, let the screen settle, screenshot, a11y, reward). Steps are
pointer moves to random on-screen points, which change nothing an evaluator looks at, so every
step costs the same. Run: ``.venv/bin/python bench/real_backends.py [--steps N] [--shots N]``.
"""

from __future__ import annotations

import argparse
import shutil
import time

import numpy as np
from tqdm import tqdm

from pixelrl.envs.gui_action import Action


def time_screenshots(env, n: int, label: str) -> np.ndarray:
    times = []
    for _ in tqdm(range(n), desc=f"{label} screenshots", leave=False):
        t0 = time.perf_counter()
        env.screenshot()
        times.append(time.perf_counter() - t0)
    return np.array(times) * 1000


def time_steps(env, n: int, label: str, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    width, height = env.screen_size
    env.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in tqdm(range(n), desc=f"{label} steps", leave=False):
        x, y = int(rng.integers(1, width - 1)), int(rng.integers(1, height - 1))
        _, _, terminated, truncated, _ = env.step(Action.move(x, y))
        if terminated or truncated:
            env.reset()
    return n / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--shots", type=int, default=100)
    args = parser.parse_args()
    rows = []

    if shutil.which("Xvfb"):
        from pixelrl.envs.x11.env import XDesktopEnv

        for settle_s in (0.05, 0.0):
            env = XDesktopEnv(
                "TkCounterThree", screen_size=(1280, 800), max_steps=10**6, settle_s=settle_s
            )
            try:
                env.reset(seed=0)
                shots = time_screenshots(env, args.shots, "x11")
                sps = time_steps(env, args.steps, "x11")
            finally:
                env.close()
            rows.append((f"X11 1280x800 (settle {settle_s * 1000:.0f} ms)", shots, sps))
    else:
        print("skipping X11: Xvfb is not installed")

    if shutil.which("chromium") and shutil.which("chromedriver"):
        from pixelrl.envs.web.env import MiniWoBEnv

        env = MiniWoBEnv("click-test-2", max_steps=10**6)
        try:
            env.reset(seed=0)
            shots = time_screenshots(env, args.shots, "miniwob")
            sps = time_steps(env, args.steps, "miniwob")
        finally:
            env.close()
        rows.append(("MiniWoB++ click-test-2 160x210", shots, sps))
    else:
        print("skipping MiniWoB++: Chromium / chromedriver are not installed")

    print(f"\n{'backend':<36} {'shot mean ms':>12} {'p50':>7} {'p95':>7} {'steps/s':>9}")
    for name, shots, sps in rows:
        p50, p95 = np.percentile(shots, [50, 95])
        print(f"{name:<36} {shots.mean():>12.2f} {p50:>7.2f} {p95:>7.2f} {sps:>9.1f}")


if __name__ == "__main__":
    main()
