#!/usr/bin/env bash
# The test command: installs what is missing, configures, builds and runs the
# whole suite. Usage: scripts/test.sh [release|debug|asan] [extra ctest args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${1:-release}
[ "$#" -gt 0 ] && shift
./third_party/install-deps.sh --preset "$preset"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset" -j "$(nproc)" "$@"
