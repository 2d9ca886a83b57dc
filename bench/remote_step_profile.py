"""Where a Ray vector env's step spends its CPU: the driver's pieces and each actor's.

    .venv/bin/python bench/remote_step_profile.py [--envs 32] [--per-actor 16] [--steps 400]

Steps ``pixelrl/Desktop-Mixed-v0`` (320x240, uniform random actions, episodes back to back) as a
``RayVectorEnv`` of ``--envs / --per-actor`` actors, after a warm-up, and prints CPU milliseconds
a vector step: in the driver, each piece of ``RayVectorEnv.step`` timed with
``time.process_time`` (asking the workers, reading their answers, joining the observations,
merging the infos, the ended episodes' last observations) and what the rest of the step costs;
in each actor, its env thread's CPU inside ``EnvWorker.step`` (the envs, their infos batched
and packed) and around it (reading the request, pickling and sending the answer); and the
driver's context switches a step. CPU time is what load inflates least: on a busy machine the
wall time of a step is set by when each process gets a core back, not by this work; the last
table says where it goes (timestamps on the machine's monotonic clock, which the driver and the
actors share): asking, the workers' wake-ups (the second starts late when the first took the
driver's core), their steps, the answers' trip back, the driver's work after them.

It times this checkout's private methods, so it runs on this checkout's code only (the A/B
against another checkout is ``bench/remote_envs.py --per-actor``).
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import statistics
import sys
import time

import ray
from gymnasium.vector.utils import concatenate, create_empty_array

from pixelrl.envs import packed_infos, remote
from pixelrl.envs.shared_obs import SharedBuffers

SPENT: dict[str, float] = collections.defaultdict(float)  # the driver's CPU seconds a piece
ASK, READ = "ask the workers (pickle, send)", "read the answers (wait, unpickle)"
ENDS: dict[str, float] = {}  # when each piece last ended (perf_counter: the machine's clock)


def timed(owner: object, name: str, label: str) -> None:
    """Wrap ``owner.name`` to add its CPU time to ``SPENT[label]`` and note when it ended."""
    original = getattr(owner, name)

    def run(*args, **kwargs):
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time() - start
            ENDS[label] = time.perf_counter()

    setattr(owner, name, run)


class TimedWorker(remote.EnvWorker):
    """An env worker that counts its env thread's CPU inside ``step`` and in all."""

    _inside, _steps, _stamps = 0.0, 0, []

    def step(self, *args, **kwargs):
        start, began = time.thread_time(), time.perf_counter()
        try:
            return super().step(*args, **kwargs)
        finally:
            self._inside += time.thread_time() - start
            self._steps += 1
            self._stamps.append((began, time.perf_counter()))

    def start_count(self) -> None:
        self._inside, self._steps, self._stamps = 0.0, 0, []
        self._start = self._env_thread.submit(time.thread_time).result()

    def counted(self) -> tuple[float, int, float, list]:
        total = self._env_thread.submit(time.thread_time).result() - self._start
        return self._inside, self._steps, total, self._stamps


def timeline(marks: list[tuple[float, float, float, float]], stamps: list[list]) -> None:
    """Medians over the steps of where a step's wall time goes (module doc)."""
    rows = collections.defaultdict(list)
    for i, (start, asked, answered, end) in enumerate(marks):
        began = [worker[i][0] for worker in stamps]
        ended = [worker[i][1] for worker in stamps]
        rows["asking the workers"].append(asked - start)
        rows["first worker's step starts, after the asking"].append(min(began) - asked)
        rows["last worker's step starts, after the first's"].append(max(began) - min(began))
        rows["a worker's step (its envs, infos packed)"].extend(e - b for b, e in zip(began, ended))
        rows["last answer read, after the last step ended"].append(answered - max(ended))
        rows["the step's end, after the answers"].append(end - answered)
        rows["the whole step"].append(end - start)
    print("\n| a step's wall time, median (p90) | ms |\n|---|---|")
    for label, values in rows.items():
        values.sort()
        print(f"| {label} | {statistics.median(values) * 1e3:.2f} "
              f"({values[int(0.9 * len(values))] * 1e3:.2f}) |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=32)
    parser.add_argument("--per-actor", type=int, default=16)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actors build TimedWorker
    remote.EnvWorker = TimedWorker
    for owner, name, label in [
        (remote.RayVectorEnv, "_ask", ASK),
        (remote.RayVectorEnv, "_call", READ),
        (remote.RayVectorEnv, "_batch", "join the observations (a copy)"),
        (packed_infos, "merge", "merge the infos"),
        (SharedBuffers, "take_final", "ended episodes' last observations"),
    ]:
        timed(owner, name, label)

    cpus = len(os.sched_getaffinity(0))
    remote.ensure_ray(num_cpus=cpus)
    n, k = args.envs, args.per_actor
    envs = remote.RayVectorEnv(
        "pixelrl/Desktop-Mixed-v0", n // k, k, kwargs={"screen_size": (320, 240)}
    )
    try:
        single = envs.single_action_space
        single.seed(0)
        actions = [
            concatenate(single, [single.sample() for _ in range(n)], create_empty_array(single, n))
            for _ in range(64)
        ]
        envs.reset(seed=0)
        for batch in actions[:8]:  # warm up
            envs.step(batch)
        ray.get([slot.actor.start_count.remote() for slot in envs.slots])
        SPENT.clear()
        usage, cpu, wall = (
            resource.getrusage(resource.RUSAGE_SELF),
            time.process_time(),
            time.time(),
        )
        marks = []  # (start, asked, answered, end) of each step
        for i in range(args.steps):
            start = time.perf_counter()
            envs.step(actions[i % len(actions)])
            marks.append((start, ENDS[ASK], ENDS[READ], time.perf_counter()))
        cpu, wall = time.process_time() - cpu, time.time() - wall
        after = resource.getrusage(resource.RUSAGE_SELF)
        counted = ray.get([slot.actor.counted.remote() for slot in envs.slots])
    finally:
        envs.close()
        ray.shutdown()

    ms = 1e3 / args.steps
    load = os.getloadavg()[0]
    print(f"Desktop-Mixed 320x240, {n // k} actors x {k} envs, {args.steps} steps, {cpus} CPUs, "
          f"load {load:.1f}; wall {wall * ms:.2f} ms a step (load inflates it)")  # fmt: skip
    switches = (after.ru_nvcsw - usage.ru_nvcsw, after.ru_nivcsw - usage.ru_nivcsw)
    print(f"\n| driver, CPU ms a step | {cpu * ms:.3f} |\n|---|---|")
    for label, seconds in SPENT.items():
        print(f"| {label} | {seconds * ms:.3f} |")
    print(f"| the rest of step() | {(cpu - sum(SPENT.values())) * ms:.3f} |")
    print(f"| context switches a step: waits, preemptions | {switches[0] / args.steps:.1f}, "
          f"{switches[1] / args.steps:.1f} |")  # fmt: skip
    print("\n| actor | env thread CPU ms a step | inside step() | around it |\n|---|---|---|---|")
    for index, (inside, steps, total, _) in enumerate(counted):
        print(f"| {index} | {total * ms:.3f} | {inside / steps * 1e3:.3f} "
              f"| {(total - inside) * ms:.3f} |")  # fmt: skip
    timeline(marks, [stamps[-len(marks) :] for *_, stamps in counted])


if __name__ == "__main__":
    main()
