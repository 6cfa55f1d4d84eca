#!/usr/bin/env bash
# Wall time of every ctest test that runs one of the given test binaries (its
# discovered gtest cases and its .sim.* and .simcheck runs), with ctest -j2 as
# the test preset runs them. Used to keep CI time flat when suites are
# reshaped, e.g.
#   scripts/suite_time.sh build/release test_core test_ops
set -euo pipefail
build=$1
shift
regex=$(ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, os, re, sys
wanted = set(sys.argv[1:])
tests = json.load(sys.stdin)["tests"]
names = [t["name"] for t in tests if os.path.basename(t.get("command", [""])[0]) in wanted]
print(len(names), "^(" + "|".join(re.escape(n) for n in names) + ")$")
' "$@")
count=${regex%% *}
regex=${regex#* }
[ "$count" -gt 0 ] || { echo "no tests run $*" >&2; exit 1; }
echo "binaries: $*"
echo "tests: $count"
start=$(date +%s.%N)
ctest --test-dir "$build" -j2 -R "$regex" --output-on-failure | tail -3
end=$(date +%s.%N)
echo "wall seconds: $(python3 -c "print(round($end - $start, 1))")"
