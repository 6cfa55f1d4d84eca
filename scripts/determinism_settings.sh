#!/usr/bin/env bash
# Which settings change the bits of a training run: the same short
# fmnist-cnn run (512 Fashion-MNIST images, one epoch) twice as a baseline,
# then with another OpenMP thread count and with each convolution algorithm,
# printing each run's training loss with all 17 digits.
# Usage:
#   scripts/determinism_settings.sh [build/release/bin/convkit] > docs/results/faults/determinism_settings.txt
set -euo pipefail
cli=${1:-build/release/bin/convkit}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
n=0
run() {
  local label=$1 threads=$2
  shift 2
  n=$((n + 1))
  OMP_NUM_THREADS=$threads "$cli" train fmnist-cnn --limit 512 --test-limit 64 --epochs 1 \
    --batch 64 --seed 1 --no-validation --progress none --out "$scratch/$n" "$@" >/dev/null
  # log.csv holds the loss with 17 significant digits: epoch,loss,...
  local loss
  loss=$(sed -n 2p "$scratch/$n/log.csv" | cut -d, -f2)
  printf '%-24s threads=%s %-18s train_loss=%s\n' "$label" "$threads" "$*" "$loss"
}
run "baseline" 2
run "baseline again" 2
run "one OpenMP thread" 1
run "algorithm direct" 2 --algo direct
run "algorithm im2col_gemm" 2 --algo im2col_gemm
run "algorithm fft" 2 --algo fft
run "algorithm winograd" 2 --algo winograd
