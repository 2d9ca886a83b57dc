#!/usr/bin/env bash
# The attention pointer head (issue 53) on a real model in bf16 on one GPU: grounding SFT through
# the head (gui/grounding-pointer-sft's data and evaluation), full fine-tuning of a small model,
# then LoRA on a larger one (the head trains whole beside the adapters). Models load by name
# with from_pretrained, offline: they must be in the Hugging Face cache of the machine.
#   bash bench/gpu_pointer_head.sh [OUT]   (OUT: default $OUT or outputs/gpu-pointer)
#   SMALL=HuggingFaceTB/SmolVLM-256M-Instruct LARGE=Qwen/Qwen2.5-VL-3B-Instruct STEPS=300
set -euo pipefail
out="${1:-${OUT:-outputs/gpu-pointer}}"
py="${PY:-.venv/bin/python}"
small="${SMALL:-HuggingFaceTB/SmolVLM-256M-Instruct}"
large="${LARGE:-Qwen/Qwen2.5-VL-3B-Instruct}"
steps="${STEPS:-300}"
export HF_HUB_OFFLINE=1
mkdir -p "$out"
"$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else
  'bench/gpu_pointer_head.sh: needs a CUDA GPU (torch.cuda.is_available() is False here)')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
config=gui_agent/configs/sft_grounding_pointer.yaml
common=(device=cuda dtype=bfloat16 sft.steps="$steps" sft.batch_size=16 eval.interval=100
        eval.grounding_items=200 train.progress=false)
# a small model, every weight trained (lr as SFT of a pretrained model wants)
"$py" -m pixelrl train "$config" model="$small" sft.lr=2e-5 "${common[@]}" \
    train.output_dir="$out/small" 2>&1 | tee "$out.small.txt"
# a larger one under LoRA: adapters on the language model's attention, the head whole
"$py" -m pixelrl train "$config" model="$large" sft.lr=1e-4 lora.enabled=true \
    gradient_checkpointing=true "${common[@]}" train.output_dir="$out/large" 2>&1 | tee "$out.large.txt"
