#!/usr/bin/env bash
# The navigation VLM recipes on a GPU (issue 21): one prepared command, under 10 minutes on one
# H200-class GPU. A larger tiny-from-config model (hidden 1024, 12 layers, ~0.2B parameters) in
# bf16: throughput (env frames/s under the agent, completions/s, SFT samples/s, GRPO update
# tokens/s), then a short SFT and GRPO run of the recipes themselves on the same model.
#   bash bench/gpu_vlm_nav.sh [OUT]      (OUT: where the runs go, default $OUT or outputs/gpu)
set -euo pipefail
out="${1:-${OUT:-outputs/gpu}}"
py="${PY:-.venv/bin/python}"
size=(text_size.hidden_size=1024 text_size.intermediate_size=4096
      text_size.num_hidden_layers=12 vision_size.embed_dim=384 vision_size.depth=6
      vision_size.num_heads=6)
export HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
"$py" bench/vlm_nav_throughput.py --device cuda --dtype bfloat16 --episodes 32 --envs 16 \
    --sft-steps 20 --size "${size[@]}" 2>&1 | tee "$out.throughput.txt"
"$py" -m pixelrl train embodied/vlm-sft device=cuda dtype=bfloat16 "${size[@]}" \
    data.episodes=100 sft.steps=300 sft.batch_size=64 eval.episodes=32 eval.interval=0 \
    train.output_dir="$out/sft"
"$py" -m pixelrl train embodied/vlm-grpo device=cuda dtype=bfloat16 "${size[@]}" \
    init="$out/sft/model" grpo.steps=10 grpo.starts_per_step=4 eval.episodes=32 \
    eval.interval=0 train.output_dir="$out/grpo"
