"""Collection that overlaps learning: the envs and a copy of the policy in a worker process.

``train.async=true`` (the embodied PPO recipes' default). The trainer's loop is unchanged; only
``collector.collect()`` differs. One worker process (``spawn``) owns the vector env, a copy of
the policy and, in the imitation warm start, the teacher; it fills one of two rollout storages in
shared memory while the learner updates on the other (Sample Factory's double-buffered "sample
while you learn")::

    learner (this process)                     env worker (the other core)
    collect(): wait for rollout k  <---------  rollout k into storage k % 2
               ask for rollout k+1 (weights) ->  rollout k+1 into storage (k+1) % 2 ...
    PPO update on storage k % 2                  ... at the same time
    collect(): wait for rollout k+1 <--------

Policy lag: rollout ``k + 1`` is collected with the weights the learner had when rollout ``k``
arrived, one update old. PPO's ratio is ``pi_theta / pi_behaviour`` with the behaviour
log-probs stored in the rollout (``storage.logprobs``), as Sample Factory does, so the clipped
objective stays correct; its size shows in ``loss/behaviour_kl`` (the first minibatch's KL between
the behaviour policy and the learner before any step: 0 up to rounding in sync mode).

Determinism: the worker seeds torch and numpy with the collector's seed and steps the envs
exactly as :class:`~pixelrl.rl.collect.RolloutCollector` does (it *is* one, inside the worker),
so a policy that does not learn gives the same trajectories as in sync mode. A learning run is
reproducible only with ``train.async=false``: the worker's action samples and the learner's
minibatch shuffles come from two random streams, and the lag changes which weights act.

Faults: an exception in the worker (env, teacher, policy) comes back as :class:`CollectorError`
with the worker's traceback; a worker that dies (killed, segfault) is seen through its process
sentinel and raises :class:`CollectorError` with its exit code -- never a hang. DD-PPO's
straggler preemption is not available here (the worker always collects whole rollouts).

Threads: the worker sets ``torch.set_num_threads(threads)`` (default 1): its policy forward is one
small batch a step, and on a 2-core machine the other core belongs to the learner.
"""

from __future__ import annotations

import io
import multiprocessing.connection as mp_connection
import pickle
import time
import traceback
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from pixelrl.rl.collect import Rollout
from pixelrl.rl.storage import RolloutStorage


class CollectorError(RuntimeError):
    """The async collector's env worker failed or died; the message says how."""


class CollectorSpec(Protocol):
    """What the worker process builds (picklable: it crosses into a ``spawn`` process)."""

    def make_envs(self) -> Any: ...  # a gymnasium VectorEnv

    def make_policy(self, observation_space: Any, action_space: Any) -> torch.nn.Module: ...

    def make_teacher(self, envs: Any) -> Any: ...  # only for mode="teacher"


@dataclass
class CollectOptions:
    seed: int | None = None
    gamma: float = 0.99
    bootstrap_truncated: bool = True
    reward_norm: bool = False
    threads: int = 1  # torch threads in the worker


class EnvsView:
    """What the learner may ask of the worker's vector env: spaces, size, fault counters."""

    def __init__(self, observation_space: Any, action_space: Any, num_envs: int, owner: Any):
        self.single_observation_space = observation_space
        self.single_action_space = action_space
        self.num_envs = num_envs
        self._owner = owner
        self._stats: dict[str, Any] = {}

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def close(self) -> None:
        self._owner.close()


def _weights_bytes(module: torch.nn.Module | None) -> bytes | None:
    if module is None:
        return None
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getvalue()


def _load_weights(module: torch.nn.Module | None, data: bytes | None) -> None:
    if module is not None and data is not None:
        module.load_state_dict(torch.load(io.BytesIO(data), weights_only=True))


