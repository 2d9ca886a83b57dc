"""Train a vision-language model on a pixelrl env with TRL's ``GRPOTrainer``: the env's actions
are the model's tools, its verifiable reward is TRL's reward (:mod:`pixelrl.trl_env`).

    # a tool-calling VLM by name (downloaded by transformers; bf16 on a GPU)
    python scripts/trl_grpo.py pixelrl/Desktop-ClickButton-v0 --model Qwen/Qwen3-VL-2B-Instruct --bf16
    # a tiny model from config, on CPU (it writes no tool calls at first: a smoke run)
    python scripts/trl_grpo.py pixelrl/PointNav-v0 --model tiny --steps 2 --env-kwargs '{"width": 64, "height": 64}'
    # generation by vLLM (installed on the GPU machine): in the trainer's process, or a server
    python scripts/trl_grpo.py pixelrl/Desktop-ClickButton-v0 --model Qwen/Qwen3-VL-2B-Instruct --bf16 \
        --vllm-mode colocate --vllm-gpu-memory-utilization 0.3
    trl vllm-serve --model Qwen/Qwen3-VL-2B-Instruct &      # on GPU 1, then on GPU 0:
    python scripts/trl_grpo.py pixelrl/Desktop-ClickButton-v0 --model Qwen/Qwen3-VL-2B-Instruct --bf16 \
        --vllm-mode server --vllm-server-port 8000
    # under accelerate / torchrun for several GPUs, as any TRL script
    accelerate launch scripts/trl_grpo.py pixelrl/PointNav-v0 --model Qwen/Qwen3-VL-2B-Instruct --bf16

Seeds ``--first-seed .. --first-seed + --seeds - 1`` are the train rows (one episode start each,
reproducible). Prints TRL's log lines, then steps/s and tokens/s of the run; writes TRL's log
(``OUTPUT_DIR/log_history.json``) and its reward and tool calls a step
(``OUTPUT_DIR/reward_curve.png``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time


def _json_object(parser, value: str, flag: str) -> dict:
    try:
        out = json.loads(value)
    except ValueError as e:
        parser.error(f"{flag} must be a JSON object: {e}")
    if not isinstance(out, dict):
        parser.error(f"{flag} must be a JSON object, got {value!r}")
    return out


def _fraction(value: str) -> float:
    """A float in (0, 1]: the share of GPU memory vLLM may take."""
    try:
        out = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {value!r}") from None
    if not 0 < out <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {value!r}")
    return out


VLLM_SERVER_ONLY = ("vllm_server_url", "vllm_server_host", "vllm_server_port")


def add_vllm_arguments(p: argparse.ArgumentParser) -> None:
    """TRL's vLLM options (``GRPOConfig``'s ``use_vllm``, ``vllm_mode``, ``vllm_server_*``,
    ``vllm_gpu_memory_utilization``); without ``--vllm-mode`` the model's own ``generate``."""
    g = p.add_argument_group("generation by vLLM (TRL's GRPOConfig vllm_* keys)")
    g.add_argument("--vllm-mode", choices=("server", "colocate"), default=None,
                   help="colocate: vLLM in the trainer's process, sharing its GPUs; server: a "
                   "separate `trl vllm-serve` (default: no vLLM, the model's own generate)")  # fmt: skip
    g.add_argument("--vllm-server-url", default=None,
                   help="server mode: the vLLM server's base URL (replaces host and port)")  # fmt: skip
    g.add_argument("--vllm-server-host", default=None, help="server mode: its host (TRL: 0.0.0.0)")
    g.add_argument(
        "--vllm-server-port", type=int, default=None, help="server mode: its port (8000)"
    )
    g.add_argument("--vllm-gpu-memory-utilization", type=_fraction, default=None,
                   help="colocate mode: the share of GPU memory vLLM may take (TRL: 0.3)")  # fmt: skip


