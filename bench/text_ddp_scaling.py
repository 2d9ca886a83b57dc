"""GRPO steps/s of the text-policy trainer on 1 and 2 CPU ranks (torchrun, gloo, one thread a
rank), and each rank's memory with DDP and with FSDP2 (issue 40).

Runs the real recipe ``gui/grounding-grpo`` (a tiny model from config, random weights) under
``torchrun --nproc-per-node N`` with the same global batch (``grpo.prompts_per_step`` prompts
of ``grpo.num_samples`` answers, one optimizer step a GRPO step, ``grpo.kl_coef=0.04`` so that
every answer is in the update with its reference log-probs), and prints one table:
seconds a step (the median over the steps after the first; the last, which holds the held-out
evaluation, left out), steps/s and their ratio to the first row, the busiest rank's CPU seconds
a step and their ratio (what the step costs a rank when it has a core to itself: the
collectives' waits are not in it, so on a shared machine it bounds what a quiet one would
show), each rank's model-state bytes
(parameters, gradients and AdamW's two moments held by that rank: with FSDP2 its shards) and
its peak resident memory (the Python process: interpreter, torch and model).

    python bench/text_ddp_scaling.py                    # 1 and 2 ranks, ddp and fsdp
    python bench/text_ddp_scaling.py --size hidden_size=256,intermediate_size=1024,num_hidden_layers=4
    bash bench/gpu_text_ddp.sh                          # GPUs, bf16: the update's tokens/s

The machine may be shared: the table says the load average before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent


def worker(out: str, overrides: list[str]) -> None:
    """One rank (under torchrun): the recipe, with each step's end timed and the memory read."""
    import resource

    import numpy as np
    import torch

    from pixelrl.rl.text.parallel import Parallel

    ends: list[float] = []
    cpu: list[float] = []  # this process's CPU seconds (a shared machine stretches wall time)
    state: dict[str, int] = {}
    plain = Parallel.checkpoint

    def checkpoint(self, run, step, policy, opt, rng):  # called after every step
        ends.append(time.perf_counter())
        cpu.append(time.process_time())

        def local(t):
            return t.to_local() if hasattr(t, "to_local") else t

        nbytes = 0
        for p in policy.model.parameters():
            nbytes += local(p).numel() * local(p).element_size()
            if p.grad is not None:
                nbytes += local(p.grad).numel() * local(p.grad).element_size()
        for s in opt.state.values():
            nbytes += sum(local(v).numel() * local(v).element_size() for v in s.values()
                          if torch.is_tensor(v) and v.dim() > 0)  # fmt: skip
        state["bytes"] = nbytes
        return plain(self, run, step, policy, opt, rng)

    Parallel.checkpoint = checkpoint
    from pixelrl.gui_agent import train_vlm

    train_vlm.run_recipe("gui/grounding-grpo", overrides)
    rank = int(os.environ.get("RANK", "0"))
    steps = np.diff(ends[:-1])  # step 2 .. N-1 (the last holds the final evaluation)
    row = {
        "rank": rank,
        "step_s": float(np.median(steps)),
        "cpu_step_s": float(np.median(np.diff(cpu[:-1]))),
        "state_bytes": state["bytes"],
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "gpu_peak_bytes": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0,
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(row))


