#!/usr/bin/env bash
# Re-measures the Fashion-MNIST accuracy claims: `convkit train MODEL --epochs 5
# --seed S` with every other option at its default, for each model and seed,
# one log per run under OUT (default docs/results/accuracy). Accuracy does not
# depend on load, so the runs are niced on a shared machine, and several
# invocations may run side by side (SEEDS="2" picks the seeds); the speed in
# the logs is not a figure of record. benchmarks/accuracy_summary.py OUT then
# gives the per-seed table.
#   [SEEDS="1 2 3"] benchmarks/accuracy_seeds.sh [OUT] [MODELS...]   (models: fmnist-cnn fmnist-cnn-bn)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-docs/results/accuracy}
shift || true
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(fmnist-cnn fmnist-cnn-bn)
seeds=(${SEEDS:-1 2 3})
convkit=build/release/bin/convkit
[[ -x $convkit ]] || { echo "accuracy_seeds.sh: $convkit is missing; build the convkit_cli target first" >&2; exit 1; }
mkdir -p "$out"
for model in "${models[@]}"; do
  for seed in "${seeds[@]}"; do
    log="$out/$model-seed$seed.txt"
    {
      echo "# commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include kernels || echo +dirty)"
      echo "# cpu: $("$convkit" devices | grep -m1 '^cpu' | tr -s ' ' | cut -d' ' -f3-)"
      echo "# OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
      echo "\$ nice -n 10 $convkit train $model --epochs 5 --seed $seed --progress lines"
      status=0
      nice -n 10 "$convkit" train "$model" --epochs 5 --seed "$seed" --progress lines 2>&1 || status=$?
      echo "# exit $status; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    } > "$log"
    grep -H '^test:' "$log"
  done
done
