"""A Gymnasium ``VectorEnv`` whose sub-envs live in Ray actors, and survives their crashes.

``RayVectorEnv("pixelrl/Desktop-ClickButton-v0", num_workers=4, per_worker=2, kwargs={...})``
starts 4 actors holding 2 envs each (any registered id with its options, any picklable
``Callable[[], gym.Env]``, or a list of ``num_workers * per_worker`` of them, one per env in
batch order, for envs that differ, e.g. one MiniWoB++ task each) and steps them in parallel; observations come back batched, in worker
order, exactly as a ``SyncVectorEnv`` of the same 8 envs with ``autoreset_mode=SAME_STEP`` (what
every trainer here uses): a finished env is reset in the same step, its last observation and info
in ``info["final_obs"]`` / ``info["final_info"]``; ``reset(seed=s)`` seeds env ``i`` with ``s+i``.

Transport: each worker answers in the vector's layout (its envs' observations batched, infos
merged and packed into one buffer and lists, ``pixelrl.envs.packed_infos``), so the driver only
joins the workers' blocks. A worker on the driver's machine writes the large observation arrays
into shared memory instead of its answer (``pixelrl.envs.shared_obs``) and, from its first answer
on, serves ``reset`` / ``step`` over a Unix socket instead of Ray's calls
(``pixelrl.envs.worker_channel``: one message each way a step, without Ray's ~2 ms a call, read
and answered on the thread its envs run on); Ray still starts, places and replaces it. A worker
on another machine answers through Ray.

Ray: joins the running cluster when there is one (``address="auto"``, ``RAY_ADDRESS`` or an
``ray.init`` already made), else starts a local one (``ray.init(num_cpus=...)``).

Faults: a worker whose actor dies (process killed, OOM), whose env raises, or whose step takes
longer than ``step_timeout`` seconds is killed and replaced by a fresh actor. Its in-flight
episodes end in that step as *truncated* with ``info["env_fault"] = True`` (and
``info["env_fault_reason"]``): the observation returned is the fresh actor's first one, the reward
is 0 and flagged (the step never happened), and ``final_obs`` is the last observation the episode
really reached, so nothing stale starts the next episode. ``faults`` / ``restarts`` /
``removed_workers`` count them. A worker that fails ``max_failures`` times in a row (its
replacement failing to start counts) is taken out: its rows in that step end as above with
``info["env_removed"]``, and from the next call the vector is smaller (``num_envs`` and the spaces
shrink); below ``min_envs`` envs that raises :class:`EnvWorkerError` instead.

An env that refuses an action (``pixelrl.envs.gui_action.ActionError``) is the agent's mistake, not a
fault: it is raised as from a ``SyncVectorEnv``, or, with ``refused_action`` set (a text agent's
``wait``), that action is stepped instead and ``info["action_error"]`` says why.
"""

from __future__ import annotations

import functools
import os
import select
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from pixelrl.envs import packed_infos, worker_channel
from pixelrl.envs.gui_action import ActionError
from pixelrl.envs.shared_obs import SharedBuffers, SharedSpec
from pixelrl.envs.worker_channel import Channel, Listener

_ARRAY_SPACES = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
)


def _rows(space: gym.Space, batch: Any, rows: slice) -> Any:
    """Rows ``rows`` of a batch of ``space`` (as ``batch_space`` lays it out), without
    unbatching: arrays are sliced, so a worker's share of the actions costs no per-env work."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _rows(sub, batch[key], rows) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_rows(sub, part, rows) for sub, part in zip(space.spaces, batch))
    if isinstance(space, _ARRAY_SPACES):
        return batch[rows]
    return tuple(batch[rows])  # Text, Graph, ...: gymnasium batches them as a tuple of items


def _length(space: gym.Space, batch: Any) -> int:
    """How many rows a batch of ``space`` holds."""
    if isinstance(space, gym.spaces.Dict):
        return _length(next(iter(space.spaces.values())), batch[next(iter(space.spaces))])
    if isinstance(space, gym.spaces.Tuple):
        return _length(space.spaces[0], batch[0])
    return len(batch)


def _join(space: gym.Space, parts: Sequence[Any]) -> Any:
    """The batches ``parts`` of ``space`` one after another, as one new (writable) batch."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _join(sub, [p[key] for p in parts]) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_join(sub, [p[i] for p in parts]) for i, sub in enumerate(space.spaces))
    if isinstance(space, _ARRAY_SPACES):
        return np.concatenate(parts)
    return tuple(item for part in parts for item in part)


