#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz in the asan preset's build
# (clang, ASan + UBSan, coverage of the readers' layers), then runs each
# harness over its committed corpus and for SECONDS more on new inputs. A
# crash, a leak, a sanitizer report or a timeout fails the run; the input that
# caused it is left in BUILD/artifacts/. New inputs go to
# BUILD/corpus/<harness>/, never into the committed corpus: add an input there
# by hand once it found a bug. CI runs it with a short time after the asan
# suite, in the same build (so it builds nothing); docs/fuzzing.md records
# longer runs.
#   scripts/fuzz.sh [--seconds S] [--build-dir DIR] [--only NAME] [--log-dir DIR] [--no-build]
# --build-dir configures the asan preset there instead of in build/asan.
# --no-build runs the harnesses already built in DIR as they are, so that
# long runs side by side fuzz one build while the sources move on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=10
build=build/asan
only=""
log_dir=""
build_first=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --log-dir) log_dir=$2; shift 2 ;;
    --no-build) build_first=0; shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

harnesses=(idx cifar image checkpoint safetensors json model_spec cli_args)
[ -n "$only" ] && harnesses=("$only")

if [ "$build_first" = 1 ]; then
  ./third_party/install-deps.sh --preset asan
  cmake --preset asan -B "$build" >/dev/null
  targets=()
  for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
else
  for h in "${harnesses[@]}"; do
    [ -x "$build/tests/fuzz/fuzz_$h" ] || { echo "fuzz.sh: --no-build, and $build/tests/fuzz/fuzz_$h is not built" >&2; exit 2; }
  done
fi

mkdir -p "$build/artifacts"
[ -n "$log_dir" ] && mkdir -p "$log_dir"
status=0
for h in "${harnesses[@]}"; do
  mkdir -p "$build/corpus/$h"
  log="$build/fuzz_$h.log"
  echo "=== fuzz_$h: corpus tests/fuzz/corpus/$h, then $seconds s of new inputs"
  # -timeout: one input may take 10 s; -rss_limit_mb: what "memory out of
  # proportion to the file" means here. Both make the run fail.
  if ! "$build/tests/fuzz/fuzz_$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$build/artifacts/$h-" \
       "$build/corpus/$h" "tests/fuzz/corpus/$h" >"$log" 2>&1; then
    status=1
    echo "fuzz_$h FAILED; its log:"
    tail -n 60 "$log"
  fi
  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)|cov: " "$log" \
    | tail -n 5 || true
  [ -n "$log_dir" ] && cp "$log" "$log_dir/"
done
exit $status