def launch(ranks: int, shard: str, args, out: Path) -> dict:
    out.mkdir(parents=True)
    overrides = [
        f"train.output_dir={out / 'run'}",
        "train.progress=false",
        f"torch_threads={args.threads}",
        f"device={args.device}",
        f"grpo.steps={args.steps}",
        f"grpo.prompts_per_step={args.prompts}",
        f"grpo.num_samples={args.samples}",
        f"grpo.minibatch={args.prompts * args.samples}",
        f"grpo.kl_coef={args.kl}",
        "eval.interval=0",
        f"eval.grounding_items={args.eval_items}",
        f"distributed.shard={shard}",
    ]
    if args.dtype and shard == "ddp":  # replicated: the model in bf16 (weights, AdamW states)
        overrides.append(f"dtype={args.dtype}")
    if args.dtype and shard == "fsdp":  # sharded: fp32 master weights, bf16 compute
        overrides.append(f"distributed.param_dtype={args.dtype}")
    for key, spec in (("text_size", args.size), ("vision_size", args.vision_size)):
        pairs = [kv.split("=") for kv in spec.split(",") if kv]
        if pairs:
            overrides.append(f"{key}={{{', '.join(f'{k}: {v}' for k, v in pairs)}}}")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc-per-node", str(ranks), __file__, "--worker", str(out), *overrides]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{ranks} rank(s), {shard}: failed\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    ranked = [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]
    with open(out / "run" / "history.csv") as f:
        history = list(csv.DictReader(f))[1:-1]  # as the step times: not the first, not the last
    return {
        "ranks": ranks,
        "shard": shard,
        "step_s": max(r["step_s"] for r in ranked),
        "cpu_step_s": max(r["cpu_step_s"] for r in ranked),
        "state_mb": max(r["state_bytes"] for r in ranked) / 2**20,
        "rss_mb": max(r["peak_rss_bytes"] for r in ranked) / 2**20,
        "gpu_mb": max(r["gpu_peak_bytes"] for r in ranked) / 2**20,
        # summed over ranks by the trainer (pixelrl.rl.text.parallel.Parallel.mean_row)
        "update_tok_s": median(float(r["update_tokens_per_s"]) for r in history),
        "gen_tok_s": median(float(r["gen_tokens_per_s"]) for r in history),
    }


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="1:ddp,2:ddp,2:fsdp", help="RANKS:SHARD, ...")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=8, help="grpo.prompts_per_step (global)")
    parser.add_argument("--samples", type=int, default=8, help="grpo.num_samples")
    parser.add_argument("--kl", type=float, default=0.04,
                        help="grpo.kl_coef: > 0 keeps every row in the update (a random model's "
                        "answers mostly score alike, and rows without advantage are skipped)")  # fmt: skip
    parser.add_argument("--eval-items", type=int, default=8)
    parser.add_argument("--size", default="", help="text_size: hidden_size=256,num_hidden_layers=4")
    parser.add_argument("--vision-size", default="", help="vision_size: embed_dim=384,depth=6")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="", help="bfloat16: ddp's model, fsdp's compute")
    parser.add_argument("--threads", type=int, default=1, help="torch threads a rank")
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.runs.split(","):
            ranks, shard = spec.split(":")
            rows.append(launch(int(ranks), shard, args, Path(tmp) / spec.replace(":", "-")))
            load.append(os.getloadavg()[0])
    base, cpu_base = 1 / rows[0]["step_s"], 1 / rows[0]["cpu_step_s"]
    print(f"gui/grounding-grpo on {args.device} ({args.dtype or 'float32'}), {args.prompts} "
          f"prompts x {args.samples} answers a step (global), {args.steps} steps, "
          f"kl_coef {args.kl}, {args.threads} thread(s) a rank; load average (1 min) before/after each: "
          f"{', '.join(f'{x:.2f}' for x in load)}")  # fmt: skip
    print(f"{'ranks':>5} {'shard':>5} {'s/step':>8} {'steps/s':>8} {'vs first':>8} "
          f"{'CPU s/step/rank':>15} {'vs first':>8} "
          f"{'update tok/s':>12} {'gen tok/s':>10} {'state MB/rank':>13} {'peak RSS MB':>11}"
          f"{' peak GPU MB' if args.device != 'cpu' else ''}")  # fmt: skip
    for r in rows:
        gpu = f" {r['gpu_mb']:>11.0f}" if args.device != "cpu" else ""
        print(f"{r['ranks']:>5} {r['shard']:>5} {r['step_s']:>8.3f} {1 / r['step_s']:>8.2f} "
              f"{1 / r['step_s'] / base:>7.2f}x {r['cpu_step_s']:>15.3f} "
              f"{1 / r['cpu_step_s'] / cpu_base:>7.2f}x {r['update_tok_s']:>12.0f} {r['gen_tok_s']:>10.0f} "
              f"{r['state_mb']:>13.2f} {r['rss_mb']:>11.0f}{gpu}")  # fmt: skip


if __name__ == "__main__":
    main()