def vllm_config(p: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The GRPOConfig keys of the vLLM options (none without ``--vllm-mode``); an option of the
    other mode is a usage error (TRL would ignore it silently)."""
    given = {k: v for k, v in vars(args).items() if k.startswith("vllm_") and v is not None}
    mode = given.pop("vllm_mode", None)
    if mode is None:
        if given:
            p.error(f"--{next(iter(given)).replace('_', '-')} needs --vllm-mode")
        return {}
    wrong = VLLM_SERVER_ONLY if mode == "colocate" else ("vllm_gpu_memory_utilization",)
    for key in wrong:
        if key in given:
            p.error(f"--{key.replace('_', '-')} does not apply to --vllm-mode {mode}")
    if args.model == "tiny":
        p.error("--vllm-mode needs --model NAME_OR_FOLDER: vLLM loads the model from there, and "
                "the tiny model is built in memory")  # fmt: skip
    if "vllm_server_port" in given and not 0 < given["vllm_server_port"] < 65536:
        p.error(f"--vllm-server-port must be in 1..65535, got {given['vllm_server_port']}")
    config = {"use_vllm": True, "vllm_mode": mode}
    names = {"vllm_server_url": "vllm_server_base_url"}  # TRL's name for it
    config.update({names.get(k, k): v for k, v in given.items()})
    return config


def main(argv: list[str] | None = None, build_only: bool = False):
    """Train (returns 0); with ``build_only`` return the GRPOConfig it would train with, without
    loading a model (for tests)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("env_id", help="a registered env (pixelrl envs lists them)")
    p.add_argument("--model", default="tiny", help="'tiny' (from config) or a model name/folder")
    p.add_argument("--env-kwargs", default="{}", help="the env's options as JSON")
    p.add_argument("--env-url", default=None,
                   help="play the env behind `pixelrl serve ENV_ID` at this http://host:port "
                   "(--env-kwargs: the server's); default: in this process")  # fmt: skip
    p.add_argument(
        "--text-size", default="{}", help="--model tiny: the language model's shape as JSON"
    )
    p.add_argument("--seeds", type=int, default=64, help="train rows (episode starts)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--prompts", type=int, default=2, help="prompts (starts) a step")
    p.add_argument("--samples", type=int, default=4, help="rollouts a prompt (G)")
    p.add_argument("--turns", type=int, default=8, help="tool calls a rollout at most")
    p.add_argument("--max-tokens", type=int, default=1024, help="a rollout's completion tokens")
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--output-dir", default="runs/trl-grpo")
    add_vllm_arguments(p)
    args = p.parse_args(argv)
    vllm = vllm_config(p, args)
    env_kwargs, text_size = (_json_object(p, value, flag) for value, flag in
                             ((args.env_kwargs, "--env-kwargs"), (args.text_size, "--text-size")))  # fmt: skip
    for name in ("seeds", "steps", "prompts", "samples", "turns", "max_tokens"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.samples < 2:
        p.error("--samples must be >= 2 (GRPO compares rollouts of one prompt)")

    if vllm and not build_only and importlib.util.find_spec("vllm") is None:
        p.error(f"--vllm-mode {args.vllm_mode} needs vLLM, which is not installed here "
                "(pip install vllm, on a CUDA machine)")  # fmt: skip

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from pixelrl.trl_env import ToolError, environment_factory, tiny_tool_model, train_dataset

    config = GRPOConfig(
        output_dir=args.output_dir, max_steps=args.steps, learning_rate=args.lr,
        per_device_train_batch_size=args.prompts * args.samples, num_generations=args.samples,
        max_completion_length=args.max_tokens, max_tool_calling_iterations=args.turns,
        bf16=args.bf16, use_cpu=not torch.cuda.is_available(), logging_steps=1, report_to=[],
        save_strategy="no", **vllm,
    )  # fmt: skip
    if build_only:
        return config
    try:
        factory = environment_factory(args.env_id, url=args.env_url, **env_kwargs)
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        rows = train_dataset(args.env_id, seeds, url=args.env_url, **env_kwargs)
    except (ToolError, ValueError, TypeError, ConnectionError) as e:
        p.error(" ".join(str(e).split()))
    if args.model == "tiny":
        try:
            model, processor = tiny_tool_model(args.env_id, text_size=text_size, **env_kwargs)
        except ValueError as e:
            p.error(" ".join(str(e).split()))
    else:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        dtype = torch.bfloat16 if args.bf16 else torch.float32
        model = AutoModelForImageTextToText.from_pretrained(
            args.model, dtype=dtype, trust_remote_code=False
        )
        processor = AutoProcessor.from_pretrained(
            args.model, padding_side="left", trust_remote_code=False
        )
    trainer = GRPOTrainer(model=model, args=config, train_dataset=rows, processing_class=processor,
                          environment_factory=factory)  # fmt: skip
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    logs = [r for r in trainer.state.log_history if "num_tokens" in r]
    tokens = logs[-1]["num_tokens"] if logs else 0.0
    print(f"{args.steps} steps in {seconds:.1f} s: {args.steps / seconds:.3f} steps/s, "
          f"{tokens / seconds:.0f} tokens/s (prompt and completion)")  # fmt: skip
    if trainer.is_world_process_zero():
        write_log(trainer.state.log_history, args.output_dir)
    return 0


def write_log(log_history: list[dict], folder: str) -> None:
    """TRL's log lines as JSON and a PNG of the mean reward and tool calls a rollout per step
    (what shows that the env answers and pays)."""
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "log_history.json").write_text(json.dumps(log_history, indent=1) + "\n")
    rows = [r for r in log_history if "reward" in r]
    steps = [r.get("step", i + 1) for i, r in enumerate(rows)]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, [r["reward"] for r in rows], marker="o", color="C0")
    ax.set(xlabel="GRPO step", title="TRL GRPOTrainer on a pixelrl env")
    ax.set_ylabel("mean reward (get_reward)", color="C0")
    calls = ax.twinx()  # its own scale: a reward of -0.01 would be flat beside 0.9 calls
    calls.plot(steps, [r.get("tools/call_frequency", 0.0) for r in rows], marker="s", color="C1")
    calls.plot(steps, [r.get("tools/failure_frequency", 0.0) for r in rows], marker="x",
               color="C3", linestyle=":")  # fmt: skip
    calls.set_ylabel("tool calls a rollout (x: share refused)", color="C1")
    fig.tight_layout()
    fig.savefig(out / "reward_curve.png", dpi=120)
    plt.close(fig)
    print(f"wrote {out / 'log_history.json'} and {out / 'reward_curve.png'}")


if __name__ == "__main__":
    sys.exit(main())
