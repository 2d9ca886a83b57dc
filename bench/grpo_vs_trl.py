"""Grounding GRPO, ours against TRL's ``GRPOTrainer``: the same work, in one run, alternating.

Both sides start from the same model folder (a tiny SmolVLM built from config, the shape of
``gui_agent/configs/sft_grounding.yaml``, briefly SFT-trained on grounding samples so that its
answers parse and rewards differ within a group; or ``--init`` an existing model folder), and
train on the same sequence of grounding prompts from the emulated desktop (P prompts a step,
the same P in the same order on both sides), with:

- the same reward: ``click_gaussian`` of ``gui_agent/train_vlm.py`` (click-in-box + Gaussian
  point reward + 0.5 format), handed to TRL as its reward function;
- the same G (``num_generations``), max completion length, temperature 1, KL coefficient
  (beta, k3 to the frozen start), clip 0.2 / 0.28 (TRL: ``epsilon`` / ``epsilon_high``),
  token-level loss (TRL's ``dapo``), one optimizer step per GRPO step (TRL:
  ``per_device_train_batch_size = P * G``), gradient clip 1.0, and the same optimizer: a
  ``torch.optim.AdamW(lr, weight_decay=0)`` at a constant rate, given to both.
- fp32 on both sides, TRL's gradient checkpointing off (its default is on: it recomputes the
  forward pass, which would only slow TRL down), one torch thread by default.

Ours is the recipe's own step (:func:`pixelrl.gui_agent.vlm_grounding.grounding_grpo_step`). TRL's
``trainer.train()`` runs once; a callback runs a block of our steps after every block of TRL's
steps, and its time is taken out of TRL's. Sampling time is TRL's ``_generate`` (prompt
processing, ``model.generate``, decoding) against our ``VLMPolicy.generate``; the update is the
rest of the step (rewards, reference and policy forward, backward, optimizer step). Held-out
click accuracy (greedy, odd seeds) is measured for both models after the same number of steps.

    python bench/grpo_vs_trl.py                              # defaults: 40 steps a side
    python bench/grpo_vs_trl.py --init runs/sft-g/model      # from an existing SFT model
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

# The model of gui_agent/configs/sft_grounding.yaml: 160 px, 8-px patches, 2x2 pixel shuffle
# (100 image tokens); vision 64-d x 3, LM 128-d x 4; a tokenizer where a label is one token.
MODEL = [
    "model=tiny-smolvlm",
    "text_size={hidden_size: 128, intermediate_size: 256, num_hidden_layers: 4}",
    "vision_size={image_size: 160, patch_size: 8, scale_factor: 2, embed_dim: 64, num_heads: 4, depth: 3}",
    "tokenizer={vocab_size: 2000, screens: 100}",
]
# The smoke test's: 32 px, 4 image tokens, a 2-layer 32-d LM.
SMALL_MODEL = [
    "model=tiny-smolvlm",
    "text_size={hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2}",
    "vision_size={image_size: 32, patch_size: 8, scale_factor: 2, embed_dim: 32, num_heads: 2, depth: 1}",
    "tokenizer={vocab_size: 600, screens: 0}",
]
FAMILIES = "env.families=[click-button,check-boxes,choose-radio,type-in-field,fill-form]"


def _configs(args):
    """The SFT and GRPO configs (``gui_agent/configs/{sft,grpo}_grounding.yaml`` + overrides)."""
    import pixelrl.gui_agent as ga
    from pixelrl.gui_agent.train_vlm import config_for

    folder = Path(ga.__file__).parent / "configs"
    model = SMALL_MODEL if args.small else MODEL
    common = [*model, FAMILIES, f"seed={args.seed}", f"torch_threads={args.threads}",
              f"eval.grounding_items={args.eval_items}", "eval.interval=0",
              "train.progress=false"]  # fmt: skip
    sft = config_for(folder / "sft_grounding.yaml", [*common, f"sft.steps={args.sft_steps}",
                     f"data.grounding_screens={args.sft_screens}"])  # fmt: skip
    sft.recipe = "gui/sft"
    grpo = config_for(folder / "grpo_grounding.yaml", [
        *common, f"grpo.steps={args.steps}", f"grpo.num_samples={args.samples}",
        f"grpo.prompts_per_step={args.prompts_per_step}", f"grpo.max_new_tokens={args.max_new_tokens}",
        f"grpo.kl_coef={args.kl}", f"grpo.lr={args.lr}", "grpo.lr_schedule=constant",
        f"grpo.minibatch={args.prompts_per_step * args.samples}", f"data.prompts={args.train_prompts}",
    ])  # fmt: skip
    grpo.recipe = "gui/grounding-grpo"
    return sft, grpo


def start_model(args, sft_cfg, out: Path) -> Path:
    """The model folder both sides start from: ``--init``, or a short SFT on grounding samples
    (``--sft-steps``; 0 saves the freshly built model)."""
    if args.init:
        return Path(args.init)
    from pixelrl.gui_agent.train_vlm import load_policy, run_sft

    if args.sft_steps:
        sft_cfg.train.output_dir = str(out / "sft")
        return Path(run_sft(sft_cfg)["run_dir"]) / "model"
    return load_policy(sft_cfg).save(out / "start")


class _Clock:
    """Sums the wall seconds spent in a wrapped method and what it generated."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.tokens = 0
        self.completions = 0


