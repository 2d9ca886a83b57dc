"""Our nav measures against habitat-lab's own classes, on the shortest-path expert's paths.

Generates a PointNav (or ObjectNav) dataset over procedural apartments with our generator,
plays the shortest-path expert on each episode in our env, and replays every recorded path
through habitat-lab's ``DistanceToGoal`` / ``Success`` / ``SPL`` / ``SoftSPL`` (with our exact
geodesic as the simulator's ``geodesic_distance``; the compiled modules habitat imports are
stubbed by tests/envs/habitat_oracle.py). Prints max |dSPL|, max |dSoftSPL|, max |d distance|,
and the Success flips (target: 0).

    nice -n 19 .venv/bin/python bench/habitat_parity.py --episodes 500
    nice -n 19 .venv/bin/python bench/habitat_parity.py --task objectnav --episodes 100
    nice -n 19 .venv/bin/python bench/habitat_parity.py --house --episodes 200  # two storeys

Needs habitat-lab (``make setup`` installs it).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "envs"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--task", default="pointnav", choices=("pointnav", "objectnav"))
    parser.add_argument("--scenes", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--house", action="store_true", help="the two-storey house (envs/nav/house.py) instead"
    )
    args = parser.parse_args()

    from habitat_oracle import habitat

    hab = habitat()
    from habitat.datasets.object_nav.object_nav_dataset import ObjectNavDatasetV1
    from habitat.datasets.pointnav.pointnav_dataset import PointNavDatasetV1
    from test_habitat_oracle import _play_expert, replay_in_habitat

    from pixelrl.envs.nav.env import NavEnv
    from pixelrl.envs.nav.sim import generate_dataset

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "eps.json.gz")
        scenes = {"num_scenes": args.scenes}
        if args.house:
            from pixelrl.envs.nav.house import two_storey_house
            from pixelrl.envs.nav.mesh_io import export_glb

            export_glb(two_storey_house(), os.path.join(tmp, "house.glb"))
            scenes = {"scenes": [os.path.join(tmp, "house.glb")], "floor_levels": [0.0, 3.0]}
        generate_dataset(path, args.episodes, seed=args.seed, task=args.task, **scenes)
        t_gen = time.time() - t0
        cls = PointNavDatasetV1 if args.task == "pointnav" else ObjectNavDatasetV1
        theirs = cls()
        with gzip.open(path, "rt") as f:
            theirs.from_json(f.read())
        levels = {"floor_levels": scenes["floor_levels"]} if args.house else {}
        env = NavEnv(task=args.task, dataset_path=path, width=8, height=8, **levels)
        rows = []
        for k, t in enumerate(theirs.episodes):
            positions, stopped, info = _play_expert(env, k)
            m = replay_in_habitat(
                t, positions, stopped, env.state.field, args.task, env.cfg.success_radius
            )
            soft = info.get("soft_spl", info.get("softspl"))
            rows.append(
                (
                    m["success"],
                    info["success"],
                    m["spl"],
                    info["spl"],
                    m["soft_spl"],
                    soft,
                    m["distance_to_goal"],
                    info["distance_to_goal"],
                )
            )
        env.close()
    r = np.array(rows, dtype=np.float64)
    flips = int((r[:, 0] != r[:, 1]).sum())
    print(
        f"habitat-lab {hab.__version__}, task {args.task}, {len(r)} episodes, "
        f"{'the two-storey house' if args.house else f'{args.scenes} apartments'} (generation {t_gen:.0f} s, total {time.time() - t0:.0f} s)"
    )
    print(f"success (habitat / ours): {r[:, 0].mean():.4f} / {r[:, 1].mean():.4f}")
    print(f"SPL     (habitat / ours): {r[:, 2].mean():.4f} / {r[:, 3].mean():.4f}")
    print(f"Success flips: {flips}")
    print(f"max |dSPL|: {np.abs(r[:, 2] - r[:, 3]).max():.3g}")
    print(f"max |dSoftSPL|: {np.abs(r[:, 4] - r[:, 5]).max():.3g}")
    print(f"max |d distance_to_goal| at the end: {np.abs(r[:, 6] - r[:, 7]).max():.3g} m")


if __name__ == "__main__":
    main()
