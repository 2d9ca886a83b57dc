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

With ``--churn N`` it instead connects and disconnects N clients, at most ``--concurrency`` at a
time (a third leave right after connecting, a third after a reset, a third after a few steps),
with the server at ``--log-level info`` and ``--max-sessions`` = ``--concurrency`` (a client
told "busy" retries, as the server asks, and is counted), then stops the server and prints its log's lines by
kind; it exits 1 if the log holds a traceback or an ERROR line, or a client failed::

    python bench/serve_load.py --churn 100 --concurrency 8
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
    if args.churn:
        argv += ["--log-level", "info"]
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


def visit(url: str, i: int, good, busy: list) -> str | None:
    """One client that connects and leaves: right away, after a reset, or after three steps
    (by ``i % 3``); None, or what went wrong. A "busy" answer (every slot taken: a session that
    just left may not be closed on the server yet) is retried as the server asks, up to 10 times
    0.2 s apart, and counted in ``busy``."""
    from openenv.core.generic_client import GenericEnvClient

    rng = random.Random(i)
    for _ in range(10):
        try:
            with GenericEnvClient(base_url=url, message_timeout_s=60).sync() as client:
                client.connect()
                if i % 3 >= 1:
                    client.reset(seed=i)
                for _ in range(3 if i % 3 == 2 else 0):
                    if client.step(good(rng)).done:
                        client.reset(seed=rng.randrange(2**31))
            return None
        except RuntimeError as e:
            if "busy:" not in str(e):
                return f"client {i}: {type(e).__name__}: {e}"
            busy.append(i)
            time.sleep(0.2)
        except Exception as e:  # noqa: BLE001  (reported, counted)
            return f"client {i}: {type(e).__name__}: {e}"
    return f"client {i}: busy 10 times"


LOG_KINDS = (  # (kind, how a line of it starts or what it holds), the first that matches
    ("traceback", "Traceback"),
    ("ERROR", "ERROR"),
    ("WARNING", "WARNING"),
    ("session ended (info)", "session of "),
    ("WebSocket accepted (info)", '"WebSocket /ws" [accepted]'),
    ("connection open (info)", "connection open"),
    ("connection closed (info)", "connection closed"),
    ("other INFO", "INFO"),
)


def log_kinds(text: str) -> dict[str, int]:
    """The server log's lines by kind (:data:`LOG_KINDS`; a line of none is "other")."""
    counts = dict.fromkeys([k for k, _ in LOG_KINDS] + ["other"], 0)
    for line in text.splitlines():
        kind = next((k for k, mark in LOG_KINDS if mark in line), "other")
        counts[kind] += 1
    return counts


def churn(args, url: str, good, busy: list) -> list[str]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        return [e for e in pool.map(lambda i: visit(url, i, good, busy), range(args.churn)) if e]


def stop_server(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--env-kwargs", default='{"screen_size": [320, 240]}')
    p.add_argument("--images", choices=("png", "lists"), default="png")
    p.add_argument("--clients", default="1,4,8", help="client counts, one level each")
    p.add_argument("--seconds", type=float, default=10.0, help="per level")
    p.add_argument("--max-steps", type=int, default=20000, help="per level, all clients")
    p.add_argument("--bad-every", type=int, default=10, help="a bad action every N steps (0: none)")
    p.add_argument("--churn", type=int, default=0, help="clients that connect and leave (0: off)")
    p.add_argument("--concurrency", type=int, default=8, help="--churn: clients at once at most")
    args = p.parse_args()
    if args.churn < 0 or args.concurrency < 1:
        p.error("--churn must be >= 0 and --concurrency >= 1")
    args.clients = [int(c) for c in args.clients.split(",")]
    kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    good, bad = actions_for(args.env, kwargs)
    if args.churn:
        args.clients = [args.concurrency]  # the server's --max-sessions
        with tempfile.TemporaryDirectory() as folder:
            proc, log, url = start_server(args, folder)
            start, cpu = time.monotonic(), os.times()
            try:
                busy: list[int] = []
                failures = churn(args, url, good, busy)
                time.sleep(1.0)  # the last sessions close
                alive = proc.poll() is None
            finally:
                stop_server(proc)
                log.close()
            text = (Path(folder) / "server.log").read_text()
        spent = os.times()
        cpu_s = sum(getattr(spent, k) - getattr(cpu, k) for k in ("user", "system",
                    "children_user", "children_system"))  # fmt: skip
        counts = log_kinds(text)
        print(f"{args.env} {args.env_kwargs}: {args.churn} clients connected and left, at most "
              f"{args.concurrency} at once, in {time.monotonic() - start:.1f} s wall "
              f"({cpu_s:.1f} CPU s, clients and server); failed clients: {len(failures)}; "
              f"'busy' answers retried: {len(busy)}; "
              f"server alive at the end: {alive}\n")  # fmt: skip
        print("| server log lines | count |\n|---|---:|")
        for kind, n in counts.items():
            print(f"| {kind} | {n} |")
        for failure in failures[:5]:
            print(failure, file=sys.stderr)
        bad = failures or counts["traceback"] or counts["ERROR"] or not alive
        if bad:
            print("\n" + "\n".join(text.splitlines()[:40]), file=sys.stderr)
        raise SystemExit(1 if bad else 0)
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
            stop_server(proc)
            log.close()


if __name__ == "__main__":
    main()
