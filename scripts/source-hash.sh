#!/usr/bin/env bash
# Prints one hash of every file a build reads (sources, headers, kernels,
# tests, benchmarks, CMake files), by content: git may be absent where the
# tree is copied (the GPU machine), so it hashes files, not commits.
# scripts/gpu-prebuild.sh records it; gpu-check.sh --prebuilt compares it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
find CMakeLists.txt CMakePresets.json cmake include src kernels tests benchmarks third_party \
  -type f ! -name '*.md' ! -path '*/__pycache__/*' 2>/dev/null | LC_ALL=C sort | xargs -d '\n' sha1sum | sha1sum | cut -d' ' -f1