def _worker(conn: Any, spec: CollectorSpec, options: CollectOptions) -> None:
    """The env worker's loop (module doc). Every failure goes back up the pipe as text."""
    envs = None
    try:
        from pixelrl.rl.collect import RolloutCollector
        from pixelrl.rl.imitation import TeacherForcing
        from pixelrl.rl.normalize import RewardNormalizer

        torch.set_num_threads(max(1, int(options.threads)))
        envs = spec.make_envs()
        conn.send(
            (
                "spaces",
                envs.single_observation_space,
                envs.single_action_space,
                envs.num_envs,
            )
        )
        _, storages, weights = conn.recv()
        policy = spec.make_policy(envs.single_observation_space, envs.single_action_space)
        _load_weights(policy, weights)
        reward_norm = (
            RewardNormalizer(envs.num_envs, options.gamma) if options.reward_norm else None
        )
        if options.seed is not None:
            torch.manual_seed(options.seed)
            np.random.seed(options.seed)
        collector = RolloutCollector(
            envs,
            policy,
            storages[0],
            seed=options.seed,
            gamma=options.gamma,
            bootstrap_truncated=options.bootstrap_truncated,
            reward_transform=reward_norm,
        )
        conn.send(("ready", {k: v.numpy() for k, v in collector.obs.items()}, time.process_time()))
        teacher = None
        while True:
            message = conn.recv()
            if message[0] == "close":
                break
            _, index, mode, weights, reward_weights = message
            _load_weights(policy, weights)
            _load_weights(reward_norm, reward_weights)
            if mode == "teacher":
                teacher = teacher if teacher is not None else spec.make_teacher(envs)
                collector.policy = TeacherForcing(policy, teacher)
            else:
                collector.policy = policy
            collector.storage = storages[index]
            rollout = collector.collect()
            stats = getattr(envs, "stats", dict)()
            conn.send(
                (
                    "rollout",
                    index,
                    rollout.steps,
                    rollout.frames,
                    rollout.next_value.numpy(),
                    rollout.episodes,
                    {k: v.numpy() for k, v in collector.storage.state0.items()},
                    stats,
                    _weights_bytes(reward_norm),
                    time.process_time(),
                )
            )
    except BaseException as error:  # noqa: BLE001  (reported to the learner, then exit)
        try:
            original = pickle.dumps(error)
        except Exception:  # noqa: BLE001  (an exception that does not pickle: its text only)
            original = None
        try:
            conn.send(
                ("error", f"{type(error).__name__}: {error}", traceback.format_exc(), original)
            )
        except (OSError, ValueError):  # the learner is gone
            pass
    finally:
        if envs is not None:
            try:
                envs.close()
            except Exception:  # noqa: BLE001  (closing after a failure)
                pass
        conn.close()


def share_storage(storage: RolloutStorage) -> RolloutStorage:
    """Move ``storage``'s tensors into shared memory (in place) and return it."""
    for value in vars(storage).values():
        for tensor in value.values() if isinstance(value, dict) else [value]:
            if isinstance(tensor, torch.Tensor):
                tensor.share_memory_()
    return storage


