#!/usr/bin/env bash
# convkit against tuned libtorch on the CPU, side by side (issue: CPU speed).
# Installs libtorch-dev, OpenBLAS (libtorch's BLAS; without it Debian falls
# back to the reference BLAS) and tcmalloc when missing, builds compare_libtorch,
# then runs it with libtorch tuned: libtcmalloc_minimal preloaded and
# OPENBLAS_NUM_THREADS=1. Arguments go to compare_libtorch, e.g.
#   benchmarks/compare_libtorch.sh --models cifar10-cnn --batches 128 --json out.json
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
./third_party/install-deps.sh libtorch-dev libopenblas0-pthread libtcmalloc-minimal4
cmake --preset release >/dev/null
cmake --build --preset release --target compare_libtorch >/dev/null
tcmalloc=$(ls /usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null | head -1)
[[ -n $tcmalloc ]] || { echo "compare_libtorch.sh: libtcmalloc_minimal.so.4 not found" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-active}
LD_PRELOAD=$tcmalloc exec build/release/benchmarks/compare_libtorch "$@"
