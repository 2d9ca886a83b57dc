"""Speed of the one-step grounding GRPO recipe (``pixelrl train gui/grounding-grpo``), end to end.

Runs the real recipe -- sampling G completions per prompt, the verifiable click reward,
group-normalised advantages, the clipped token-level update, held-out grounding evaluation --
with a model built from config (random weights, a tokenizer trained on the spot; offline), and
prints one table: parameters, completions/s and generated tokens/s while sampling, completion
tokens/s in the update, seconds a step, and held-out click accuracy before and after.
The first ``--warmup`` steps (CUDA kernels being built, allocator growing) are left out of the
medians.

    python bench/grounding_grpo_speed.py                       # tiny model, CPU, a few steps
    # the GPU check of the GUI-training issue: a ~190M-parameter Qwen2-VL-shaped model in bf16
    python bench/grounding_grpo_speed.py --device cuda --dtype bfloat16 --hidden 1024 \\
        --intermediate 2816 --layers 16 --heads 16 --kv-heads 4 --vision-dim 256 \\
        --vision-depth 4 --max-pixels 19200 --prompts-per-step 16 --steps 40
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def model_overrides(args: argparse.Namespace) -> list[str]:
    """The model (built from config), device, dtype and threads: the same for SFT and GRPO."""
    text = (
        f"{{hidden_size: {args.hidden}, intermediate_size: {args.intermediate}, "
        f"num_hidden_layers: {args.layers}, num_attention_heads: {args.heads}, "
        f"num_key_value_heads: {args.kv_heads}}}"
    )
    vision = (
        f"{{embed_dim: {args.vision_dim}, depth: {args.vision_depth}, "
        f"num_heads: {max(1, args.vision_dim // 64)}, max_pixels: {args.max_pixels}}}"
    )
    return [
        f"model=tiny-{args.family}",
        f"device={args.device}",
        f"dtype={args.dtype}" if args.dtype else "dtype=null",
        f"text_size={text}",
        f"vision_size={vision}",
        f"torch_threads={args.threads}",
        "eval.interval=0",
        f"eval.grounding_items={args.eval_items}",
    ]


def grpo_overrides(args: argparse.Namespace, out: str, init: str) -> list[str]:
    return [
        *model_overrides(args),
        f"init={init}",
        f"grpo.steps={args.steps}",
        f"grpo.prompts_per_step={args.prompts_per_step}",
        f"grpo.num_samples={args.samples}",
        f"grpo.minibatch={args.minibatch}",
        f"grpo.kl_coef={args.kl}",
        f"train.output_dir={out}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--family", default="qwen2_vl")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="", help="e.g. bfloat16 (default: the model's float32)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--intermediate", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--vision-dim", type=int, default=64)
    parser.add_argument("--vision-depth", type=int, default=2)
    parser.add_argument("--max-pixels", type=int, default=64 * 64)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8, help="G, completions per prompt")
    parser.add_argument("--minibatch", type=int, default=32)
    parser.add_argument("--eval-items", type=int, default=50)
    parser.add_argument("--kl", type=float, default=0.04, help="grpo.kl_coef (a frozen reference)")
    parser.add_argument(
        "--sft-steps", type=int, default=40,
        help="SFT steps on expert demos first, so that completions parse and rewards differ",
    )  # fmt: skip
    parser.add_argument("--sft-episodes", type=int, default=60)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    parser.add_argument("--out", default="", help="folder for both runs (default: a temporary one)")
    args = parser.parse_args()
    if args.steps <= args.warmup:
        parser.error("--steps must exceed --warmup")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from pixelrl.gui_agent.train_vlm import (
        run_recipe as run,  # the recipe as `pixelrl train` runs it
    )

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        init = ""
        if args.sft_steps:
            sft = run("gui/sft", [*model_overrides(args), f"sft.steps={args.sft_steps}",
                                  f"data.episodes={args.sft_episodes}",
                                  f"train.output_dir={out / 'sft'}"])  # fmt: skip
            init = str(Path(sft["run_dir"]) / "model")
        start = time.perf_counter()
        result = run("gui/grounding-grpo", grpo_overrides(args, str(out / "grpo"), init))
        wall = time.perf_counter() - start
        with open(Path(result["run_dir"]) / "history.csv") as f:
            rows = list(csv.DictReader(f))[args.warmup :]
        params = _parameters(Path(result["run_dir"]) / "model")

    def median(key: str) -> float:
        return float(np.median([float(r[key]) for r in rows]))

    first, last = result["eval"][0], result["eval"][-1]
    table = [
        ("model", f"tiny-{args.family} from config, {args.dtype or 'float32'}, {args.device}"),
        ("parameters", f"{params / 1e6:.1f} M"),
        ("completions per step", f"{args.prompts_per_step} prompts x G={args.samples}"),
        ("sampling: completions/s", f"{median('samples_per_s'):,.1f}"),
        ("sampling: generated tokens/s", f"{median('gen_tokens_per_s'):,.0f}"),
        ("update: completion tokens/s", f"{median('update_tokens_per_s'):,.0f}"),
        ("seconds a step (sample + update)", f"{median('sample_s') + median('update_s'):.2f}"),
        ("held-out click accuracy, start -> end",
         f"{first['accuracy']:.3f} -> {last['accuracy']:.3f} (n={last['n']})"),
        ("GRPO run (steps, evals, set-up)", f"{wall:.0f} s"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in table)
    print(f"\nGRPO grounding speed (medians of steps {args.warmup + 1}-{args.steps})")
    for key, value in table:
        print(f"{key:<{width}}  {value}")


def _parameters(folder: Path) -> int:
    """Parameter count of a saved model, read from its safetensors headers (no weights loaded)."""
    from safetensors import safe_open

    total = 0
    for path in folder.glob("*.safetensors"):
        with safe_open(str(path), "pt") as f:
            for name in f.keys():
                total += int(np.prod(f.get_slice(name).get_shape()))
    return total


if __name__ == "__main__":
    main()