class AsyncCollector:
    """Double-buffered collection in an env worker process (module doc).

    Built in two steps, because the learner builds its policy and storage from the worker's
    spaces: ``AsyncCollector(spec, options)`` starts the worker (``.envs`` then answers the
    spaces), ``start(policy, storage)`` hands it the policy's weights and the shared storages.
    """

    def __init__(self, spec: CollectorSpec, options: CollectOptions, start_timeout: float = 600):
        import torch.multiprocessing as tmp

        self.options = options
        self.start_timeout = start_timeout
        self._pending: tuple[int, str] | None = None  # (storage index, mode) being collected
        self._closed = True  # until the worker runs
        context = tmp.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_worker, args=(child, spec, options), name="pixelrl-env-worker", daemon=True
        )
        self._process.start()
        self._closed = False
        child.close()
        _, obs_space, action_space, num_envs = self._receive("spaces", start_timeout)
        self.envs = EnvsView(obs_space, action_space, num_envs, self)
        self.num_envs = num_envs
        self.policy: torch.nn.Module | None = None
        self.reward_normalizer: torch.nn.Module | None = None
        self.storages: list[RolloutStorage] = []
        self.storage: RolloutStorage | None = None
        self.obs: dict[str, torch.Tensor] = {}
        self.worker_cpu_seconds = 0.0  # the worker's CPU time in collection, to its last rollout
        self._cpu_at_start = 0.0

    # ------------------------------------------------------------------ set-up
    def start(
        self,
        policy: torch.nn.Module,
        storage: RolloutStorage,
        reward_normalizer: torch.nn.Module | None = None,
    ) -> None:
        """Give the worker ``policy``'s weights and two storages shaped like ``storage``."""
        import copy

        self.policy, self.reward_normalizer = policy, reward_normalizer
        self.storages = [share_storage(storage), share_storage(copy.deepcopy(storage))]
        self.storage = storage
        self._conn.send(("init", self.storages, _weights_bytes(policy)))
        _, first_obs, self._cpu_at_start = self._receive("ready", self.start_timeout)
        self.obs = {k: torch.as_tensor(v, device=storage.device) for k, v in first_obs.items()}

    # ------------------------------------------------------------------ the loop
    def collect(self, mode: str = "policy", next_mode: str | None = "policy") -> Rollout:
        """The next rollout of ``mode`` (``policy``, or ``teacher`` for imitation) in
        ``self.storage``; then the worker starts the one after it (``next_mode``; ``None``:
        nothing) with the weights as they are now, while the caller learns from this one.

        A prefetched rollout of another mode than asked for (only when the caller changed its
        mind) is thrown away and a fresh one collected.
        """
        if self.policy is None:
            raise RuntimeError("AsyncCollector.start(policy, storage) was not called")
        if self._pending is not None and self._pending[1] != mode:
            self._wait()  # the wrong kind of rollout: drop it
            self._pending = None
        if self._pending is None:
            self._request(0 if self.storage is self.storages[1] else 1, mode)
        rollout = self._wait()
        if next_mode is not None:
            self._request(1 - self.storages.index(self.storage), next_mode)
        return rollout

    def _request(self, index: int, mode: str) -> None:
        self._conn.send(
            (
                "collect",
                index,
                mode,
                _weights_bytes(self.policy),
                _weights_bytes(self.reward_normalizer),
            )
        )
        self._pending = (index, mode)

    def _wait(self) -> Rollout:
        message = self._receive("rollout", None)
        _, index, steps, frames, next_value, episodes, state0, stats, reward_weights, cpu = message
        self._pending = None
        self.worker_cpu_seconds = cpu - self._cpu_at_start
        storage = self.storages[index]
        device = storage.device
        storage.step = steps
        storage.state0 = {k: torch.as_tensor(v, device=device) for k, v in state0.items()}
        _load_weights(self.reward_normalizer, reward_weights)
        self.envs._stats = stats
        self.storage = storage
        self.obs = {k: v[steps] for k, v in storage.obs.items()}
        return Rollout(steps, frames, torch.as_tensor(next_value, device=device), episodes)

    def _receive(self, kind: str, timeout: float | None) -> tuple:
        """The worker's next message, which must be ``kind``; :class:`CollectorError` if the
        worker reports an error, dies, or (with ``timeout``) says nothing for that long."""
        ready = mp_connection.wait([self._conn, self._process.sentinel], timeout)
        if not ready:
            self.close()
            raise CollectorError(
                f"the env worker sent nothing for {timeout:.0f} s (waiting {kind})"
            )
        message = None
        if self._conn in ready or self._conn.poll():
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                message = None
        if message is None:
            self._process.join(5)
            code = self._process.exitcode
            self.close()
            raise CollectorError(
                f"the env worker process died (exit code {code}) while the trainer waited for "
                f"its {kind}; nothing was reported (killed, out of memory or a crash in native "
                "code)"
            )
        if message[0] == "error":
            self.close()
            _, summary, worker_traceback, pickled = message
            try:
                original = pickle.loads(pickled) if pickled is not None else None
            except Exception:  # noqa: BLE001  (its class does not load here: the text says it)
                original = None
            if kind in ("spaces", "ready") and isinstance(original, Exception):
                # building the envs or the policy: the recipe's own error (a ConfigError for a
                # wrong env option), as the in-process path raises it
                original.add_note(f"(raised in the env worker process)\n{worker_traceback}")
                raise original
            raise CollectorError(
                f"the env worker failed: {summary}\n--- worker traceback ---\n{worker_traceback}"
            ) from original
        if message[0] != kind:
            self.close()
            raise CollectorError(f"the env worker sent {message[0]!r}, expected {kind!r}")
        return message

    def close(self) -> None:
        """Stop the worker (it closes its envs); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._process.is_alive() and self._pending is None:
                self._conn.send(("close",))
                self._process.join(10)
        except (OSError, ValueError):
            pass
        if self._process.is_alive():  # busy with a prefetched rollout: not worth waiting for
            self._process.terminate()
            self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass
