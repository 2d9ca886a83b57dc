"""What a TRL environment's tool call costs in-process and behind ``pixelrl serve`` (loopback).

Starts ``pixelrl serve ENV`` (a subprocess on a free loopback port), makes
``environment_factory(ENV)`` and ``environment_factory(ENV, url=...)``, and plays the same
seeded episodes with the same tool calls on both (clicks at random points; a new episode when one
ends), checking that every answer (image, text, reward) is the same. Prints one Markdown row a
side: tool calls, wall seconds, calls/s, and this process's CPU seconds (the server's own CPU is
printed apart). One torch thread; nothing leaves loopback.

    python bench/trl_remote_env.py                      # Desktop-ClickButton, 320x240, 200 calls
    python bench/trl_remote_env.py --env pixelrl/PointNav-v0 --env-kwargs '{"width": 64, "height": 64}'
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_load import start_server, stop_server  # noqa: E402


def calls_for(env_id: str, rng: random.Random, size) -> tuple[str, dict]:
    if "Nav" in env_id:
        return rng.choice([("move_forward", {"steps": 2}), ("turn_left", {"times": 1}),
                           ("turn_right", {"times": 1})])  # fmt: skip
    return "click", {"x": rng.randrange(size[0]), "y": rng.randrange(size[1])}


def play(env, env_id: str, calls: int, size) -> tuple[list, float, float]:
    rng, seen, seed = random.Random(0), [], 0
    cpu0, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    seen.append(env.reset(seed=seed))
    for _ in range(calls):
        name, kwargs = calls_for(env_id, rng, size)
        image, text = getattr(env, name)(**kwargs)
        seen.append((np.asarray(image["image"]).tobytes(), text["text"]))
        if "episode is over" in text["text"]:
            seen.append(env.get_reward())
            seed += 1
            seen.append(env.reset(seed=seed))
    seen.append(env.get_reward())
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    return (
        seen,
        time.perf_counter() - start,
        (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
    )


def main() -> None:
    import torch

    from pixelrl.trl_env import environment_factory

    torch.set_num_threads(1)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--env-kwargs", default='{"screen_size": [320, 240]}')
    p.add_argument("--calls", type=int, default=200)
    args = p.parse_args()
    kwargs = json.loads(args.env_kwargs)
    size = kwargs.get("screen_size", (1280, 800))
    server_args = argparse.Namespace(env=args.env, env_kwargs=args.env_kwargs, images="png",
                                     clients=[2], churn=0)  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        proc, log, url = start_server(server_args, folder)
        try:
            rows, answers = [], []
            for side, factory in (("in-process", environment_factory(args.env, **kwargs)),
                                  ("served (loopback)", environment_factory(args.env, url=url, **kwargs))):  # fmt: skip
                env = factory()
                seen, wall, cpu = play(env, args.env, args.calls, size)
                env._close()
                answers.append(seen)
                rows.append((side, wall, cpu))
            server_cpu = sum(
                float(v) for v in Path(f"/proc/{proc.pid}/stat").read_text().split()[13:15]
            )
            server_cpu /= __import__("os").sysconf("SC_CLK_TCK")
        finally:
            stop_server(proc)
            log.close()
    same = answers[0] == answers[1]
    print(f"{args.env} {args.env_kwargs}: {args.calls} tool calls a side, seeds from 0; the same "
          f"answers (images, texts, rewards) on both sides: {same}\n")  # fmt: skip
    print("| side | calls | wall s | calls/s | CPU s (this process) |\n|---|---:|---:|---:|---:|")
    for side, wall, cpu in rows:
        print(f"| {side} | {args.calls} | {wall:.1f} | {args.calls / wall:.0f} | {cpu:.1f} |")
    print(f"\nserver process CPU s (start-up and the served side): {server_cpu:.1f}")
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
