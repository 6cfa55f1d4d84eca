#!/usr/bin/env bash
# Run on the CPU machine before a GPU lease: downloads the Debian packages that
# the build needs and the GPU machine lacks (it has nvcc, CMake, ninja, g++ and
# PyTorch, but no package registry) into .gpu-deps/, which git ignores and the
# device tool carries. scripts/gpu-check.sh unpacks them into a private prefix.
# About 6 MiB; the device tool carries at most 64 MiB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
packages=(
  libeigen3-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev libbenchmark1debian
  zlib1g zlib1g-dev libpng-dev libpng16-16 libjpeg-dev libjpeg62-turbo-dev libjpeg62-turbo
)
mkdir -p .gpu-deps
cd .gpu-deps
rm -f ./*.deb
[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq
apt-get download -qq "${packages[@]}"
du -sh . | sed 's/^/gpu-deps: /'
