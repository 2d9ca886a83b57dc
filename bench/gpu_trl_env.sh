#!/usr/bin/env bash
# TRL environments on a GPU (issue 39 item 3), one command, under 10 minutes: TRL's GRPOTrainer
# on PointNav and on the emulated desktop through pixelrl.trl_env, bf16, a ~110M-parameter
# Qwen2.5-VL built from config (no download); prints steps/s and tokens/s of each run.
#   bash bench/gpu_trl_env.sh            (on the device machine: make setup first, or .venv exists)
#   MODEL=Qwen/Qwen3-VL-2B-Instruct VLLM_MODE=colocate bash bench/gpu_trl_env.sh
#     (generation by vLLM in the trainer's process; vLLM loads a model by name or folder, so not
#     the tiny one; VLLM_ARGS adds more, e.g. "--vllm-gpu-memory-utilization 0.4"; without vLLM
#     installed each run stops at once with one line saying so)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
MODEL=${MODEL:-tiny}
VLLM=()
if [[ -n "${VLLM_MODE:-}" ]]; then
  read -r -a VLLM <<< "--vllm-mode $VLLM_MODE ${VLLM_ARGS:-}"
fi
BIG='{"hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4}'
echo "== PointNav, 128x128 RGB, 4 prompts x 8 rollouts, <= 8 tool calls"
timeout 270 "$PY" scripts/trl_grpo.py pixelrl/PointNav-v0 --model "$MODEL" --text-size "$BIG" --bf16 \
  --steps 10 --prompts 4 --samples 8 --turns 8 --max-tokens 1024 \
  --env-kwargs '{"width": 128, "height": 128, "sensors": ["rgb"]}' --output-dir /tmp/gpu-trl-nav "${VLLM[@]}" 2>&1 | tail -3
echo "== Desktop ClickButton 320x240, 4 prompts x 8 rollouts, <= 4 tool calls"
timeout 270 "$PY" scripts/trl_grpo.py pixelrl/Desktop-ClickButton-v0 --model "$MODEL" --text-size "$BIG" --bf16 \
  --steps 10 --prompts 4 --samples 8 --turns 4 --max-tokens 1024 --output-dir /tmp/gpu-trl-desktop "${VLLM[@]}" 2>&1 | tail -3
