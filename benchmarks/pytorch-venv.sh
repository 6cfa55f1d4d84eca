#!/usr/bin/env bash
# Installs PyTorch from PyPI into a private virtual environment, for
# benchmarks/compare_pytorch.sh and the structure check's test.
#   benchmarks/pytorch-venv.sh [VENV]      (default build/pytorch-venv)
# PyPI's Linux wheel links the CUDA libraries (libcufile, cuBLAS, cuDNN, ...)
# even for CPU work: with --no-deps `import torch` fails on libcufile.so.0, so
# the whole dependency set comes along (about 3 GB, most of it nvidia-*
# wheels). PyTorch's CPU-only wheels live outside PyPI. A second run finds
# the pinned version importable and does nothing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-$root/build/pytorch-venv}
torch_version=2.15.0
numpy_version=2.4.6

installed() {
  "$venv/bin/python" -c "import sys, numpy, torch; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null
}
if [ -x "$venv/bin/python" ] && installed; then
  echo "pytorch-venv: torch $torch_version already in $venv"
  exit 0
fi
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  { echo "pytorch-venv: torch $torch_version needs Python 3.10 or newer, python3 is $(python3 --version)" >&2; exit 1; }
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# NumPy too: torch warns at import without it, and a PyTorch user has it.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$torch_version" "numpy==$numpy_version"
installed || { echo "pytorch-venv: torch $torch_version installed into $venv but does not import" >&2; exit 1; }
echo "pytorch-venv: torch $torch_version in $venv ($(du -sh "$venv" | cut -f1))"
