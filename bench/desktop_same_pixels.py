"""Hashes of the emulated desktop's observations, rewards and infos, to show a speed-up changes none.

    .venv/bin/python bench/desktop_same_pixels.py --write main.json   # on the reference code
    .venv/bin/python bench/desktop_same_pixels.py --check main.json   # after a change

Runs ``pixelrl/Desktop-Mixed-v0`` for ``--seeds`` episodes-seeds × ``--steps`` steps at 1280×800
and 320×240, once with the scripted expert and once with seeded uniform actions (which leave the
expert's path: closed windows, stray drags, typing in the wrong field). Each run's digest is a
SHA-256 over every screenshot, instruction, reward, terminated/truncated flag and ``repr(info)``
(insertion order included). ``--check`` prints a table of the runs that differ (none is the goal).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

SIZES = ((1280, 800), (320, 240))
POLICIES = ("expert", "random")


def run_digest(size: tuple[int, int], policy: str, seed: int, steps: int) -> str:
    """SHA-256 of ``steps`` steps (resets included) of the mixed desktop from ``seed``."""
    from pixelrl.envs.desktop.env import DesktopEnv
    from pixelrl.envs.gui_action import Action, ActionError

    env = DesktopEnv("mixed", screen_size=size, reward="shaped")
    h = hashlib.sha256()

    def add(obs: dict, info: dict) -> None:
        h.update(obs["screenshot"].tobytes())
        h.update(obs["instruction"].encode())
        h.update(repr(info).encode())

    obs, info = env.reset(seed=seed)
    add(obs, info)
    env.action_space.seed(seed)
    for _ in range(steps):
        if policy == "expert":
            action = env.expert_action()
        else:
            try:
                action = Action.from_sample(env.action_space.sample()).validate(size)
            except ActionError:
                continue
        obs, reward, terminated, truncated, info = env.step(action)
        add(obs, info)
        h.update(repr((reward, terminated, truncated)).encode())
        if terminated or truncated:
            obs, info = env.reset()
            add(obs, info)
    return h.hexdigest()


def all_digests(seeds: int, steps: int) -> dict[str, str]:
    return {
        f"{w}x{h}/{policy}/seed{seed}": run_digest((w, h), policy, seed, steps)
        for (w, h) in SIZES
        for policy in POLICIES
        for seed in range(seeds)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=300)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", help="JSON file to write the digests to")
    group.add_argument("--check", help="JSON file of reference digests to compare with")
    args = parser.parse_args()
    t0 = time.process_time()
    digests = all_digests(args.seeds, args.steps)
    cpu = time.process_time() - t0
    if args.write:
        with open(args.write, "w") as f:
            json.dump({"seeds": args.seeds, "steps": args.steps, "digests": digests}, f, indent=1)
        print(f"wrote {len(digests)} digests to {args.write} ({cpu:.1f} CPU s)")
        return
    with open(args.check) as f:
        reference = json.load(f)
    if (reference["seeds"], reference["steps"]) != (args.seeds, args.steps):
        sys.exit(f"{args.check} holds --seeds {reference['seeds']} --steps {reference['steps']}")
    differ = [k for k, v in digests.items() if reference["digests"].get(k) != v]
    print(f"{'run':>28} {'same':>5}")
    for k in digests:
        print(f"{k:>28} {'yes' if k not in differ else 'NO':>5}")
    print(f"{len(digests) - len(differ)}/{len(digests)} runs identical ({cpu:.1f} CPU s)")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
