"""Text-policy learners under ``torchrun``: every rank its share of each step, one model.

    torchrun --nproc-per-node 2 -m pixelrl train gui/grounding-grpo           # gloo on CPU
    torchrun --nproc-per-node 8 -m pixelrl train gui/sft device=cuda distributed.shard=fsdp

The config's batch is the global one. With W ranks each rank takes 1/W of every step
(``sft.batch_size`` examples, ``grpo.prompts_per_step`` prompts, the multi-turn adapter's
``GROUPS_PER_STEP`` starts; a count W does not divide is a ConfigError) and the update is the
one the whole batch gives in one process:

- every rank draws the same global batch (the same seeded numpy generator) and keeps its
  contiguous share (:meth:`Parallel.mine`); sampling and envs use a per-rank seed
  (:meth:`Parallel.seed`; rank 0's is the single-process one);
- each rank's loss is rescaled by ``its tokens x W / all ranks' tokens`` (:meth:`Parallel.scale`),
  so the average of the ranks' gradients is the gradient of the global token mean;
- ``distributed.shard=ddp``: parameters replicated (rank 0's broadcast at start), gradients
  averaged after each backward in a few flat all-reduces
  (:func:`pixelrl.rl.distributed.all_reduce_gradients`, the DD-PPO way);
  ``fsdp``: FSDP2 (``torch.distributed.fsdp.fully_shard``) on every decoder layer and on every
  other module with weights of its own (a VLM's ``generate`` encodes images outside the model's
  forward), so parameters, gradients and AdamW's states take 1/W of the memory on each rank;
  ``distributed.param_dtype=bfloat16`` computes in bf16 and reduces gradients in fp32;
- what sits outside the model (a VLM's pointer head, :func:`outside_model`) is replicated under
  both: rank 0's broadcast at start, its gradients all-reduced, one clip over it and the shards
  (:func:`pixelrl.rl.distributed.clip_grad_norm`); checkpoints hold it beside the model.

Rank 0 alone writes the run folder (config, history, evaluations, curve, model). With ddp the
held-out evaluation runs on rank 0 alone; with fsdp it runs on every rank in lockstep (each
forward needs every rank's shard: ``generate`` then keeps the ranks in step, transformers'
``synced_gpus``) and rank 0 keeps the row. Checkpoints (``train.checkpoint_interval``) are
``torch.distributed.checkpoint`` folders of model and optimizer (sharded with fsdp) with each
rank's generators; ``train.resume=RUN_FOLDER`` continues from the latest, with the same world
size. A rank that raises writes its error to the process group's store before it stops; a rank
whose collective fails then names it; collectives time out after ``distributed.timeout_s``.
Without ``torchrun`` (no ``WORLD_SIZE``) everything here is a no-op but the checkpoints.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from pixelrl.config import Config, ConfigError

SHARDS = ("ddp", "fsdp")
PARAM_DTYPES = ("", "bfloat16", "float16")


class RankFailed(RuntimeError):
    """Another rank stopped the run (its error, when it could say it)."""


def check_parallel(cfg: Config) -> None:
    """ConfigError for a ``distributed``, ``gradient_checkpointing`` or ``train`` value (checkpoint,
    resume) no run can use; checked before any run folder or model. A config built without
    these keys (an older caller's) gets their defaults."""
    from pixelrl.rl.text.config import COMMON

    for key in ("distributed", "gradient_checkpointing", "train"):
        if isinstance(COMMON[key], dict):
            setattr(cfg, key, {**COMMON[key], **cfg.get(key, {})})
        else:
            cfg.setdefault(key, COMMON[key])
    d = cfg.distributed
    if d.shard not in SHARDS:
        raise ConfigError(f"distributed.shard must be one of {', '.join(SHARDS)}, got {d.shard!r}")
    if (d.param_dtype or "") not in PARAM_DTYPES:
        raise ConfigError(
            f"distributed.param_dtype must be bfloat16, float16 or empty, got {d.param_dtype!r}"
        )
    if d.param_dtype and d.shard != "fsdp":
        raise ConfigError(
            f"distributed.param_dtype={d.param_dtype} is FSDP2's compute dtype (with "
            "distributed.shard=fsdp); a DDP model in bf16: dtype=bfloat16"
        )
    if (
        isinstance(d.timeout_s, bool)
        or not isinstance(d.timeout_s, (int, float))
        or d.timeout_s <= 0
    ):
        raise ConfigError(f"distributed.timeout_s must be a number > 0, got {d.timeout_s!r}")
    if not isinstance(cfg.gradient_checkpointing, bool):
        raise ConfigError(
            f"gradient_checkpointing must be true or false, got {cfg.gradient_checkpointing!r}"
        )
    every = cfg.train.checkpoint_interval
    if isinstance(every, bool) or not isinstance(every, int) or every < 0:
        raise ConfigError(f"train.checkpoint_interval must be an integer >= 0, got {every!r}")
    if cfg.train.resume and not (Path(str(cfg.train.resume)) / "checkpoints" / "latest").is_file():
        raise ConfigError(
            f"train.resume: {cfg.train.resume} holds no checkpoint (checkpoints/latest); "
            "set train.checkpoint_interval in the run to resume"
        )


def outside_model(policy) -> list:
    """The policy's modules outside its model (a VLM's pointer head): FSDP does not shard them,
    so under either split they are replicated, broadcast from rank 0 at start and their
    gradients averaged (:meth:`Parallel.reduce`)."""
    head = getattr(policy, "pointer", None)
    return [head] if head is not None else []


def checkpointed(policy):
    """The module a checkpoint holds: the model, or with modules outside it (the pointer head,
    whose parameters the optimizer holds too) one over both, named ``model.`` and ``outside.``
    (a model alone keeps the names its checkpoints always had)."""
    import torch

    extra = outside_model(policy)
    if not extra:
        return policy.model
    return torch.nn.ModuleDict({"model": policy.model, "outside": torch.nn.ModuleList(extra)})


def _collective_failed(e: BaseException) -> bool:
    """Whether ``e`` is a collective that failed (a peer gone, a timeout), not this rank's own."""
    import torch

    if isinstance(e, getattr(torch.distributed, "DistError", ())):
        return True
    text = str(e)
    return any(
        w in text for w in ("Connection closed", "Connection reset", "imed out", "gloo", "NCCL")
    )


class Parallel:
    """This process's place in the run: rank, world size, how the model is split (module doc)."""

    def __init__(self, cfg: Config) -> None:
        import torch

        check_parallel(cfg)
        self.shard = str(cfg.distributed.shard)
        self.rank, self.world_size, self.local_rank = 0, 1, 0
        self.sharded = False  # fully_shard applied (fsdp under torchrun, any world size)
        if "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ:  # under torchrun
            if str(cfg.device).startswith("cuda"):
                self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
                torch.cuda.set_device(self.local_rank)
            if not torch.distributed.is_initialized():
                # GPUs: nccl for tensors on them, gloo for the few numbers kept on the CPU
                backend = "cpu:gloo,cuda:nccl" if str(cfg.device).startswith("cuda") else "gloo"
                torch.distributed.init_process_group(
                    backend, timeout=timedelta(seconds=float(cfg.distributed.timeout_s))
                )
            self.rank = torch.distributed.get_rank()
            self.world_size = torch.distributed.get_world_size()
        self.timeout_s = float(cfg.distributed.timeout_s)
        self.resume = Path(str(cfg.train.resume)) if cfg.train.resume else None
        if self.resume is not None:
            meta = self._meta(self.resume)
            if (meta["world_size"], meta["shard"]) != (self.world_size, self.shard):
                raise ConfigError(
                    f"train.resume: {self.resume} was written by {meta['world_size']} rank(s) "
                    f"with distributed.shard={meta['shard']}; this run has {self.world_size} "
                    f"with {self.shard}: resume with torchrun --nproc-per-node "
                    f"{meta['world_size']} distributed.shard={meta['shard']}"
                )
        if self.is_main:  # the run's header: every text loop builds its Parallel first
            print(self.header(cfg), flush=True)

    def header(self, cfg: Config) -> str:
        """The run in one line: on how many ranks, split how, on what, with how many threads."""
        import torch

        from pixelrl.threads import applied

        where = f"{self.world_size} ranks (torchrun, {self.shard})" if self.on else "1 process"
        threads = int(cfg.get("torch_threads") or 0) or torch.get_num_threads()
        chosen = applied()  # the thread policy's choice (train() wrote its count in cfg), and why
        if chosen is not None and chosen.count == threads:
            threads = chosen
        return f"{cfg.recipe}: {where}, device {cfg.device}, torch threads {threads}"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def on(self) -> bool:
        return self.world_size > 1

    # -- shares of a step ------------------------------------------------------------------
    def share(self, cfg: Config, key: str) -> int:
        """This rank's part of the global count at dotted ``key``; a ConfigError if W does not
        divide it."""
        section, name = key.rsplit(".", 1)
        value = int(cfg[section][name])
        if value % self.world_size:
            raise ConfigError(
                f"{key}={value} does not split over {self.world_size} ranks: the config's batch "
                f"is the global one, each rank takes 1/{self.world_size}; make it a multiple "
                f"of {self.world_size}"
            )
        return value // self.world_size

    def mine(self, items: Sequence) -> list:
        """This rank's contiguous share of ``items`` (the global batch every rank drew)."""
        n, w, r = len(items), self.world_size, self.rank
        return list(items[n * r // w : n * (r + 1) // w])

    def seed(self, base: int) -> int:
        """A rank's own seed (sampling, envs): ``base`` on rank 0, as in one process."""
        return int(base) + 1000 * self.rank

    # -- the model -------------------------------------------------------------------------
    def prepare(self, policy, cfg: Config):
        """Gradient checkpointing if asked; rank 0's parameters everywhere (ddp) or the model
        sharded (fsdp). Returns ``policy``. GRPO's frozen reference is prepared the same way
        (copied before the policy is: a sharded model is not copied)."""
        import torch

        if cfg.gradient_checkpointing:
            model = policy.model
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
            if hasattr(model, "enable_input_require_grads"):  # LoRA: frozen embeddings
                model.enable_input_require_grads()
        from pixelrl.rl.distributed import broadcast_parameters

        if self.shard == "fsdp" and torch.distributed.is_initialized():
            self._fully_shard(policy, cfg)
            self.sharded = True
        elif self.on:
            with torch.no_grad():
                broadcast_parameters(policy.model)
        if self.on:  # what sits outside the model (the pointer head): replicated, rank 0's
            with torch.no_grad():
                for module in outside_model(policy):
                    broadcast_parameters(module)
        return policy

    def _fully_shard(self, policy, cfg: Config) -> None:
        import torch
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        model = policy.model
        mesh = init_device_mesh("cuda" if str(cfg.device).startswith("cuda") else "cpu",
                                (self.world_size,))  # fmt: skip
        mp = edges = MixedPrecisionPolicy()
        if cfg.distributed.param_dtype:
            low = getattr(torch, cfg.distributed.param_dtype)
            mp = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32)
            # the modules around the layers (embeddings, vision tower, norms, head) hand float32
            # on: transformers' code casts between them to the weights' (float32) dtype
            edges = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32,
                                         output_dtype=torch.float32)  # fmt: skip
        blocks = set(getattr(model, "_no_split_modules", None) or ())
        layers = [m for m in model.modules() if type(m).__name__ in blocks]
        inside = {id(p) for layer in layers for p in layer.parameters()}
        rest = [m for m in model.modules() if m is not model
                and any(id(p) not in inside for p in m.parameters(recurse=False))]  # fmt: skip
        for module in layers:  # inner units first, then the root
            fully_shard(module, mesh=mesh, mp_policy=mp)
        for module in rest:
            fully_shard(module, mesh=mesh, mp_policy=edges)
        fully_shard(model, mesh=mesh, mp_policy=edges)
        # FSDP2 sets its units up on the root's first forward; generate may call the vision
        # tower first (images encoded before prefill), so set them up now.
        model._get_fsdp_state()._lazy_init()
        # Every rank must run the same forwards: no per-batch shortcut that depends on which
        # rows repeat (VLMPolicy.share_prompts), which differs between ranks' shares.
        policy.share_prompts = False

    # -- collectives -----------------------------------------------------------------------
    def scale(self, count: float) -> float:
        """The factor on a rank's mean loss over ``count`` items (tokens, sequences) that makes
        the ranks' average gradient the gradient of the global mean: ``count x W / total``."""
        if not self.on:
            return 1.0
        self._arrive()
        total = self._sum([float(count)])[0]
        return float(count) * self.world_size / total if total else 0.0

    def reduce(self, parameters) -> None:
        """Average the gradients over ranks: all of them (ddp); with fsdp the replicated ones
        outside the model (the pointer head), FSDP having reduce-scattered its shards'."""
        if not self.on:
            return
        from pixelrl.rl.distributed import all_reduce_gradients

        if self.shard == "ddp":
            all_reduce_gradients(parameters)
        elif self.sharded:
            from torch.distributed.tensor import DTensor

            all_reduce_gradients([p for p in parameters if not isinstance(p, DTensor)])

    def most(self, n: int) -> int:
        """The largest ``n`` over ranks (every rank then takes as many optimizer steps)."""
        if not self.on:
            return n
        import torch

        self._arrive()
        t = torch.tensor([n], dtype=torch.int64)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        return int(t.item())

    def mean_row(self, row: dict[str, float]) -> dict[str, float]:
        """A step's row over all ranks: speeds (``*_per_s``) summed, the rest averaged."""
        if not self.on:
            return row
        from pixelrl.rl.distributed import all_gather_objects

        self._arrive()
        rows = all_gather_objects(row)
        out = {}
        for key in dict.fromkeys(k for r in rows for k in r):
            values = [float(r[key]) for r in rows if key in r]
            out[key] = sum(values) if key.endswith("_per_s") else sum(values) / len(values)
        return out

    def _sum(self, values: list[float]) -> list[float]:
        from pixelrl.rl.distributed import all_reduce_sum

        return all_reduce_sum(values)

    def barrier(self) -> None:
        if self.on:
            import torch

            torch.distributed.barrier()

    @contextlib.contextmanager
    def guard(self):
        """Around a run: this rank's error goes to the store for the others; a failed collective
        here names the rank that stopped, when it said so."""
        if not self.on:
            yield
            return
        import torch

        store = torch.distributed.distributed_c10d._get_default_store()
        try:
            yield
        except Exception as e:
            try:
                who = (
                    store.get("pixelrl/failed").decode() if store.check(["pixelrl/failed"]) else ""
                )
            except Exception:  # the store is gone too: say what this rank knows
                who = ""
            if who and not who.startswith(f"rank {self.rank} "):
                raise RankFailed(f"{who}; rank {self.rank} stops too") from e
            if not who and _collective_failed(e):
                raise RankFailed(
                    f"rank {self.rank}: a collective failed ({str(e).splitlines()[0][:200]}): "
                    "another rank stopped without saying why (killed? out of memory? torchrun's "
                    "summary names it) or did not answer within distributed.timeout_s="
                    f"{self.timeout_s:g}{self._missing()}"
                ) from e
            with contextlib.suppress(Exception):
                store.set("pixelrl/failed", f"rank {self.rank} stopped: {type(e).__name__}: {e}")
                # close this rank's connections now, so the others' waits fail at once and
                # they read the error above before torchrun's agent stops them
                torch.distributed.destroy_process_group()
                time.sleep(2)
            raise

    def _arrive(self) -> None:
        """Count this rank's steps into the loops' collectives in the store (to name a rank
        that never came, when one fails)."""
        import torch

        self._arrived = getattr(self, "_arrived", 0) + 1
        store = torch.distributed.distributed_c10d._get_default_store()
        store.set(f"pixelrl/arrived/{self.rank}", str(self._arrived))

    def _missing(self) -> str:
        """The ranks that never reached the collective this rank failed in, as a clause."""
        import torch

        try:
            store = torch.distributed.distributed_c10d._get_default_store()
            late = []
            for r in range(self.world_size):
                key = f"pixelrl/arrived/{r}"
                n = int(store.get(key)) if store.check([key]) else 0
                if r != self.rank and n < getattr(self, "_arrived", 0):
                    late.append(str(r))
        except Exception:
            return ""
        return f"; rank {', '.join(late)} never reached it" if late else ""

    def close(self) -> None:
        if self.on:
            import torch

            torch.distributed.destroy_process_group()

    def run(self, cfg: Config):
        """The run folder (:class:`~pixelrl.run_folder.Run`): rank 0 writes it; every rank
        knows its path (rank 0's, when the config leaves it to the clock)."""
        from pixelrl.run_folder import Run

        if self.on and not cfg.train.output_dir and not cfg.train.resume:
            from pixelrl.rl.distributed import all_gather_objects

            cfg.train.output_dir = str(all_gather_objects(Run.default_folder(cfg))[0])
        return Run(cfg, main=self.is_main)

    # -- evaluation and the saved model ----------------------------------------------------
    def evaluate(self, evaluation, run, step: int, policy) -> None:
        """The held-out evaluation: rank 0 alone (ddp), every rank in lockstep (fsdp)."""
        if self.is_main or self.sharded:
            evaluation.add(run, step, policy)

    def save_model(self, cfg: Config, adapter, policy, folder: Path) -> None:
        """``adapter.save`` of the trained model, on rank 0; with fsdp the full weights are
        gathered first into a plain copy of the policy (loaded again from the config)."""
        if self.sharded:
            from torch.distributed.checkpoint.state_dict import (
                StateDictOptions,
                get_model_state_dict,
            )

            full = get_model_state_dict(policy.model,
                                        options=StateDictOptions(full_state_dict=True, cpu_offload=True))  # fmt: skip
            if self.is_main:
                from pixelrl.rl.text.policy import load_text_policy

                plain = load_text_policy(cfg, adapter.codec(), adapter.corpus)
                plain.model.load_state_dict(full)
                for mine, theirs in zip(outside_model(plain), outside_model(policy)):
                    mine.load_state_dict(theirs.state_dict())  # replicated: rank 0's is whole
                adapter.save(plain, folder)
        elif self.is_main:
            adapter.save(policy, folder)
        self.barrier()

    # -- checkpoints -----------------------------------------------------------------------
    @staticmethod
    def _meta(run_dir: Path) -> dict[str, Any]:
        from pixelrl.rl.text.dcp_data import read_meta

        return read_meta(run_dir)

    def checkpoint(self, run, step: int, policy, opt, rng, extras: dict | None = None) -> None:
        """:meth:`save_checkpoint` after every ``train.checkpoint_interval`` steps (0: never)."""
        every = int(run.cfg.train.checkpoint_interval)
        if every and step % every == 0:
            self.save_checkpoint(run, step, policy, opt, rng, extras)

    def save_checkpoint(self, run, step: int, policy, opt, rng, extras: dict | None = None) -> None:
        """``checkpoints/step_N``: model and optimizer (torch.distributed.checkpoint, sharded
        with fsdp), each rank's generators and ``extras``' states (each object of it that has a
        ``state_dict``: the loop's :class:`~pixelrl.rl.text.best.Validation`, an adapter's replay
        pool), and (rank 0) the step, history, evaluations and validations."""
        import torch
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        folder = run.folder / "checkpoints" / f"step_{step}"
        model_sd, optim_sd = get_state_dict(checkpointed(policy), opt)
        dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(folder))
        generators = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state()}
        states = {k: v.state_dict() for k, v in (extras or {}).items() if hasattr(v, "state_dict")}
        torch.save({**generators, "extras": states}, folder / f"rank{self.rank}.pt")
        if self.is_main:
            meta = {"step": step, "world_size": self.world_size, "shard": self.shard,
                    "history": run.history, "evals": run.evals,
                    "validations": run.validations}  # fmt: skip
            (folder / "meta.json").write_text(json.dumps(meta))
            (folder.parent / "latest").write_text(folder.name)
        self.barrier()

    def load_checkpoint(self, run, policy, opt, rng, extras: dict | None = None) -> int:
        """Restore the latest checkpoint of ``train.resume`` (if any), ``extras``' states
        included: returns the step to go on from (0 without one)."""
        if self.resume is None:
            return 0
        import torch
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        from pixelrl.rl.text.dcp_data import load_folder, load_rank_file

        meta = self._meta(self.resume)
        folder = Path(meta["folder"])
        model_sd, optim_sd = get_state_dict(checkpointed(policy), opt)
        state = {"model": model_sd, "optim": optim_sd}
        load_folder(state, folder)  # read as data: a crafted folder is a ResumeError
        set_state_dict(checkpointed(policy), opt, model_state_dict=state["model"],
                       optim_state_dict=state["optim"])  # fmt: skip
        generators = load_rank_file(folder / f"rank{self.rank}.pt")
        rng.bit_generator.state = generators["numpy"]
        torch.set_rng_state(generators["torch"])
        saved = generators.get("extras", {})  # (checkpoints from before extras: none)
        for name, obj in (extras or {}).items():
            if name in saved and hasattr(obj, "load_state_dict"):
                obj.load_state_dict(saved[name])
        run.history, run.evals = list(meta["history"]), list(meta["evals"])
        run.validations = list(meta.get("validations", []))
        return int(meta["step"])