class _InfoLayout:
    """``VectorEnv._add_info`` for a worker, which is not a ``VectorEnv``: its ``num_envs``
    envs' infos in gymnasium's vector layout (values batched, ``_key`` masks)."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def _error_outcome(err: BaseException) -> tuple[str, Any]:
    """What an env's exception in a worker means for the driver: an action it refused is the
    caller's mistake (raised as from a ``SyncVectorEnv``), anything else a fault."""
    if isinstance(err, ActionError):
        return "refused", err
    return "fault", f"error: {type(err).__name__}: {err}"


class EnvWorkerError(RuntimeError):
    """The Ray vector env cannot go on: too few envs left, or no worker could start."""


def make_registered(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make(env_id, **kwargs)`` after registering the ``pixelrl/`` ids (an actor is a
    fresh process: nothing of ours is imported there yet)."""
    import pixelrl.envs  # noqa: F401

    return gym.make(env_id, **kwargs)


def _on_env_thread(method: Callable) -> Callable:
    """Run a worker's ``method`` on its one env thread, whichever thread asked (Ray's, or the
    env thread itself serving the channel): an env bound to the thread that built it (a GL
    context) sees only that one, and two calls never touch the envs at once."""

    @functools.wraps(method)
    def run(self: EnvWorker, *args: Any, **kwargs: Any) -> Any:
        if self._env_thread.here():
            return method(self, *args, **kwargs)
        return self._env_thread.submit(method, self, *args, **kwargs).result()

    return run


class EnvWorker:
    """The actor's side: ``count`` envs stepped in turn, each reset in the step it ends
    (gymnasium's ``SyncVectorEnv`` ``SAME_STEP`` logic, per env). On the driver's machine it
    serves ``reset`` and ``step`` over a socket too (``open_channel``)."""

    SERVED = ("reset", "step")  # what the channel may ask for

    def __init__(
        self,
        env_fn: Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
        count: int,
        refused_action: Any = None,
    ) -> None:
        fns = list(env_fn) if isinstance(env_fn, list | tuple) else [env_fn] * count
        self._env_thread = worker_channel.EnvThread()
        self.envs = self._env_thread.submit(lambda: [fn() for fn in fns]).result()
        self.refused_action = refused_action
        self._obs_space = self.envs[0].observation_space
        self._action_batch = batch_space(self.envs[0].action_space, len(self.envs))
        self._obs_out = create_empty_array(self._obs_space, len(self.envs))
        self._shared: SharedBuffers | None = None
        self._copies: list[Any] = []
        self._turn = 0

    def share(self, spec: SharedSpec | None) -> bool:
        """Write the large observation arrays into the driver's shared memory from now on
        (``pixelrl.envs.shared_obs``); False when its file is not on this machine."""
        self._shared = SharedBuffers.attach(spec)
        if self._shared is None:
            return False
        batch = create_empty_array(self._obs_space, len(self.envs))
        self._copies = [self._shared.place(batch, copy) for copy in (0, 1)]
        return True

    def open_channel(self, path: str) -> bool:
        """Connect to the driver's socket at ``path`` and serve ``reset`` / ``step`` on it from
        the env thread itself (``pixelrl.envs.worker_channel``); False when the socket is not on
        this machine, and Ray carries every call."""
        channel = worker_channel.connect(path)
        if channel is None:
            return False
        self._env_thread.serve(channel, self._answer)
        return True

    def _serve(self, channel: Channel) -> None:
        """Answer the driver's requests on ``channel`` until it closes it (from any thread)."""
        while self._answer(channel):
            pass

    def _answer(self, channel: Channel) -> bool:
        """Answer the driver's next request, ``(name, args)``, with ``("ok", value)`` or
        ``("error", exception)``; False once the driver has closed the channel."""
        try:
            name, args = channel.recv()
        except (EOFError, OSError):
            return False
        try:
            if name not in self.SERVED:
                raise ValueError(f"the channel serves {self.SERVED}, not {name!r}")
            answer = ("ok", getattr(self, name)(*args))
        except Exception as err:  # noqa: BLE001 - the driver sorts it out, as from Ray
            answer = ("error", err)
        try:
            channel.send(answer)
        except OSError:  # the driver is gone
            return False
        except Exception as err:  # noqa: BLE001 - pickling fails before a byte is sent
            channel.send(("error", RuntimeError(f"the answer cannot be pickled: {err}")))
        return True

    def describe(self) -> dict[str, Any]:
        env = self.envs[0]
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "metadata": dict(env.metadata),
            "render_mode": env.render_mode,
        }

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node this worker landed on (where ``resources_per_worker`` placed it)."""
        import ray

        return ray.get_runtime_context().get_node_id()

    @_on_env_thread
    def reset(
        self, seeds: Sequence[int | None], options: dict[str, Any] | None, mask: Sequence[bool]
    ) -> list[tuple[Any, dict[str, Any]] | None]:
        return [
            env.reset(seed=seed, options=options) if m else None
            for env, seed, m in zip(self.envs, seeds, mask)
        ]

    @_on_env_thread
    def step(self, actions: Any, batched: bool = False) -> tuple:
        """Step every env (one action each: a list, or with ``batched`` this worker's rows of
        the vector's action batch) and answer in the vector's own layout, so the driver only
        joins the workers' blocks: the observations batched, rewards and flags as arrays, infos
        as ``SyncVectorEnv`` (``SAME_STEP``) builds them. Batching here, in parallel across
        workers, and sending one array per key instead of one per env is what keeps Ray's
        overhead small (docs/results, "Ray's overhead on the emulated desktop")."""
        count = len(self.envs)
        if batched:
            actions = iterate(self._action_batch, actions)
        shared, copy = self._shared, None
        if shared is not None:  # the copy the driver's last observations are not in
            copy, self._turn = self._turn, 1 - self._turn
        obs_items, infos, layout = [], {}, _InfoLayout(count)
        rewards = np.zeros(count, dtype=np.float64)
        terminated = np.zeros(count, dtype=bool)
        truncated = np.zeros(count, dtype=bool)
        for i, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            obs, rewards[i], terminated[i], truncated[i], info = self._step(env, action)
            if terminated[i] or truncated[i]:
                final = obs if shared is None else shared.put_final(obs, copy, i)
                infos = layout._add_info(infos, {"final_obs": final, "final_info": info}, i)
                obs, info = env.reset()
            infos = layout._add_info(infos, info, i)
            obs_items.append(obs)
        infos = packed_infos.pack(infos)  # pickled in C, merged slice by slice by the driver
        if shared is not None:
            batch = concatenate(self._obs_space, obs_items, self._copies[copy])
            return (shared.strip(batch), copy), rewards, terminated, truncated, infos
        # one buffer for the life of the worker: Ray has copied the answer out when it returns
        self._obs_out = concatenate(self._obs_space, obs_items, self._obs_out)
        return (self._obs_out, None), rewards, terminated, truncated, infos

    def _step(self, env: gym.Env, action: Any) -> tuple:
        """``env.step(action)``; an action the env refuses (``ActionError``: the agent's mistake,
        not a fault of the env) steps ``refused_action`` instead when one is set, and says why
        in ``info["action_error"]``."""
        try:
            return env.step(action)
        except ActionError as err:
            if self.refused_action is None:
                raise
            obs, reward, terminated, truncated, info = env.step(self.refused_action)
            return obs, reward, terminated, truncated, {**info, "action_error": str(err)}

    @_on_env_thread
    def call(self, name: str, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        results = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            results.append(attr(*args, **kwargs) if callable(attr) else attr)
        return results

    @_on_env_thread
    def close(self) -> None:
        for env in self.envs:
            env.close()


@dataclass
class _Slot:
    """One worker as the driver sees it: its actor and its fault history."""

    index: int
    count: int
    env_fn: Any = None  # what its actor builds: one factory, or one per env
    actor: Any = None
    failures: int = 0  # in a row; a good step clears it
    restarts: int = 0
    removed: bool = False
    reasons: list[str] = field(default_factory=list)
    shared: SharedBuffers | None = None  # its actor's observations, when it is on this machine
    channel: Channel | None = None  # its actor's socket for reset / step, on this machine
    listener: Listener | None = None  # until its actor's first answer says whether it connected
    opening: Any = None  # the ref of the actor's open_channel call


class _Sent:
    """A request that went over a worker's channel (its answer is read from there); ``lost``
    says why it could not be sent."""

    def __init__(self, lost: str | None = None) -> None:
        self.lost = lost


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Connect to Ray: the cluster at ``address`` (or ``RAY_ADDRESS``), else a local one with
    ``num_cpus``, whose workers run at this process's priority. True when this call started
    Ray (so the caller may shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        ray.init(address=address)
    else:
        # No dashboard: it is a web server and a few processes nobody looks at locally. Ray
        # starts its workers at nice 15 so that its daemons win; ours step the envs the
        # trainer waits on, and at nice 15 anything else running on the machine starves them
        # (docs/results/ray_envs.md: 2-4x slower steps on a loaded machine). RAY_worker_niceness
        # still decides where it is set. address="local": a new instance even where another
        # runs on this machine (without it Ray joins that one, and refuses num_cpus there).
        config = {} if "RAY_worker_niceness" in os.environ else {"worker_niceness": 0}
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, _system_config=config)
    return True


class RayVectorEnv(VectorEnv):
    """``num_workers`` Ray actors of ``per_worker`` envs each, as one vector env (module doc)."""

    def __init__(
        self,
        env: str | Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
        num_workers: int = 2,
        per_worker: int = 1,
        *,
        kwargs: dict[str, Any] | None = None,
        step_timeout: float = 60.0,
        start_timeout: float = 300.0,
        max_failures: int = 3,
        min_envs: int = 1,
        resources_per_worker: dict[str, Any] | None = None,
        address: str | None = None,
        num_cpus: int | None = None,
        refused_action: Any = None,
    ) -> None:
        try:
            import ray
        except ImportError as err:  # an optional extra: say which
            raise EnvWorkerError(
                "the Ray backend needs ray: pip install 'pixelrl[distributed]'"
            ) from err

        if num_workers < 1 or per_worker < 1:
            raise ValueError(
                f"num_workers and per_worker must be >= 1, got {num_workers}, {per_worker}"
            )
        if max_failures < 1 or step_timeout <= 0:
            raise ValueError("max_failures must be >= 1 and step_timeout > 0")
        if min_envs > num_workers * per_worker:
            raise ValueError(
                f"min_envs={min_envs} is more than the {num_workers * per_worker} envs asked for"
            )
        if isinstance(env, str):
            env_fn: Any = functools.partial(make_registered, env, kwargs or {})
        elif isinstance(env, list | tuple):
            if len(env) != num_workers * per_worker:
                raise ValueError(
                    f"{len(env)} env factories for {num_workers} workers x {per_worker} envs"
                )
            env_fn = [functools.partial(fn, **kwargs) if kwargs else fn for fn in env]
        elif kwargs:
            env_fn = functools.partial(env, **kwargs)
        else:
            env_fn = env
        self.env_fn = env_fn
        self.refused_action = refused_action
        self.step_timeout, self.start_timeout = float(step_timeout), float(start_timeout)
        self.max_failures, self.min_envs = int(max_failures), int(min_envs)
        self._owns_ray = ensure_ray(address, num_cpus)
        # Ray's own restarts (max_restarts) would rerun the constructor behind our back and
        # replay nothing; we replace actors ourselves so each fault is seen and counted.
        # No resources asked by default: Ray then needs a free CPU to place an actor but holds
        # none while it runs, so training and evaluation workers coexist on a small machine.
        # Real desktops and browsers should ask for theirs (num_cpus, memory, {"desktop": 1}).
        options = {"max_restarts": 0, "max_concurrency": 1, **(resources_per_worker or {})}
        self._actor_class = ray.remote(EnvWorker).options(**options)

        self.faults, self.restarts, self.removed_workers = 0, 0, 0
        self.fault_reasons: dict[str, int] = {}
        self._seed: int | None = None
        # each live worker's last observations, as the batch of its envs it sent
        self._slot_obs: dict[int, Any] = {}
        self.slots = [
            _Slot(i, per_worker, env_fn[i * per_worker : (i + 1) * per_worker])
            if isinstance(env_fn, list)
            else _Slot(i, per_worker, env_fn)
            for i in range(num_workers)
        ]
        for slot in self.slots:
            slot.actor = self._actor_class.remote(slot.env_fn, per_worker, refused_action)
        try:
            ref = self.slots[0].actor.describe.remote()
            spec = ray.get(ref, timeout=self.start_timeout)
        except ray.exceptions.GetTimeoutError as err:
            self._kill_all()
            # most often no room: Ray waits (silently) until a node has the resources asked for
            raise EnvWorkerError(
                f"no env worker started within {self.start_timeout:g} s; each asks for "
                f"{options} and the cluster has {ray.available_resources()} free"
            ) from err
        except Exception as err:
            self._kill_all()
            raise EnvWorkerError(f"the first env worker could not start: {err}") from err
        self.single_observation_space = spec["observation_space"]
        self.single_action_space = spec["action_space"]
        self.metadata = {**spec["metadata"], "autoreset_mode": AutoresetMode.SAME_STEP}
        self.render_mode = spec["render_mode"]
        self._resize()
        for slot in self.slots:
            self._share(slot)
        self.closed = False

    # ------------------------------------------------------------------ bookkeeping
    @property
    def live(self) -> list[_Slot]:
        return [s for s in self.slots if not s.removed]

    def _resize(self) -> None:
        self.num_envs = sum(s.count for s in self.live)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def stats(self) -> dict[str, int]:
        """Counters to log per update: faults, actor restarts, workers taken out, envs left."""
        return {
            "faults": self.faults,
            "restarts": self.restarts,
            "removed_workers": self.removed_workers,
            "num_envs": self.num_envs,
        }

    def _seeds(self, slot: _Slot, first: int) -> list[int | None]:
        """Seeds for a replacement actor's envs: derived from the last reset's seed (so a run
        stays reproducible) and the restart count (so it does not replay the lost episode)."""
        if self._seed is None:
            return [None] * slot.count
        return [self._seed + first + i + 7919 * self.restarts for i in range(slot.count)]

    def _share(self, slot: _Slot) -> None:
        """Give the slot's (new) actor shared memory for its observations and a socket for its
        calls (Ray runs an actor's calls in order: its first reset already writes there, and
        by its first answer it has connected, or found no socket on its machine)."""
        slot.shared = SharedBuffers.create(self.single_observation_space, slot.count)
        if slot.shared is not None:
            slot.actor.share.remote(slot.shared.spec)
        slot.listener = Listener.create()
        if slot.listener is not None:
            slot.opening = slot.actor.open_channel.remote(slot.listener.path)

    def _accept(self, slot: _Slot) -> None:
        """After the slot's first answer: its channel from now on, when its actor connected."""
        import ray

        listener, slot.listener = slot.listener, None
        try:
            connected = ray.get(slot.opening, timeout=self.start_timeout)
        except ray.exceptions.RayError:
            connected = False
        if connected:
            slot.channel = listener.accept(timeout=self.start_timeout)
        else:  # on another machine: Ray carries its calls
            listener.close()

    def _request(self, slot: _Slot, method: str, *args: Any) -> Any:
        """Ask the slot's worker for ``method(*args)`` (``_ask`` for one)."""
        return self._ask([(slot, method, args)])[0][1]

    def _ask(self, asks: list[tuple[_Slot, str, tuple]]) -> list[tuple[_Slot, Any]]:
        """Ask each slot's worker for ``method(*args)``: over its channel when it has one, else
        through Ray; ``_call`` waits for the answers either way. Every channel message is
        pickled before the first is sent: a worker woken by its request may take this
        process's core, and the next worker's request would wait for it."""
        messages = [
            None if slot.channel is None else worker_channel.encode((method, args))
            for slot, method, args in asks
        ]
        pairs = []
        for (slot, method, args), message in zip(asks, messages):
            if message is None:
                pairs.append((slot, getattr(slot.actor, method).remote(*args)))
                continue
            try:
                slot.channel.send_encoded(message)
                pairs.append((slot, _Sent()))
            except OSError as err:  # the actor is gone (its end of the socket closed with it)
                pairs.append((slot, _Sent(f"died: {type(err).__name__} on its channel")))
        return pairs

    def _kill(self, slot: _Slot) -> None:
        import ray

        if slot.shared is not None:  # the mapping lives on in views of its last observations
            slot.shared.unlink()
            slot.shared = None
        for end in (slot.channel, slot.listener):
            if end is not None:
                end.close()
        slot.channel = slot.listener = None

        if slot.actor is not None:
            try:
                ray.kill(slot.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone: nothing to kill
                pass
            slot.actor = None

    def _kill_all(self) -> None:
        for slot in self.slots:
            self._kill(slot)

    def _fault(self, slot: _Slot, reason: str) -> None:
        """Count a fault of ``slot`` and take it out after ``max_failures`` in a row."""
        self.faults += 1
        kind = reason.split(":", 1)[0]
        self.fault_reasons[kind] = self.fault_reasons.get(kind, 0) + 1
        slot.failures += 1
        slot.reasons.append(reason)
        self._kill(slot)
        if slot.failures >= self.max_failures:
            slot.removed = True
            self.removed_workers += 1

    def _check_enough(self) -> None:
        left = sum(s.count for s in self.live)
        if left < self.min_envs:
            last = [s.reasons[-1] for s in self.slots if s.removed and s.reasons]
            raise EnvWorkerError(
                f"only {left} envs left, fewer than min_envs={self.min_envs}: "
                f"{self.removed_workers} workers failed {self.max_failures} times in a row "
                f"(last: {'; '.join(last)})"
            )

    def _call(
        self, pairs: list[tuple[_Slot, Any]], timeout: float, clears: bool = True
    ) -> dict[int, Any]:
        """Wait up to ``timeout`` for each slot's answer (a Ray object ref, or a request sent on
        its channel: ``_request``), all asked before any is awaited; the results of those that
        answered, and a fault for each of the others. With ``clears`` an answer ends the slot's
        run of failures (a replacement's first reset does not: only a step it survives). An
        action an env refused is raised once every answer is read (the channels stay in step)."""
        deadline = time.monotonic() + timeout
        on_ray = [(slot, ticket) for slot, ticket in pairs if not isinstance(ticket, _Sent)]
        outcomes = self._ray_outcomes(on_ray, deadline, timeout) if on_ray else {}
        sent = [(slot, ticket) for slot, ticket in pairs if isinstance(ticket, _Sent)]
        outcomes.update(self._channel_outcomes(sent, deadline, timeout))
        results: dict[int, Any] = {}
        refused: ActionError | None = None
        for slot, _ in pairs:
            kind, value = outcomes[slot.index]
            if kind == "ok":
                results[slot.index] = value
                self._answered(slot, clears)
            elif kind == "refused":  # the caller's action, not the env's fault
                refused = refused or value
            else:
                self._fault(slot, value)
        if refused is not None:
            raise refused
        return results

    @staticmethod
    def _ray_outcomes(
        pairs: list[tuple[_Slot, Any]], deadline: float, timeout: float
    ) -> dict[int, tuple[str, Any]]:
        """Each slot's answer through Ray: ``("ok", value)``, ``("refused", ActionError)`` or
        ``("fault", reason)``."""
        import ray
        from ray.exceptions import RayActorError, RayError, RayTaskError

        refs = [ref for _, ref in pairs]
        try:  # the common case in one call: every worker answers in time
            values = ray.get(refs, timeout=max(0.0, deadline - time.monotonic()))
        except RayError:  # a timeout or a failure: sort the answers out one by one below
            pass
        else:
            return {slot.index: ("ok", value) for (slot, _), value in zip(pairs, values)}
        left = max(0.0, deadline - time.monotonic())
        done = set(ray.wait(refs, num_returns=len(refs), timeout=left)[0])
        outcomes: dict[int, tuple[str, Any]] = {}
        for slot, ref in pairs:
            if ref not in done:
                outcomes[slot.index] = ("fault", f"timeout: no answer within {timeout:g} s")
                continue
            try:
                outcomes[slot.index] = ("ok", ray.get(ref))
            except RayActorError as err:
                outcomes[slot.index] = ("fault", f"died: {type(err).__name__}")
            except RayTaskError as err:
                outcomes[slot.index] = _error_outcome(err.cause)
        return outcomes

    @classmethod
    def _channel_outcomes(
        cls, pairs: list[tuple[_Slot, _Sent]], deadline: float, timeout: float
    ) -> dict[int, tuple[str, Any]]:
        """Each slot's answer on its channel, as ``_ray_outcomes`` gives them, read in the order
        they arrive: an answer is unpickled while the slower workers still step."""
        outcomes = {slot.index: ("fault", sent.lost) for slot, sent in pairs if sent.lost}
        waiting = {slot.channel.sock.fileno(): slot for slot, sent in pairs if not sent.lost}
        poller = select.poll()  # poll, not select: no limit on the descriptors' numbers
        for fd in waiting:
            poller.register(fd, select.POLLIN)
        while waiting:
            ready = poller.poll(max(0.0, deadline - time.monotonic()) * 1e3)
            if not ready:
                for slot in waiting.values():
                    outcomes[slot.index] = ("fault", f"timeout: no answer within {timeout:g} s")
                break
            for fd, _ in ready:  # an answer, or its end closed (EOF: read as a fault)
                poller.unregister(fd)
                slot = waiting.pop(fd)
                outcomes[slot.index] = cls._channel_outcome(slot, deadline, timeout)
        return outcomes

    @staticmethod
    def _channel_outcome(slot: _Slot, deadline: float, timeout: float) -> tuple[str, Any]:
        """The slot's answer on its channel (waiting, it has begun to arrive)."""
        try:  # what is left of the common deadline
            status, value = slot.channel.recv(timeout=max(1e-3, deadline - time.monotonic()))
        except TimeoutError:
            return "fault", f"timeout: no answer within {timeout:g} s"
        except (EOFError, OSError) as err:  # its process is gone, and its end of the socket
            return "fault", f"died: {type(err).__name__} on its channel"
        except Exception as err:  # noqa: BLE001 - an answer this process cannot unpickle
            return _error_outcome(err)
        return ("ok", value) if status == "ok" else _error_outcome(value)

    def _answered(self, slot: _Slot, clears: bool) -> None:
        if clears:
            slot.failures = 0
        if slot.shared is not None:  # it has mapped its file by now (its calls run in order)
            slot.shared.unlink()
        if slot.listener is not None:  # and tried our socket
            self._accept(slot)

    def _restart(
        self, slots: list[_Slot], starts: dict[int, int], seeds: Sequence[int | None] | None = None
    ) -> dict[int, list]:
        """Fresh actors for ``slots`` and their envs' first (obs, info), retrying a start that
        fails until the slot is taken out; the slots that never came back are left out."""
        fresh: dict[int, list] = {}
        pending = [s for s in slots if not s.removed]
        while pending:
            pairs = []
            for slot in pending:
                slot.actor = self._actor_class.remote(slot.env_fn, slot.count, self.refused_action)
                self._share(slot)
                slot.restarts += 1
                self.restarts += 1
                first = starts[slot.index]
                own = (
                    self._seeds(slot, first)
                    if seeds is None
                    else list(seeds[first : first + slot.count])
                )
                pairs.append((slot, self._request(slot, "reset", own, None, [True] * slot.count)))
            fresh.update(self._call(pairs, self.start_timeout, clears=False))
            pending = [s for s in pending if s.index not in fresh and not s.removed]
        return fresh

    def _starts(self) -> dict[int, int]:
        """Each live slot's first row in the batch."""
        starts, row = {}, 0
        for slot in self.live:
            starts[slot.index] = row
            row += slot.count
        return starts

    # ------------------------------------------------------------------ VectorEnv API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        n = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, int | np.integer):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
        if len(seeds) != n:
            raise ValueError(f"reset: {len(seeds)} seeds for {n} envs")
        self._seed = int(seed) if isinstance(seed, int | np.integer) else None
        options = dict(options or {})
        mask = np.asarray(options.pop("reset_mask", np.ones(n, dtype=bool)), dtype=bool)
        if mask.shape != (n,):
            raise ValueError(f"reset: reset_mask must have shape ({n},), got {mask.shape}")
        starts = self._starts()
        slots = [s for s in self.live if mask[starts[s.index] : starts[s.index] + s.count].any()]
        calls = []
        for slot in slots:
            rows = slice(starts[slot.index], starts[slot.index] + slot.count)
            calls.append(
                (slot, self._request(slot, "reset", seeds[rows], options, list(mask[rows])))
            )
        results = self._call(calls, self.start_timeout)
        # a worker that failed its reset gets a fresh actor (reset in full: nothing was running)
        failed = [s for s, _ in calls if s.index not in results]
        results.update(self._restart(failed, starts, seeds))
        # nothing was running on a worker taken out here: its rows go at once
        self._drop_removed(starts)
        starts = self._starts()
        infos: dict[str, Any] = {}
        for slot in self.live:
            pairs = results.get(slot.index)
            if pairs is None:
                continue
            first = starts[slot.index]
            kept = self._slot_rows(slot)  # the envs reset_mask leaves running keep theirs
            items = [kept[j] if pair is None else pair[0] for j, pair in enumerate(pairs)]
            self._slot_obs[slot.index] = self._slot_batch(items)
            for j, pair in enumerate(pairs):
                if pair is not None:
                    infos = self._add_info(infos, pair[1], first + j)
        return self._batch(self.live), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        n, starts = self.num_envs, self._starts()
        if any(s.index not in self._slot_obs for s in self.live):
            raise RuntimeError("RayVectorEnv.step() before reset()")
        # one action per env (a GUI agent's Action objects), or a batch of the action space,
        # which each worker gets its rows of, still batched
        batched = not isinstance(actions, list)
        count = _length(self.single_action_space, actions) if batched else len(actions)
        if count != n:
            raise ValueError(f"step: {count} actions for {n} envs")
        asks = []
        for slot in self.live:
            rows = slice(starts[slot.index], starts[slot.index] + slot.count)
            part = _rows(self.single_action_space, actions, rows) if batched else actions[rows]
            asks.append((slot, "step", (part, batched)))
        calls = self._ask(asks)
        results = self._call(calls, self.step_timeout)
        failed = [slot for slot, _ in calls if slot.index not in results]
        fresh = self._restart(failed, starts)

        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        answered, finals = [], []
        for slot, _ in calls:
            if slot.index in results:
                first = starts[slot.index]
                rows = slice(first, first + slot.count)
                (obs, copy), rewards[rows], terminated[rows], truncated[rows], part = results[
                    slot.index
                ]
                if copy is not None:  # written into shared memory, left out of the answer
                    obs = slot.shared.place(obs, copy)
                    finals.append((slot, first, copy))
                else:  # on another machine: its buffers here would only hold memory
                    slot.shared = None
                self._slot_obs[slot.index] = obs
                answered.append((first, part))
        infos = packed_infos.merge(answered, n)
        for slot, first, copy in finals:  # ended episodes' last observations, whole again
            ended = infos.get("_final_obs", np.zeros(n, dtype=bool))[first : first + slot.count]
            for j in np.flatnonzero(ended):
                final = infos["final_obs"][first + j]
                infos["final_obs"][first + j] = slot.shared.take_final(final, copy, j)
        for slot in failed:
            # the step of this worker's envs never happened: end their episodes (module doc)
            first = starts[slot.index]
            fault = {"env_fault": True, "env_fault_reason": slot.reasons[-1]}
            if slot.removed:
                fault["env_removed"] = True
            last = self._slot_rows(slot)
            truncated[first : first + slot.count] = True
            for j in range(slot.count):
                final = {"final_obs": last[j], "final_info": dict(fault)}
                infos = self._add_info(infos, final, first + j)
                if slot.index in fresh:
                    infos = self._add_info(infos, {**fresh[slot.index][j][1], **fault}, first + j)
                else:  # taken out: the rows are dropped from the next call on
                    infos = self._add_info(infos, fault, first + j)
            if slot.index in fresh:
                self._slot_obs[slot.index] = self._slot_batch([o for o, _ in fresh[slot.index]])
        batch = self._batch([slot for slot, _ in calls])  # with the rows of any taken out now
        self._drop_removed(starts)
        return batch, rewards, terminated, truncated, infos

    def _slot_batch(self, items: list[Any]) -> Any:
        """One worker's envs' observations as its batch."""
        out = create_empty_array(self.single_observation_space, len(items))
        return concatenate(self.single_observation_space, items, out)

    def _slot_rows(self, slot: _Slot) -> list[Any]:
        """One worker's last observations, env by env, copied out (they may sit in shared
        memory the worker writes again); ``None`` before its first reset."""
        batch = self._slot_obs.get(slot.index)
        if batch is None:
            return [None] * slot.count
        space = self.single_observation_space
        return list(iterate(batch_space(space, slot.count), _join(space, [batch])))

    def _batch(self, slots: list[_Slot]) -> Any:
        """The observations of ``slots`` (their batches in row order) as one new batch
        (writable, as a ``SyncVectorEnv``'s; what Ray hands back is read-only)."""
        parts = [self._slot_obs[s.index] for s in slots]
        return _join(self.single_observation_space, parts)

    def _drop_removed(self, starts: dict[int, int]) -> None:
        """After a call whose batch still held them, forget the rows of workers taken out."""
        gone = [s for s in self.slots if s.removed and s.index in starts]
        if not gone:
            return
        self._check_enough()
        for slot in gone:
            self._slot_obs.pop(slot.index, None)
        self._resize()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` of every sub-env (called with the arguments when it is a method)."""
        import ray

        refs = [s.actor.call.remote(name, args, kwargs) for s in self.live]
        return tuple(x for part in ray.get(refs, timeout=self.start_timeout) for x in part)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def close_extras(self, **kwargs: Any) -> None:
        import ray

        live = [s for s in self.live if s.actor is not None]
        if live:
            # a polite close first (browsers, X servers clean up), then the kill either way
            refs = [s.actor.close.remote() for s in live]
            ray.wait(refs, num_returns=len(refs), timeout=min(10.0, self.step_timeout))
        self._kill_all()
        if self._owns_ray:
            ray.shutdown()
