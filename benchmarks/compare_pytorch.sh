#!/usr/bin/env bash
# convkit against PyTorch 2.x (from PyPI) on the CPU, side by side: makes the
# virtual environment (benchmarks/pytorch-venv.sh; PYTORCH_VENV overrides its
# place), builds the convkit tool, then runs benchmarks/compare_pytorch.py
# with that environment's Python. Arguments go to compare_pytorch.py, e.g.
#   benchmarks/compare_pytorch.sh --out docs/results/MACHINE/pytorch2
#   benchmarks/compare_pytorch.sh --models fmnist-cnn --batches 32 --rounds 3 --out /tmp/quick
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
venv=${PYTORCH_VENV:-$root/build/pytorch-venv}
benchmarks/pytorch-venv.sh "$venv"
[ -f build/release/CMakeCache.txt ] || cmake --preset release >/dev/null
cmake --build build/release --target convkit_cli >/dev/null
exec "$venv/bin/python" benchmarks/compare_pytorch.py --convkit build/release/bin/convkit "$@"
