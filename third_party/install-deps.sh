#!/usr/bin/env bash
# Installs whichever packages in third_party/packages.txt are missing.
# Idempotent and silent when everything is present. The CUDA toolkit is not a
# Debian package here: when nvcc exists the build uses it, otherwise it builds
# the CPU and sim backends only.
#   install-deps.sh [--preset NAME] [package...]
# --preset NAME adds third_party/packages-NAME.txt where it exists (the asan
# preset's clang); packages named after it are extras, e.g. libtorch-dev for
# the optional comparisons.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lists=("$here/packages.txt")
if [ "${1:-}" = --preset ]; then
  [ -f "$here/packages-$2.txt" ] && lists+=("$here/packages-$2.txt")
  shift 2
fi
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "${lists[@]}" | grep -v '^$')
[ "$#" -gt 0 ] && wanted+=("$@")

missing=()
for p in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
