#!/usr/bin/env bash
# Run on the CPU machine before a GPU lease, after scripts/gpu-deps.sh: builds
# for the GPU what scripts/gpu-check.sh runs (the CLI, the libraries, the test
# binaries, bench_conv and bench_gemm) and packs the binaries into
# .gpu-deps/prebuilt.tar.gz, which the device tool carries with the .debs.
# A lease has 15 minutes of device time; building there cost 155 s of them
# (configure and build on the H200's 16 cores), here it costs none (about 20
# minutes on 2 cores).
#
#   scripts/gpu-prebuild.sh [ARCHS]    # ARCHS: CMake's CUDA architectures, default
#                                      # "90a-real;80-virtual" (H100/H200 with the wgmma
#                                      # kernels, and gpu-check's compute_80 PTX)
#
# The archive records a hash of the sources it was built from
# (scripts/source-hash.sh); `gpu-check.sh --prebuilt` uses it only when the
# tree it runs in hashes the same, and builds there otherwise. The oneDNN
# baseline is left out: the GPU machine has no oneDNN for bench_conv to load.
# It has OpenMPI (libmpi.so.40, as here) and cuDNN, and the CLI built here
# loaded there and listed the GPU (docs/results/nvidia-h200-2026-11-27).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
arch=${1:-90a-real;80-virtual}
dir=build/gpu-sm${arch%%[-;]*}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONVKIT_BUILD_EXAMPLES=OFF -DCONVKIT_WERROR=OFF \
  -DCONVKIT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCONVKIT_MPI=ON -DCONVKIT_DNNL_INCLUDE=OFF >/dev/null
# The targets gpu-check runs, by their output paths (ninja builds paths; the
# libtorch comparison and the examples stay out).
mapfile -t targets < <(ninja -C "$dir" -t targets all | cut -d: -f1 | grep -v CMakeFiles |
  grep -E '^(tests/.*/test_[a-z0-9_]+|benchmarks/bench_(conv|gemm)|bin/convkit|lib/libconvkit_cuda\.so)$')
ninja -C "$dir" "${targets[@]}"
files=("$dir/include/convkit/version.h")
for t in "${targets[@]}"; do files+=("$dir/$t"); done
for lib in "$dir"/lib/*.so*; do files+=("$lib"); done
mkdir -p .gpu-deps
scripts/source-hash.sh >"$dir/source-hash"
files+=("$dir/source-hash")
tar -czf .gpu-deps/prebuilt.tar.gz.tmp "${files[@]}"
mv .gpu-deps/prebuilt.tar.gz.tmp .gpu-deps/prebuilt.tar.gz
du -h .gpu-deps/prebuilt.tar.gz | sed 's/^/gpu-prebuild: /'
