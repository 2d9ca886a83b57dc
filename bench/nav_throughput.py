"""RGB-D frames/s of the embedded navigation simulator, single env and batched, vs MiniWorld.

    .venv/bin/python bench/nav_throughput.py [--steps 200] [--envs 16] [--res 64 128 256]
        [--renderer raster embree] [--render-threads N]
    taskset -c 1 .venv/bin/python bench/nav_throughput.py --render-only --render-threads 1
    .venv/bin/python bench/nav_throughput.py --resets [--res 64 128] [--reset-count 60]
    .venv/bin/python bench/nav_throughput.py --reset-latency [--res 128] [--reset-count 200]

For each resolution and renderer (``raster``: the numba z-buffer rasterizer, the default;
``embree``: one ray per pixel): ``NavEnv`` stepping one agent (frames/s = steps/s, each step an
RGB and a depth frame), ``NavVectorEnv`` stepping ``--envs`` agents (frames/s = agents x
steps/s, all agents rendered in one renderer call), and the renderer alone for the same batch.
``--render-only`` times just the renderer (no env logic, no MiniWorld), in frames per wall
second and per CPU second of the process: with ``taskset`` and ``--render-threads 1`` these are
per-core figures, the second one undeflated by other jobs sharing the core. Actions are
random (move_forward twice as often as each turn) in procedural apartments; episodes reset as
they end. MiniWorld (``pip install miniworld``, pyglet/OpenGL) is measured at the same
resolution when it can open a display: an Xvfb is started for it when none is set. Its RGB-D
frame is a ``step`` (RGB observation) plus ``render_depth()``. Each figure is the best of
``--trials`` timings (other processes only ever slow a run down); figures still depend on the
machine and its load, and nothing here asserts a time.

``--resets`` prints, instead of frames/s, what an episode start costs on the default PointNav
training setting (``embodied/pointnav``: depth only, 16 procedural apartments of 2-5 rooms):
``NavEnv.reset()`` with generated episodes (habitat's generator rules, then the episode's
geodesic field and SPL's l) and with episodes walked from a ``.json.gz`` dataset of the same
scenes (their stored l; one Dijkstra for the goal's field), in ms per reset and resets/s. Grids and geodesic graphs are built before timing (they
are built once per scene and env), so the figures are the steady state a trainer sees.

``--reset-latency`` times a newcomer's env, ``gym.make("pixelrl/PointNav-v0", width=res,
height=res)`` with nothing else set, one ``reset()`` at a time: median / p90 / max ms under the
env's default episode rules (the cheap grid rules, ``sim.FAST_POINTNAV_RULES``) and under
habitat's exact rules (``episode_rules={"geodesic": "exact"}``, the default before), timed in
alternating blocks so both see the same load. Each reset after the first is unseeded (an
autoreset: the default rules keep an agent's goal for 4 starts). It also times the step that
ends an episode (``stop`` at once): where the exact DistanceToGoal is searched, and, under the
default rules, the exact l of SPL that the reset no longer computes. The first reset of each
env (scene grids, geodesic graphs) is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HABITAT_GPU_RGBD_128 = 2050.0  # habitat-sim's figure: 1 process, GPU, RGB-D 128 px


def _actions(rng: np.random.Generator, n: int, shape=()) -> np.ndarray:
    return rng.choice([1, 1, 2, 3], size=(n, *shape))


def _best_of(trials: int, run) -> float:
    """The best of ``trials`` timings: other processes on a shared machine only slow runs down."""
    return max(run() for _ in range(trials))


def bench_single(res: int, steps: int, trials: int, **render: object) -> float:
    from pixelrl.envs.nav.env import NavEnv

    env = NavEnv(width=res, height=res, sensors=("rgb", "depth"), num_scenes=4, **render)
    env.reset(seed=0)
    acts = _actions(np.random.default_rng(0), steps)
    for a in acts[:5]:  # warm-up (grids, geodesic graph)
        env.step(a)

    def run() -> float:
        start = time.perf_counter()
        for a in acts:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return steps / (time.perf_counter() - start)

    fps = _best_of(trials, run)
    env.close()
    return fps


def bench_vector(
    res: int, steps: int, n_envs: int, trials: int, render_only: bool = False, **render: object
) -> tuple[float, float]:
    """(vector env frames/s, renderer-alone frames/s, renderer-alone frames per CPU second of
    this process: what sharing the machine does not deflate); the first is NaN with
    ``render_only``."""
    from pixelrl.envs.nav.vector_env import NavVectorEnv

    venv = NavVectorEnv(
        n_envs, width=res, height=res, sensors=("rgb", "depth"), num_scenes=4, **render
    )
    venv.reset(seed=0)
    acts = _actions(np.random.default_rng(0), steps, (n_envs,))
    for a in acts[:3]:
        venv.step(a)

    def run() -> float:
        start = time.perf_counter()
        for a in acts:
            venv.step(a)
        return n_envs * steps / (time.perf_counter() - start)

    env_fps = float("nan") if render_only else _best_of(trials, run)
    # The renderer alone on the same batch of poses: the cost of pixels without task logic.
    states = venv.states
    idx = np.array([s.scene_index for s in states])
    pos = np.stack([s.position for s in states])
    yaw = np.array([s.yaw for s in states])
    reps = max(3, steps // 4)

    cpu_rates = []

    def render() -> float:
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(reps):
            venv.sim.renderer.render(idx, pos, yaw, sensors=("rgb", "depth"))
        cpu_rates.append(n_envs * reps / (time.process_time() - cpu))
        return n_envs * reps / (time.perf_counter() - start)

    render_fps = _best_of(trials, render)
    venv.close()
    return env_fps, render_fps, max(cpu_rates)


POINTNAV_RECIPE = dict(  # embodied/configs/pointnav.yaml's env kwargs (depth only)
    sensors=("depth",),
    normalize_depth=True,
    num_scenes=16,
    scene_seed=0,
    apartment={"rooms": [2, 5]},
)


def bench_resets(res: int, count: int, trials: int, dataset_dir: str) -> tuple[float, float]:
    """Mean seconds per ``reset()``: (generated episodes, dataset episodes), best of ``trials``."""
    from pixelrl.envs.nav.env import NavEnv
    from pixelrl.envs.nav.geodesic import geodesic_graph
    from pixelrl.envs.nav.sim import generate_dataset

    def timed(env) -> float:
        env.reset(seed=0)
        for k in range(len(env.sim.scenes)):  # per-scene structures: built once, not per reset
            geodesic_graph(env.sim.grid(k))

        def run() -> float:
            start = time.perf_counter()
            for _ in range(count):
                env.reset()
            return count / (time.perf_counter() - start)

        rate = _best_of(trials, run)
        env.close()
        return 1.0 / rate

    exact = {"episode_rules": {"geodesic": "exact"}}  # habitat's generator, as this was measured
    generated = timed(NavEnv(width=res, height=res, **POINTNAV_RECIPE, **exact))
    path = os.path.join(dataset_dir, f"pointnav_{res}.json.gz")
    if not os.path.exists(path):
        generate_dataset(path, count, seed=1, **POINTNAV_RECIPE)
    dataset = timed(NavEnv(width=res, height=res, dataset_path=path, **POINTNAV_RECIPE))
    return generated, dataset


def print_resets(args) -> None:
    import tempfile

    print(
        f"NavEnv.reset() cost, PointNav recipe (depth, 16 apartments of 2-5 rooms), "
        f"{args.reset_count} resets, best of {args.trials} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})"
    )
    header = f"{'res':>5} {'generated ms':>13} {'resets/s':>9} {'dataset ms':>11} {'resets/s':>9}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for res in args.res:
            gen, data = bench_resets(res, args.reset_count, args.trials, tmp)
            print(
                f"{res:>5} {gen * 1e3:>13.1f} {1 / gen:>9.0f} {data * 1e3:>11.1f} {1 / data:>9.0f}"
            )


def reset_latency(res: int, count: int, block: int = 20) -> dict[str, dict[str, np.ndarray]]:
    """Per-call ms of ``reset()`` and of the episode-ending ``stop`` for the default
    PointNav env and the same env under exact rules, alternating blocks of ``block`` episodes."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401  (registers the ids)
    from pixelrl.envs.nav.geodesic import geodesic_graph

    settings = {"default": {}, "exact rules": {"episode_rules": {"geodesic": "exact"}}}
    envs = {name: gym.make("pixelrl/PointNav-v0", width=res, height=res, **kw) for name, kw in settings.items()}  # fmt: skip
    times = {name: {"reset": [], "stop": []} for name in settings}
    for env in envs.values():
        env.reset(seed=0)  # first use: scene grids and geodesic graphs
        for k in range(len(env.unwrapped.sim.scenes)):
            geodesic_graph(env.unwrapped.sim.grid(k))
    done = 0
    while done < count:
        n = min(block, count - done)
        for name, env in envs.items():
            for _ in range(n):
                t0 = time.perf_counter()
                env.reset()
                t1 = time.perf_counter()
                env.step(0)
                t2 = time.perf_counter()
                times[name]["reset"].append(t1 - t0)
                times[name]["stop"].append(t2 - t1)
        done += n
    for env in envs.values():
        env.close()
    return {n: {k: np.array(v) * 1e3 for k, v in t.items()} for n, t in times.items()}


