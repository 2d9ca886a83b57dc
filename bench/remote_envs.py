"""Steps per second of the emulated desktop in this process against the same envs in Ray actors.

    .venv/bin/python bench/remote_envs.py [--envs 32 128] [--seconds 3] [--size 320x240]
    .venv/bin/python bench/remote_envs.py --miniwob click-button [--workers 1 2 4]

Steps ``pixelrl/Desktop-Mixed-v0`` (a random task family per episode) as a ``SyncVectorEnv`` of
``--envs`` envs (``SAME_STEP`` autoreset, as the trainers run it) and as a
``pixelrl.envs.remote.RayVectorEnv`` of the same envs, split into 2 actors (and, up to 32 envs,
into one actor per env), on a local Ray cluster of all this machine's CPUs, for each ``--envs``. Actions are uniform samples drawn
before timing; episodes run back to back (resets included). Figures are env steps per wall
second, best of ``--repeats`` chunks (other processes only ever slow a chunk down), and the
ratio Ray / in-process (issue 24's target: >= 0.8 for batched envs on one machine).

``--per-actor 16 32``: side by side instead. For each ``--envs`` N and each K that divides it,
the in-process vector and the Ray vector of N/K actors x K envs are both built, then stepped in
alternating chunks (in-process, Ray, in-process, ...) ``--repeats`` times, so a machine whose
load changes slows both alike; the ratio of each round, their median and spread, and the CPU
seconds an env step costs each way (this process, plus the actors' processes from ``/proc``;
Ray's own daemons left out; the driver's own share in brackets), which load does not inflate
much. Where the code has the socket to
the workers (``pixelrl.envs.worker_channel``), a third vector in the same rounds sends every
call through Ray, as for workers on another machine: the socket's own gain, in one run. Run it
with another checkout's Python to compare code: it uses only ``RayVectorEnv``'s public API and
its actors' ``pid``.

``--env CartPole-v1`` (with ``--per-actor``): an env whose step costs microseconds, so the
figures are the transport's own cost a step. ``--env replay``: the same for the desktop's
payload: 64 steps of Desktop-Mixed (its screenshots, rewards, episode ends and infos: a11y,
task, ...) recorded here, then played back by every env at almost no cost a step, so what is
measured is moving the desktop's answers (frames, infos, ended episodes), not rendering them.

``--miniwob TASK``: scaling instead. ``pixelrl/MiniWoB-<TASK>-v0`` (one headless Chromium per
env) with 1, 2, 4 ... browsers: in-process (one ``SyncVectorEnv`` steps them in turn) and in Ray
(one actor per browser, stepped in parallel). Also prints episodes/s and, from the one-worker
figure, the projection for N cores (linear in workers while each has a core of its own).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
from gymnasium.vector.utils import concatenate, create_empty_array

ENV_ID = "pixelrl/Desktop-Mixed-v0"


def rates(envs: gym.vector.VectorEnv, seconds: float, repeats: int) -> tuple[float, float]:
    """Env steps and episodes per second: the best of ``repeats`` timed chunks of about
    ``seconds`` each (the episode rate of that chunk)."""
    actions = _actions(envs)
    envs.reset(seed=0)
    for a in actions[:4]:  # warm up: first frames, caches, Ray's object transfer paths
        envs.step(a)
    best = (0.0, 0.0)
    for _ in range(repeats):
        steps, episodes, start = 0, 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            _, _, terminated, truncated, _ = envs.step(actions[steps % len(actions)])
            episodes += int((terminated | truncated).sum())
            steps += 1
        wall = time.perf_counter() - start
        best = max(best, (steps * envs.num_envs / wall, episodes / wall))
    return best


def _actions(envs: gym.vector.VectorEnv, count: int = 64) -> list:
    """``count`` batches of uniform actions, per env from the single space, then batched:
    gymnasium's batched GUI space is a plain Dict that would also sample the kinds a backend
    refuses (MiniWoB++: key_down / key_up)."""
    single, n = envs.single_action_space, envs.num_envs
    single.seed(0)
    return [
        concatenate(single, [single.sample() for _ in range(n)], create_empty_array(single, n))
        for _ in range(count)
    ]


def _cpu_seconds(pids: list[int]) -> float:
    """CPU seconds (user + system) of this process and of ``pids`` so far."""
    tick, total = os.sysconf("SC_CLK_TCK"), time.process_time()
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def chunk(envs: gym.vector.VectorEnv, actions: list, seconds: float, pids: list[int]) -> tuple:
    """Env steps per wall second, CPU seconds per env step, and of them this process's (the
    driver's), of one chunk of ~``seconds``."""
    steps, start = 0, time.perf_counter()
    cpu, own = _cpu_seconds(pids), time.process_time()
    while time.perf_counter() - start < seconds:
        envs.step(actions[steps % len(actions)])
        steps += 1
    wall, cpu, own = (
        time.perf_counter() - start,
        _cpu_seconds(pids) - cpu,
        time.process_time() - own,
    )
    count = steps * envs.num_envs
    return count / wall, cpu / count, own / count


