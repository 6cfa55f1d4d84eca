#!/usr/bin/env bash
# Compiles every kernels/*.cu with nvcc for sm_80 and sm_90a plus compute_80 PTX
# and fails on the first error. With -Xptxas -v it records registers, shared
# memory and spills per kernel.
#   scripts/compile-kernels.sh [OUTPUT]   (default build/kernels/ptxas.txt;
#   pass docs/gpu/ptxas-usage.txt to refresh the committed record)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$nvcc" ]; then
  echo "compile-kernels: nvcc not found; skipping (the cpu and sim backends need no CUDA)"
  exit 0
fi
shopt -s nullglob
kernels=(kernels/*.cu)
if [ "${#kernels[@]}" -eq 0 ]; then
  echo "compile-kernels: no kernels/*.cu yet"
  exit 0
fi
out=${1:-build/kernels/ptxas.txt}
mkdir -p build/kernels "$(dirname "$out")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "# nvcc $("$nvcc" --version | tail -n 2 | head -n 1)" > "$tmp"
for k in "${kernels[@]}"; do
  echo "## $k" >> "$tmp"
  "$nvcc" -std=c++20 -O3 -Iinclude -Isrc -I. \
    -gencode "arch=compute_80,code=[sm_80,compute_80]" -gencode arch=compute_90a,code=sm_90a \
    -Xptxas -v -c "$k" -o "build/kernels/$(basename "$k" .cu).o" 2>> "$tmp" \
    || { cat "$tmp"; echo "compile-kernels: $k failed"; exit 1; }
done
# Keep the readable lines: which function, registers, shared memory, spills,
# and ptxas's performance warnings (C7510-C7520: wgmma.mma_async serialized,
# for want of registers or because other code touches the accumulators
# inside a pipeline stage).
grep -E '^#|Compiling entry|Function properties|Used [0-9]+ registers|spill|Potential Performance Loss' "$tmp" > "$out.tmp"
mv "$out.tmp" "$out"
# A serialized wgmma waits for each product before issuing the next: the
# kernels were written to keep a stage's products in flight, so it is a bug.
if grep -q 'Potential Performance Loss' "$out"; then
  grep 'Potential Performance Loss' "$out"
  echo "compile-kernels: ptxas serialized wgmma (above); see $out"
  exit 1
fi
echo "compile-kernels: ${#kernels[@]} files compiled; resource usage in $out"
