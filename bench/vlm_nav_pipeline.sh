#!/usr/bin/env bash
# The navigation VLM agent end to end in one budget (issue 21's learning results): SFT on the
# follower's demonstrations, then multi-turn GRPO from that model, each stage timed by
# /usr/bin/time, the CPU minutes (user + sys; held-out evaluations excluded: eval.episodes=0;
# the validation checks that choose each stage's kept model included) printed per stage and in
# all. The seeds protocol runs this once per seed: bench/vlm_nav_seeds.py. Held-out Success is measured afterwards on 200 episodes by
# bench/vlm_nav_paired.py or `pixelrl bench nav --agent vlm OUT/grpo/model`.
#   bash bench/vlm_nav_pipeline.sh OUT [key=value ...]    (overrides go to both recipes)
#   SFT="sft.steps=1000" GRPO="grpo.steps=40" bash bench/vlm_nav_pipeline.sh runs/objnav env.id=pixelrl/ObjectNav-v0
set -euo pipefail
out="${1:?usage: bench/vlm_nav_pipeline.sh OUT [key=value ...]}"
shift
py="${PY:-.venv/bin/python}"
export HF_HUB_OFFLINE=1
mkdir -p "$out"
common=(torch_threads="${THREADS:-1}" eval.episodes=0 train.progress=false "$@")

cpu_minutes() {  # user + sys seconds of a /usr/bin/time -f "%U %S" file, in minutes
    awk 'END { printf "%.1f", ($1 + $2) / 60 }' "$1"
}

if [[ -f "$out/sft.time" && -d "$out/sft/model" ]]; then  # a finished SFT stage is kept
    echo "SFT: reusing $out/sft/model (delete $out/sft.time to train it again)"
else
    /usr/bin/time -f "%U %S %e" -o "$out/sft.time" "$py" -m pixelrl train embodied/vlm-sft \
        "${common[@]}" ${SFT:-} train.output_dir="$out/sft"
fi
/usr/bin/time -f "%U %S %e" -o "$out/grpo.time" "$py" -m pixelrl train embodied/vlm-grpo \
    "${common[@]}" ${GRPO:-} init="$out/sft/model" train.output_dir="$out/grpo"

sft=$(cpu_minutes "$out/sft.time")
grpo=$(cpu_minutes "$out/grpo.time")
echo "CPU minutes: SFT $sft, GRPO $grpo, in all $(awk "BEGIN { print $sft + $grpo }")" |
    tee "$out/cpu_minutes.txt"