def print_reset_latency(args) -> None:
    print(
        f'gym.make("pixelrl/PointNav-v0", width=res, height=res).reset(): ms per call, '
        f"{args.reset_count} episodes a setting in alternating blocks "
        f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}: figures depend on the load)"
    )
    header = (
        f"{'res':>5} {'rules':>12} {'reset median':>13} {'p90':>7} {'max':>7} "
        f"{'stop median':>12} {'p90':>7}"
    )
    print(header)
    print("-" * len(header))
    for res in args.res:
        for name, t in reset_latency(res, args.reset_count).items():
            r, s = t["reset"], t["stop"]
            print(
                f"{res:>5} {name:>12} {np.median(r):>13.1f} {np.percentile(r, 90):>7.1f} "
                f"{r.max():>7.1f} {np.median(s):>12.1f} {np.percentile(s, 90):>7.1f}"
            )


def miniworld_worker(res: int, steps: int, trials: int) -> None:
    """Runs inside a subprocess with DISPLAY set; prints JSON {rgb_fps, rgbd_fps}."""
    import gymnasium as gym
    import miniworld  # noqa: F401  (registers MiniWorld-*)

    env = gym.make("MiniWorld-FourRooms-v0", obs_width=res, obs_height=res)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    acts = rng.choice([2, 2, 0, 1], size=steps)  # move_forward twice as often as each turn
    for a in acts[:5]:
        env.step(int(a))

    def run(depth: bool) -> float:
        start = time.perf_counter()
        for a in acts:
            _, _, term, trunc, _ = env.step(int(a))
            if depth:
                env.unwrapped.render_depth()
            if term or trunc:
                env.reset()
        return steps / (time.perf_counter() - start)

    rgb_fps = _best_of(trials, lambda: run(False))
    rgbd_fps = _best_of(trials, lambda: run(True))
    env.close()
    print(json.dumps({"rgb_fps": rgb_fps, "rgbd_fps": rgbd_fps}))