def run(args) -> dict:
    """Run both sides; returns the per-step records and the evaluations (see :func:`main`)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForImageTextToText, PrinterCallback, TrainerCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer
    from trl.data_utils import prepare_multimodal_messages

    from pixelrl.gui_agent.grounding import grounding_set
    from pixelrl.gui_agent.train_vlm import GROUNDING_REWARDS, _held_out, load_policy
    from pixelrl.gui_agent.vlm_grounding import grounding_accuracy, grounding_grpo_step
    from pixelrl.rl.grpo import GRPOConfig

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="grpo_vs_trl_"))
    out.mkdir(parents=True, exist_ok=True)
    sft_cfg, cfg = _configs(args)
    t0 = time.perf_counter()
    start = start_model(args, sft_cfg, out)
    sft_s = time.perf_counter() - t0
    cfg.init = str(start)

    # -- the shared prompts: step s trains on sequence[s*P:(s+1)*P] on both sides
    screen = tuple(int(v) for v in cfg.env.screen_size)
    P, G, S = args.prompts_per_step, args.samples, args.steps
    train_items = grounding_set(
        int(cfg.data.prompts), tuple(cfg.env.families), screen, split="train"
    )
    rng = np.random.default_rng(args.seed)
    sequence = [
        train_items[i] for _ in range(S) for i in rng.choice(len(train_items), P, replace=False)
    ]
    items = _held_out(cfg)
    reward_fn = GROUNDING_REWARDS[str(cfg.grpo.reward)]
    sigma = float(cfg.grpo.sigma_scale)

    # -- ours: the recipe's policy, optimizer and step
    ours = load_policy(cfg)
    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    ref = ours.frozen_copy() if gcfg.kl_coef else None
    ours_opt = torch.optim.AdamW(ours.trainable_parameters(), lr=args.lr, weight_decay=0.0)
    t0 = time.perf_counter()
    start_eval = grounding_accuracy(ours, items, int(cfg.grpo.max_new_tokens))
    eval_s = time.perf_counter() - t0
    ours_rows: list[dict] = []

    def ours_block(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            s = len(ours_rows)
            if s >= S:
                break
            row = grounding_grpo_step(ours, ours_opt, args.lr, ref, sequence[s * P : (s + 1) * P],
                                      gcfg, reward_fn, screen, sigma, P * G)  # fmt: skip
            ours_rows.append({"step_s": row["sample_s"] + row["update_s"], "sample_s": row["sample_s"],
                              "update_s": row["update_s"], "completions": _count(row, "samples_per_s", "sample_s"),
                              "gen_tokens": _count(row, "gen_tokens_per_s", "sample_s"),
                              "update_tokens": _count(row, "update_tokens_per_s", "update_s"),
                              "reward": row["reward"], "kl": row.get("kl", 0.0)})  # fmt: skip
        return time.perf_counter() - t

    # -- TRL: the same start, prompts (in order), reward, G, lengths, beta, clip, optimizer
    prompt_text = ours.prompt_text  # the user turn's text, as our policy writes it
    dataset = Dataset.from_list([
        {"prompt": [{"role": "user", "content": prompt_text(it.instruction, [])}],
         "image": _pil(it.screenshot),
         "bbox": list(it.bbox)} for it in sequence
    ])  # fmt: skip

    if ours.build_prompt(sequence[0].instruction, []) != ours.processor.apply_chat_template(
        prepare_multimodal_messages(dataset[0]["prompt"], images=[dataset[0]["image"]]),
        add_generation_prompt=True, tokenize=False,
    ):  # fmt: skip
        raise RuntimeError(
            "TRL's prompt text is not ours: the comparison would not be the same work"
        )
    seen: list[tuple] = []  # the boxes TRL's reward saw, to check it trained on our prompts

    def click_gaussian(completions, bbox, **kwargs):
        texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
        seen.extend(tuple(b) for b in bbox)
        return [float(r) for r in reward_fn(texts, [tuple(b) for b in bbox], screen, sigma)]

    model = AutoModelForImageTextToText.from_pretrained(str(start), dtype=torch.float32)
    trl_opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    constant = torch.optim.lr_scheduler.LambdaLR(trl_opt, lambda _: 1.0)
    targs = TRLConfig(
        output_dir=str(out / "trl"), max_steps=S, per_device_train_batch_size=P * G,
        gradient_accumulation_steps=1, num_generations=G, max_completion_length=args.max_new_tokens,
        temperature=gcfg.temperature, top_p=1.0, top_k=0, beta=args.kl, epsilon=gcfg.clip_low,
        epsilon_high=gcfg.clip_high, loss_type="dapo", scale_rewards="group", num_iterations=1,
        learning_rate=args.lr, max_grad_norm=gcfg.max_grad_norm, shuffle_dataset=False,
        gradient_checkpointing=False, bf16=False, use_cpu=True, seed=args.seed,
        report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True,
        dataloader_num_workers=0, generation_kwargs={"suppress_tokens": sorted(ours.placeholder_token_ids)},
    )  # fmt: skip
    trainer = GRPOTrainer(model=model, reward_funcs=click_gaussian, args=targs,
                          train_dataset=dataset, processing_class=ours.processor,
                          optimizers=(trl_opt, constant))  # fmt: skip
    gen = _Clock()
    generate = getattr(trainer, "_generate", None)
    if generate is None:
        raise RuntimeError(f"TRL {_trl_version()}: GRPOTrainer has no _generate to time")

    def timed_generate(prompts):
        t = time.perf_counter()
        result = generate(prompts)
        gen.seconds += time.perf_counter() - t
        gen.tokens += sum(len(c) for c in result[1])
        gen.completions += len(result[1])
        return result

    trainer._generate = timed_generate  # instrumentation only: TRL's own method runs
    trl_rows: list[dict] = []
    marks = {"t": 0.0}

    class Alternate(TrainerCallback):
        def on_train_begin(self, a, state, control, **kw):
            ours_block(args.block)
            marks["t"], marks["g"], marks["tok"], marks["c"] = time.perf_counter(), 0.0, 0, 0

        def on_step_end(self, a, state, control, **kw):
            now = time.perf_counter()
            sample = gen.seconds - marks["g"]
            trl_rows.append({"step_s": now - marks["t"], "sample_s": sample,
                             "update_s": now - marks["t"] - sample, "completions": gen.completions - marks["c"],
                             "gen_tokens": gen.tokens - marks["tok"],
                             "update_tokens": gen.tokens - marks["tok"]})  # fmt: skip
            if state.global_step % args.block == 0:
                ours_block(args.block)
            marks["t"], marks["g"], marks["tok"], marks["c"] = (
                time.perf_counter(), gen.seconds, gen.tokens, gen.completions,
            )  # fmt: skip

    trainer.remove_callback(PrinterCallback)  # TRL's per-step log dicts; the table says it all
    trainer.add_callback(Alternate())
    trainer.train()
    ours_block(S)  # whatever of ours is left (none when S is a multiple of --block)
    if seen != [tuple(it.bbox) for it in sequence for _ in range(G)]:
        raise RuntimeError("TRL's reward did not see our prompts, G times each, in our order")
    for row, log in zip(trl_rows, [h for h in trainer.state.log_history if "reward" in h]):
        row["reward"] = float(log["reward"])
        row["kl"] = float(log.get("kl", 0.0))

    trl_policy = _with_model(ours, trainer.model)
    t0 = time.perf_counter()
    ours_eval = grounding_accuracy(ours, items, int(cfg.grpo.max_new_tokens))
    trl_eval = grounding_accuracy(trl_policy, items, int(cfg.grpo.max_new_tokens))
    eval_s += time.perf_counter() - t0
    result = {
        "ours": ours_rows, "trl": trl_rows, "start_eval": start_eval, "ours_eval": ours_eval,
        "trl_eval": trl_eval, "parameters": sum(p.numel() for p in ours.model.parameters()),
        "sft_s": sft_s, "eval_s": eval_s, "start": str(start), "out": str(out),
    }  # fmt: skip
    (out / "grpo_vs_trl.json").write_text(json.dumps(result, indent=1, default=float))
    return result


def _count(row: dict, rate: str, seconds: str) -> int:
    """A count of one of our steps, back from its rate and time."""
    return round(row[rate] * row[seconds])


def _pil(screenshot):
    from PIL import Image

    return Image.fromarray(np.asarray(screenshot))


def _with_model(policy, model):
    """``policy`` (processor, codec, prompt) around another model: TRL's, for evaluation."""
    import copy

    other = copy.copy(policy)
    other.model = model
    return other