class ReplayEnv(gym.Env):
    """Plays a recorded stream of a desktop's steps back (``--env replay``, module doc)."""

    def __init__(self, tape: tuple) -> None:
        (self.observation_space, self.action_space), self.first, self.steps = tape
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        if seed is not None:  # each env at its own place in the stream; an autoreset goes on
            self.t = seed % len(self.steps)
        return self.first

    def step(self, action: object) -> tuple:
        self.t += 1
        return self.steps[self.t % len(self.steps)]


def record_desktop(kwargs: dict, count: int = 64) -> functools.partial:
    """A factory of ``ReplayEnv``s of ``count`` steps of Desktop-Mixed with uniform actions."""
    from pixelrl.envs.remote import make_registered

    env = make_registered(ENV_ID, kwargs)
    env.action_space.seed(0)
    first = env.reset(seed=0)
    steps = []
    for _ in range(count):
        steps.append(env.step(env.action_space.sample()))
        if steps[-1][2] or steps[-1][3]:
            env.reset()
    tape = ((env.observation_space, env.action_space), first, steps)
    env.close()
    return functools.partial(ReplayEnv, tape)


def _vectors(env: str | Callable, n: int, per_actor: int, kwargs: dict) -> tuple:
    """The factory of one env, and the Ray vector of ``n // per_actor`` actors of them."""
    from pixelrl.envs.remote import RayVectorEnv, make_registered

    if callable(env):
        return env, RayVectorEnv(env, n // per_actor, per_actor)
    ray_envs = RayVectorEnv(env, n // per_actor, per_actor, kwargs=kwargs)
    return functools.partial(make_registered, env, kwargs), ray_envs


def _ray_calls_only(
    env_id: str | Callable, n: int, per_actor: int, kwargs: dict
) -> gym.vector.VectorEnv | None:
    """The same Ray vector with every call through Ray (no socket, as for workers on another
    machine), where this checkout has the socket (``pixelrl.envs.worker_channel``)."""
    try:
        from pixelrl.envs import worker_channel
    except ImportError:  # older code: every call goes through Ray already
        return None
    kept, worker_channel.SOCKET_DIR = worker_channel.SOCKET_DIR, "/nonexistent/pixelrl"
    try:  # the sockets are made here, at the start (and at restarts, which a bench has none of)
        return _vectors(env_id, n, per_actor, kwargs)[1]
    finally:
        worker_channel.SOCKET_DIR = kept


def side_by_side(
    env_id: str | Callable, n: int, per_actor: int, kwargs: dict, args: argparse.Namespace
) -> dict:
    """In-process and Ray (``n // per_actor`` actors) in alternating chunks (module doc); with
    this checkout's code also the Ray vector without its socket, in the same rounds."""
    import ray

    make, ray_envs = _vectors(env_id, n, per_actor, kwargs)
    local = gym.vector.SyncVectorEnv([make] * n, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    contenders = [ray_envs]
    plain = _ray_calls_only(env_id, n, per_actor, kwargs)
    contenders += [plain] if plain is not None else []
    try:
        pids = [ray.get([slot.actor.pid.remote() for slot in e.slots]) for e in contenders]
        actions = _actions(local)
        for envs in (local, *contenders):
            envs.reset(seed=0)
            for a in actions[:4]:  # warm up: first frames, caches, Ray's transfer paths
                envs.step(a)
        rounds = []  # (steps/s, CPU s a step) of in-process, Ray, [Ray calls only]
        for _ in range(args.repeats):
            rounds.append([chunk(local, actions, args.seconds, [])] + [
                chunk(e, actions, args.seconds, p) for e, p in zip(contenders, pids)
            ])  # fmt: skip
    finally:
        for envs in (local, *contenders):
            envs.close()
    ratios = sorted(r[1][0] / r[0][0] for r in rounds)
    row = {
        "split": f"{n // per_actor} x {per_actor}",
        "local": statistics.median(r[0][0] for r in rounds),
        "ray": statistics.median(r[1][0] for r in rounds),
        "ratio": statistics.median(ratios),
        "spread": (ratios[0], ratios[-1]),
        "cpu_local": statistics.median(r[0][1] for r in rounds) * 1e6,
        "cpu_ray": statistics.median(r[1][1] for r in rounds) * 1e6,
        "cpu_driver": statistics.median(r[1][2] for r in rounds) * 1e6,
        "plain": None,
    }
    if plain is not None:
        row["plain"] = statistics.median(r[2][0] / r[0][0] for r in rounds)
        row["socket_gain"] = statistics.median(r[1][0] / r[2][0] for r in rounds)
    return row


def side_by_side_table(env_id: str | Callable, kwargs: dict, args: argparse.Namespace) -> None:
    print("| envs | Ray actors x envs | in-process steps/s | Ray steps/s | ratio (median) "
          "| ratio spread | CPU µs a step in-process | CPU µs a step Ray (driver) "
          "| ratio, Ray calls only | socket / Ray calls |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.envs:
        for k in args.per_actor:
            if n % k:
                continue
            row = side_by_side(env_id, n, k, kwargs, args)
            low, high = row["spread"]
            plain = "-" if row["plain"] is None else f"{row['plain']:.2f}x"
            gain = "-" if row["plain"] is None else f"{row['socket_gain']:.2f}x"
            print(f"| {n} | {row['split']} | {row['local']:,.0f} | {row['ray']:,.0f} "
                  f"| {row['ratio']:.2f}x | {low:.2f}-{high:.2f}x | {row['cpu_local']:.0f} "
                  f"| {row['cpu_ray']:.0f} ({row['cpu_driver']:.0f}) | {plain} | {gain} |",
                  flush=True)  # fmt: skip


def steps_per_second(envs: gym.vector.VectorEnv, seconds: float, repeats: int) -> float:
    return rates(envs, seconds, repeats)[0]


def in_process_rate(env_id: str, kwargs: dict, n: int, args: argparse.Namespace) -> float:
    """Steps/s of ``n`` envs in one ``SyncVectorEnv``, as the trainers run them."""
    from pixelrl.envs.remote import make_registered

    local = gym.vector.SyncVectorEnv(
        [lambda: make_registered(env_id, kwargs) for _ in range(n)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    try:
        return steps_per_second(local, args.seconds, args.repeats)
    finally:
        local.close()


def miniwob_scaling(args: argparse.Namespace) -> None:
    import ray

    from pixelrl.envs.remote import RayVectorEnv

    env_id, kwargs = f"pixelrl/MiniWoB-{args.miniwob}-v0", {}
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{env_id}, one Chromium per env, {cpus} CPUs (env steps/s, best chunk)")
    print(f"{'browsers':>8}{'in-process':>12}{'Ray':>10}{'Ray episodes/s':>16}{'Ray / 1':>9}")
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    one = None
    try:
        for n in args.workers:
            base = in_process_rate(env_id, kwargs, n, args)
            envs = RayVectorEnv(env_id, n, 1, kwargs=kwargs)
            rate, episodes = rates(envs, args.seconds, args.repeats)
            envs.close()
            one = one or rate
            print(f"{n:>8}{base:>12.1f}{rate:>10.1f}{episodes:>16.2f}{rate / one:>8.2f}x")
    finally:
        ray.shutdown()
    print(f"projection: ~{one:.1f} steps/s a browser with a core of its own: N cores ~{one:.1f} N")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", default="320x240", help="screen WxH")
    parser.add_argument("--miniwob", metavar="TASK", help="scale MiniWoB++ browsers instead")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--per-actor", type=int, nargs="+", help="side by side (module doc)")
    parser.add_argument(
        "--env",
        default=ENV_ID,
        help="with --per-actor: another env (CartPole-v1, replay: the transport; module doc)",
    )
    args = parser.parse_args()
    if args.miniwob:
        miniwob_scaling(args)
        return
    width, height = (int(v) for v in args.size.split("x"))
    kwargs = {"screen_size": (width, height)}

    import ray

    from pixelrl.envs.remote import RayVectorEnv, ensure_ray

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if args.per_actor:  # Ray as the trainers start it (its workers' priority included)
        ensure_ray(num_cpus=cpus)
        niceness = ray.get(ray.remote(lambda: os.getpriority(os.PRIO_PROCESS, 0)).remote())
        env = args.env
        if env == "replay":  # the desktop's answers, played back (module doc)
            env = record_desktop(kwargs)
        elif env != ENV_ID:  # not the desktop: its own defaults
            kwargs = {}
        print(f"{args.env} {width}x{height}, {cpus} CPUs, Ray workers at nice {niceness}, "
              f"{args.repeats} rounds of {args.seconds:g} s chunks (env steps/s, medians)")  # fmt: skip
        try:
            side_by_side_table(env, kwargs, args)
        finally:
            ray.shutdown()
        return
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    print(f"{ENV_ID} {width}x{height}, {cpus} CPUs (env steps/s, best chunk)")
    rows = []
    try:
        for n in args.envs:
            base = in_process_rate(ENV_ID, kwargs, n, args)
            print(f"  {n} envs in-process SyncVectorEnv      {base:8.0f}", flush=True)
            splits = [w for w in sorted({min(2, n), n}) if n % w == 0 and (w <= 2 or n <= 32)]
            for workers in splits:
                envs = RayVectorEnv(ENV_ID, workers, n // workers, kwargs=kwargs)
                rate = steps_per_second(envs, args.seconds, args.repeats)
                envs.close()
                label = f"Ray {workers} actors x {n // workers} envs"
                print(f"  {n} envs {label:<31} {rate:8.0f}   ratio {rate / base:.2f}x", flush=True)
                rows.append((n, f"{workers} x {n // workers}", base, rate))
    finally:
        ray.shutdown()
    print("\n| envs | Ray actors x envs | in-process steps/s | Ray steps/s | ratio |")
    print("|---|---|---|---|---|")
    for n, split, base, rate in rows:
        print(f"| {n} | {split} | {base:,.0f} | {rate:,.0f} | {rate / base:.2f}x |")


if __name__ == "__main__":
    main()
