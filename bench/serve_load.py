"""Load test of ``pixelrl serve``: N OpenEnv clients in threads against one loopback server.

Starts ``pixelrl serve ENV --port 0`` on 127.0.0.1 (its own subprocess, stopped at the end), then
for each client count plays for ``--seconds`` with OpenEnv's ``GenericEnvClient``: each client
resets with its own seed, steps random valid actions (a reset when an episode ends) and, every
``--bad-every`` steps, sends a bad action, which must come back as an error while the session
goes on. Bounded in time (``--seconds`` a level) and count (``--max-steps`` a level); nothing
leaves loopback. Prints one Markdown row a level: clients, steps, steps/s, bad requests answered,
unexpected errors, the server's RSS before and after.

    python bench/serve_load.py                                   # the desktop, 1 / 4 / 8 clients
    python bench/serve_load.py --env pixelrl/PointNav-v0 --env-kwargs '{"width": 64, "height": 64}'
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(args, folder: str):
    argv = [
        sys.executable,
        "-m",
        "pixelrl",
        "serve",
        args.env,
        "--port",
        "0",
        "--host",
        "127.0.0.1",
    ]
    argv += ["--images", args.images, "--max-sessions", str(max(args.clients))]
    if args.env_kwargs:
        argv += ["--env-kwargs", args.env_kwargs]
    log = open(Path(folder) / "server.log", "w")  # noqa: SIM115  (closed by the caller)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, cwd=folder)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 1.0)[0]:
            line = proc.stdout.readline()
            if line.startswith("serving "):
                return proc, log, line.split(" on ")[1].split()[0]
    proc.kill()
    raise SystemExit(f"the server did not start; see {log.name}")


def actions_for(env: str, kwargs: dict):
    """A random valid action and a bad one, as JSON-safe dicts, for the env's kind."""
    if "Nav" in env:
        return (lambda rng: {"action": rng.choice([1, 1, 2, 3])}), {"action": 99}
    width, height = kwargs.get("screen_size", (1280, 800))

    def good(rng):
        if rng.random() < 0.5:
            return {"kind": "move", "x": rng.randrange(width), "y": rng.randrange(height)}
        return {
            "action_text": f"pyautogui.click(x={rng.randrange(width)}, y={rng.randrange(height)})"
        }

    return good, {"action_text": "__import__('os').system('true')"}


def play(url, seed, good, bad, bad_every, stop_at, budget, totals, lock):
    from openenv.core.generic_client import GenericEnvClient

    rng = random.Random(seed)
    steps = resets = bad_sent = bad_answered = unexpected = 0
    try:
        with GenericEnvClient(base_url=url, message_timeout_s=60).sync() as client:
            client.reset(seed=seed)
            resets += 1
            while time.monotonic() < stop_at and budget():
                if bad_every and (steps + 1) % bad_every == 0:
                    bad_sent += 1
                    try:
                        client.step(bad)
                        unexpected += 1  # a bad action must be refused
                    except RuntimeError as e:
                        bad_answered += "Server error" in str(e)
                try:
                    result = client.step(good(rng))
                    steps += 1
                    if result.done:
                        client.reset(seed=rng.randrange(2**31))
                        resets += 1
                except RuntimeError:
                    unexpected += 1
                    client.reset(seed=rng.randrange(2**31))
    except Exception as e:  # a dropped connection counts, and ends this client
        unexpected += 1
        print(f"client {seed}: {type(e).__name__}: {e}", file=sys.stderr)
    with lock:
        for key, value in dict(
            steps=steps, resets=resets, bad_sent=bad_sent, bad_answered=bad_answered,
            unexpected=unexpected,
        ).items():  # fmt: skip
            totals[key] += value


def level(url, n, args, good, bad, pid):
    totals = dict.fromkeys(("steps", "resets", "bad_sent", "bad_answered", "unexpected"), 0)
    lock = threading.Lock()
    before = rss_mib(pid)
    start = time.monotonic()
    stop_at = start + args.seconds

    def budget():  # the level's step cap, shared by its clients (read without the lock: a bound)
        return totals["steps"] < args.max_steps

    threads = [
        threading.Thread(
            target=play,
            args=(url, 1000 * n + i, good, bad, args.bad_every, stop_at, budget, totals, lock),
        )
        for i in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.seconds + 120)
    elapsed = time.monotonic() - start
    time.sleep(1.0)  # sessions close
    return totals, elapsed, before, rss_mib(pid)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--env-kwargs", default='{"screen_size": [320, 240]}')
    p.add_argument("--images", choices=("png", "lists"), default="png")
    p.add_argument("--clients", default="1,4,8", help="client counts, one level each")
    p.add_argument("--seconds", type=float, default=10.0, help="per level")
    p.add_argument("--max-steps", type=int, default=20000, help="per level, all clients")
    p.add_argument("--bad-every", type=int, default=10, help="a bad action every N steps (0: none)")
    args = p.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    good, bad = actions_for(args.env, kwargs)
    with tempfile.TemporaryDirectory() as folder:
        proc, log, url = start_server(args, folder)
        try:
            idle = rss_mib(proc.pid)
            # warm-up, untimed: the first session builds what later ones reuse (imports, fonts)
            warm = argparse.Namespace(**{**vars(args), "seconds": 2.0, "bad_every": 0})
            level(url, 1, warm, good, bad, proc.pid)
            print(f"{args.env} {args.env_kwargs} images={args.images} on {url}; server RSS idle "
                  f"{idle:.0f} MiB; {os.cpu_count()} CPUs seen (clients and server share them)\n")  # fmt: skip
            print("| clients | s | steps | steps/s | resets | bad requests answered | unexpected "
                  "errors | server RSS before → after (MiB) |")  # fmt: skip
            print("|---:|---:|---:|---:|---:|---:|---:|---|")
            for n in args.clients:
                t, elapsed, before, after = level(url, n, args, good, bad, proc.pid)
                print(f"| {n} | {elapsed:.1f} | {t['steps']} | {t['steps'] / elapsed:.0f} | "
                      f"{t['resets']} | {t['bad_answered']}/{t['bad_sent']} | {t['unexpected']} | "
                      f"{before:.0f} → {after:.0f} |", flush=True)  # fmt: skip
            alive = proc.poll() is None
            print(f"\nserver alive at the end: {alive}; RSS {rss_mib(proc.pid):.0f} MiB")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


if __name__ == "__main__":
    main()
