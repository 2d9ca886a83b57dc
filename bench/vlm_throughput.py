"""VLM policy throughput: sampling (GRPO's G completions per prompt) and log-prob scoring.

Prints two rows per model: prompts/s and generated tokens/s while sampling, and completion
tokens/s while scoring (forward + backward, as in a GRPO update), with each prompt run once for
its G samples (``VLMPolicy.share_prompts``, the default) and, as the peer, once per sample; then
the speed-up. Tiny random models by default;
any ``--model`` that :func:`pixelrl.vision.vlm.load_vlm` accepts works (a local path on a GPU box)::

    python bench/vlm_throughput.py                       # every tiny family, CPU
    python bench/vlm_throughput.py --model tiny-qwen2_vl --device cuda --prompts 16
    # a ~200M-parameter language model built from config, bf16 (a GPU check):
    python bench/vlm_throughput.py --model tiny-qwen2_5_vl --device cuda --dtype bfloat16 \
        --hidden 1024 --layers 16 --heads 16 --prompts 16
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def bench_one(
    policy,
    name: str,
    device: str,
    prompts: int,
    samples: int,
    new_tokens: int,
    repeats: int,
    share_prompts: bool = True,
):
    """One row: ``policy`` (a loaded :class:`pixelrl.vision.vlm.VLMPolicy`) timed with
    ``share_prompts`` set as given."""
    import torch

    policy.share_prompts = share_prompts
    policy.model.eval()
    policy.model.zero_grad(set_to_none=True)
    rng = np.random.default_rng(0)
    screens = [rng.integers(0, 256, (480, 640, 3), dtype=np.uint8) for _ in range(prompts)]
    instructions = [f"Click the button number {i}" for i in range(prompts)]
    # warm-up, then timed sampling
    policy.generate(screens[:1], instructions[:1], num_samples=1, max_new_tokens=2)
    t0, tokens = time.perf_counter(), 0
    for _ in range(repeats):
        groups = policy.generate(
            screens, instructions, num_samples=samples, max_new_tokens=new_tokens
        )
        tokens += sum(len(c.token_ids) for g in groups for c in g)
    gen_s = time.perf_counter() - t0
    flat = [c for g in groups for c in g]
    rows = (
        [s for s in screens for _ in range(samples)],
        [i for i in instructions for _ in range(samples)],
    )
    policy.model.train()
    t0, scored_tokens = time.perf_counter(), 0
    for _ in range(repeats):
        scored = policy.score(*rows, flat)
        scored.sequence_logprobs.sum().backward()
        scored_tokens += int(scored.mask.sum())
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    score_s = time.perf_counter() - t0
    params = sum(p.numel() for p in policy.model.parameters())
    return {
        "model": name,
        "prompts run": "once" if share_prompts else "per sample",
        "params": params,
        "prompts/s": prompts * repeats / gen_s,
        "samples/s": prompts * samples * repeats / gen_s,
        "gen tokens/s": tokens / gen_s,
        "score tokens/s": scored_tokens / score_s,
    }


def main() -> None:
    from pixelrl.vision.vlm import FAMILIES

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", action="append", help="repeatable; default: every tiny family")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8, help="G completions per prompt")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dtype", default=None, help="float32, bfloat16, float16")
    parser.add_argument("--hidden", type=int, help="tiny models: text hidden size")
    parser.add_argument("--layers", type=int, help="tiny models: text layers")
    parser.add_argument("--heads", type=int, help="tiny models: attention heads (kv heads: half)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    models = args.model or [f"tiny-{f}" for f in FAMILIES]
    text_size = {}
    if args.hidden:
        text_size.update(hidden_size=args.hidden, intermediate_size=4 * args.hidden)
    if args.layers:
        text_size["num_hidden_layers"] = args.layers
    if args.heads:
        text_size.update(
            num_attention_heads=args.heads, num_key_value_heads=max(1, args.heads // 2)
        )
    rows = []
    from tqdm import tqdm

    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    for name in tqdm(models, desc="models"):
        extra = {"text_size": text_size} if text_size and name.startswith("tiny-") else {}
        codec = GUIActionCodec.for_model(name)
        policy = load_vlm(
            name, codec, dtype=args.dtype, device=args.device, **extra
        )  # once for both
        for share in (True, False):
            rows.append(
                bench_one(
                    policy,
                    name,
                    args.device,
                    args.prompts,
                    args.samples,
                    args.new_tokens,
                    args.repeats,
                    share,
                )  # fmt: skip
            )
    cols = ["model", "prompts run", "params", "prompts/s", "samples/s", "gen tokens/s",
            "score tokens/s"]  # fmt: skip
    print(
        f"\nG={args.samples}, {args.prompts} prompts of 640x480 screenshots, {args.new_tokens} new tokens, {args.device}"
    )
    print(" | ".join(f"{c:>15}" for c in cols))
    for r in rows:
        print(
            " | ".join(
                f"{r[c]:>15,.1f}"
                if isinstance(r[c], float)
                else f"{r[c]:>15,}"
                if isinstance(r[c], int)
                else f"{r[c]:>15}"
                for c in cols
            )
        )
    print("\nspeed-up of running each prompt once (sampling, scoring):")
    for once, each in zip(rows[::2], rows[1::2]):
        gen = once["samples/s"] / each["samples/s"]
        score = once["score tokens/s"] / each["score tokens/s"]
        print(f"  {once['model']:>18}: {gen:.2f}x, {score:.2f}x")


if __name__ == "__main__":
    main()
