#!/usr/bin/env bash
# The main job: installs what is missing, builds convkit, lists the devices
# and runs the autograd example.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./third_party/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
build/release/bin/convkit --version
build/release/bin/convkit devices
build/release/examples/autograd_basics
