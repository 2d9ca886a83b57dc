#!/usr/bin/env bash
# The text-policy trainer on GPUs under torchrun (issue 40): one prepared command, under 10
# minutes on one H200-class GPU (more GPUs: the same command). The GRPO update's tokens/s with
# DDP and with FSDP2 on the larger tiny-from-config model (hidden 1024, 12 layers, ~0.2B
# parameters), bf16: DDP trains the model in bf16, FSDP2 keeps fp32 master weights and computes
# in bf16 (distributed.param_dtype=bfloat16, gradients reduced in fp32). With one GPU both run
# on one rank (FSDP2's own all-gathers and casts, no sharding gain); with N GPUs: 1 rank, then
# N ranks with each.
#   bash bench/gpu_text_ddp.sh [OUT]      (OUT: the table's file, default $OUT or outputs/gpu)
set -euo pipefail
out="${1:-${OUT:-outputs/gpu}}"
py="${PY:-.venv/bin/python}"
mkdir -p "$out"
export HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
n=$(nvidia-smi -L | wc -l)
runs="1:ddp,1:fsdp"
if [ "$n" -gt 1 ]; then runs="1:ddp,$n:ddp,$n:fsdp"; fi
# 16 prompts x 8 answers a step (global; a multiple of every GPU count up to 16), 24 tokens each
timeout 560 "$py" bench/text_ddp_scaling.py --device cuda --dtype bfloat16 --threads 4 \
    --runs "$runs" --steps 8 --prompts 16 --samples 8 --eval-items 8 \
    --size hidden_size=1024,intermediate_size=4096,num_hidden_layers=12 \
    --vision-size embed_dim=384,depth=6,num_heads=6 2>&1 | tee "$out/gpu_text_ddp.txt"