def summary(result: dict, warmup: int) -> list[tuple[str, str, str, str]]:
    """``(measure, ours, TRL, ours / TRL)`` rows: medians over the steps after ``warmup``."""

    def med(side: str, key: str, per: str | None = None) -> float:
        rows = result[side][warmup:] or result[side]
        if per:
            return float(np.median([r[key] / max(r[per], 1e-9) for r in rows]))
        return float(np.median([r[key] for r in rows]))

    table = []
    for name, key, per, better in [
        ("sampling: completions/s", "completions", "sample_s", "higher"),
        ("sampling: generated tokens/s", "gen_tokens", "sample_s", "higher"),
        ("update: completion tokens/s", "update_tokens", "update_s", "higher"),
        ("seconds a step (sample + update)", "step_s", None, "lower"),
        ("  of which sampling, s", "sample_s", None, "lower"),
        ("  of which update, s", "update_s", None, "lower"),
    ]:
        a, b = med("ours", key, per), med("trl", key, per)
        ratio = a / b if better == "higher" else b / a
        table.append((name, f"{a:,.2f}" if a < 100 else f"{a:,.0f}",
                      f"{b:,.2f}" if b < 100 else f"{b:,.0f}", f"{ratio:.2f}x"))  # fmt: skip
    for side in ("ours", "trl"):
        rows = result[side]
        result[f"{side}_reward"] = float(np.mean([r.get("reward", np.nan) for r in rows]))
    table.append(("mean reward over the run", f"{result['ours_reward']:.3f}",
                  f"{result['trl_reward']:.3f}", ""))  # fmt: skip
    s, o, t = result["start_eval"], result["ours_eval"], result["trl_eval"]

    def acc(e):
        return f"{e['accuracy']:.3f} [{e['ci_low']:.2f}, {e['ci_high']:.2f}]"

    table.append((f"held-out click accuracy (start {s['accuracy']:.3f}, n={s['n']})",
                  acc(o), acc(t), ""))  # fmt: skip
    return table


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=40, help="GRPO steps on each side")
    parser.add_argument("--block", type=int, default=5, help="steps a side before switching")
    parser.add_argument("--warmup", type=int, default=2, help="first steps left out of medians")
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--samples", type=int, default=8, help="G, completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=20)
    parser.add_argument("--kl", type=float, default=0.04, help="beta, k3 KL to the frozen start")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--train-prompts", type=int, default=1000)
    parser.add_argument("--eval-items", type=int, default=200)
    parser.add_argument("--init", default="", help="a model folder to start both sides from")
    parser.add_argument("--sft-steps", type=int, default=400, help="SFT warm start (no --init)")
    parser.add_argument("--sft-screens", type=int, default=100, help="SFT screens per family")
    parser.add_argument("--small", action="store_true", help="a much smaller model (smoke test)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's)")
    parser.add_argument("--out", default="", help="output folder (default: a temporary one)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run(args)
    table = summary(result, args.warmup)
    widths = [
        max(len(r[i]) for r in table + [("measure", "ours", "TRL", "ours/TRL")]) for i in range(4)
    ]
    print(f"\nGrounding GRPO, ours vs TRL {_trl_version()} GRPOTrainer: tiny SmolVLM "
          f"({result['parameters'] / 1e6:.2f} M parameters), {args.prompts_per_step} prompts x "
          f"G={args.samples}, {args.max_new_tokens} new tokens, beta={args.kl}, lr={args.lr}, "
          f"{args.steps} steps a side in blocks of {args.block}, medians of steps "
          f"{args.warmup + 1}-{args.steps}")  # fmt: skip
    for row in [("measure", "ours", "TRL", "ours/TRL"), *table]:
        print("  ".join(f"{c:<{w}}" for c, w in zip(row, widths)))
    print(f"(start model {result['start']}: {result['sft_s']:.0f} s; evaluations "
          f"{result['eval_s']:.0f} s; whole run {time.perf_counter() - start:.0f} s; "
          f"records in {result['out']}/grpo_vs_trl.json)")  # fmt: skip
    result["table"] = table
    return result


def _trl_version() -> str:
    import trl

    return trl.__version__


if __name__ == "__main__":
    main()