def bench_miniworld(res: int, steps: int, trials: int) -> tuple[dict | None, str]:
    """MiniWorld figures at ``res`` in a subprocess, or None and why not."""
    import importlib.util

    # Importing miniworld needs a display already (pyglet), so only look for the package here.
    if importlib.util.find_spec("miniworld") is None:
        return None, "MiniWorld is not installed (pip install miniworld)"
    env = dict(os.environ)
    xvfb = None
    if not env.get("DISPLAY"):
        binary = shutil.which("Xvfb")
        if binary is None:
            return (
                None,
                "MiniWorld needs an OpenGL display and neither DISPLAY nor Xvfb is available",
            )
        display = f":{90 + os.getpid() % 100}"
        xvfb = subprocess.Popen(
            [binary, display, "-screen", "0", "640x480x24"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)
        env["DISPLAY"] = display
    try:
        out = subprocess.run(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--miniworld-worker",
                str(res),
                "--steps",
                str(steps),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode != 0 or not lines:
            return None, f"MiniWorld failed to run: {out.stderr.strip().splitlines()[-1:]}"
        return json.loads(
            lines[-1]
        ), "MiniWorld under Xvfb (Mesa software OpenGL)" if xvfb else "MiniWorld on $DISPLAY"
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--res", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument(
        "--renderer", nargs="+", default=["raster", "embree"], choices=["raster", "embree"]
    )
    parser.add_argument(
        "--render-threads", type=int, default=None, help="renderer threads (default: its own)"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="time the renderer alone (no envs, MiniWorld)"
    )
    parser.add_argument("--trials", type=int, default=3, help="best of this many timings")
    parser.add_argument("--no-miniworld", action="store_true")
    parser.add_argument(
        "--resets", action="store_true", help="time NavEnv.reset() (ms, resets/s) instead"
    )
    parser.add_argument(
        "--reset-latency",
        action="store_true",
        help="median/p90/max ms of the default PointNav env's reset(), default vs exact rules",
    )
    parser.add_argument("--reset-count", type=int, default=60, help="resets per timing")
    parser.add_argument("--miniworld-worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.miniworld_worker is not None:
        miniworld_worker(args.miniworld_worker, args.steps, args.trials)
        return 0
    if args.resets:
        print_resets(args)
        return 0
    if args.reset_latency:
        print_reset_latency(args)
        return 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"pixelrl embedded nav simulator, RGB-D frames/s ({cpus} of {os.cpu_count()} CPUs, "
        f"render threads {args.render_threads or 'default'}, load {os.getloadavg()[0]:.1f})"
    )
    if args.render_only:
        header = (
            f"{'res':>5} {'renderer':>8} {f'render only x{args.envs}':>16} {'per CPU-second':>15}"
        )
    else:
        header = (
            f"{'res':>5} {'renderer':>8} {'single env':>11} {f'vector x{args.envs}':>11} "
            f"{'render only':>12} {'MiniWorld':>10} {'vector/MW':>10} {'single/MW':>10}"
        )
    print(header)
    print("-" * len(header))
    notes = []
    for res in args.res:
        mw, note = None, "skipped (--no-miniworld)"
        if not (args.no_miniworld or args.render_only):
            mw, note = bench_miniworld(res, args.steps, args.trials)
        mw_fps = mw["rgbd_fps"] if mw else float("nan")
        for name in args.renderer:
            render = dict(renderer=name, render_threads=args.render_threads)
            vec_steps = max(10, args.steps // 4)
            if args.render_only:
                _, alone, per_cpu = bench_vector(
                    res, vec_steps, args.envs, args.trials, True, **render
                )
                print(f"{res:>5} {name:>8} {alone:>16.0f} {per_cpu:>15.0f}")
                continue
            single = bench_single(res, args.steps, args.trials, **render)
            vec, alone, _ = bench_vector(res, vec_steps, args.envs, args.trials, **render)
            print(
                f"{res:>5} {name:>8} {single:>11.0f} {vec:>11.0f} {alone:>12.0f} {mw_fps:>10.0f}"
                f" {vec / mw_fps:>9.1f}x {single / mw_fps:>9.1f}x"
            )
            if res == 128:
                notes.append(
                    f"128px target: >= 2,000 RGB-D frames/s batched (habitat-sim GPU "
                    f"{HABITAT_GPU_RGBD_128:.0f}); {name}: {vec:.0f} ({vec / HABITAT_GPU_RGBD_128:.2f}x)"
                )
        if args.render_only:
            continue
        if mw:
            notes.append(f"{res}px MiniWorld RGB only: {mw['rgb_fps']:.0f} frames/s ({note})")
        else:
            notes.append(f"{res}px MiniWorld: {note}")
    for n in notes:
        print("note:", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
