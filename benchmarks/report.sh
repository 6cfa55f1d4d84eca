#!/usr/bin/env bash
# Runs the benchmark suites and `convkit bench train` / `convkit train`, then
# writes the report (markdown tables and gnuplot PNGs) to
# docs/results/<machine>/. See docs/benchmarks.md.
#
# usage: benchmarks/report.sh quick|full [--build DIR] [--out DIR] [--note TEXT]
#   quick  the CPU convolution algorithms on the cifar10-cnn layers at batch
#          128, the five sweeps at 1/8 to 1/64 of their batch, the other layers,
#          cifar10-cnn training at batches 16..256, the workers sweep on
#          Fashion-MNIST and a cifar10-cnn profile: under 5 minutes on 2 cores
#   full   every layer set at its own batch, every zoo model on every device
#          (hours on a CPU)
#   smoke  every step on tiny inputs, for tests/bench (figures meaningless)
#   --build DIR   the build tree (default build/release)
#   --out DIR     where the report goes (default docs/results/<machine>)
#   --note TEXT   a line quoted under the report's header (repeatable)
#   --repeat N    times each training figure (3; 1 for smoke): the report
#                 gives the median and plots the min-max range
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-}
[[ $preset == quick || $preset == full || $preset == smoke ]] || { sed -n '2,20p' "$0" >&2; exit 2; }
shift
build=$root/build/release
out=
notes=()
repeat=3
[[ $preset == smoke ]] && repeat=1
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --note) notes+=(--note "$2"); shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "report.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
bench=$build/benchmarks
convkit=$build/bin/convkit
for tool in "$bench/bench_conv" "$bench/bench_layers" "$bench/bench_train" "$convkit"; do
  [[ -x $tool ]] || { echo "report.sh: $tool is not built (cmake --build --preset release)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "report.sh: python3 is needed to read the JSON" >&2; exit 2; }

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT

# run NAME SUITE ARGS...: one suite's results as Google Benchmark JSON in raw/NAME.json.
run() {
  local name=$1 suite=$2
  shift 2
  echo "== $suite $*" >&2
  local start=$SECONDS
  "$bench/$suite" "$@" --benchmark_out="$raw/$name.json" --benchmark_out_format=json \
    --benchmark_format=console --benchmark_counters_tabular=false >"$raw/$name.log" 2>&1 ||
    { echo "report.sh: $suite failed, its output:" >&2; cat "$raw/$name.log" >&2; exit 1; }
  echo "   $((SECONDS - start)) s" >&2
}

# train_runs STEPS MODEL...: `convkit bench train` per model x device x batch
# into raw/train.jsonl; a device that cannot run gets one record with its error.
train_runs() {
  local steps=$1 model device batch line err
  shift
  echo "== convkit bench train $* (batches ${batches[*]}, devices ${train_devices[*]})" >&2
  local start=$SECONDS
  for model in "$@"; do
    for device in "${train_devices[@]}"; do
      for batch in "${batches[@]}"; do
        if line=$("$convkit" bench train "$model" --device "$device" --batch "$batch" --steps "$steps" \
                    --warmup 1 --repeat "$repeat" --json 2>"$raw/err.txt" | tail -n 1); then
          echo "$line" >>"$raw/train.jsonl"
        else
          err=$(tail -n 1 "$raw/err.txt")
          python3 -c 'import json, sys; print(json.dumps({"model": sys.argv[1], "device": sys.argv[2],
                      "batch": int(sys.argv[3]), "skipped": sys.argv[4]}))' \
            "$model" "$device" "$batch" "$err" >>"$raw/train.jsonl"
          # A device that cannot run the smallest batch cannot run the others.
          [[ $batch == "${batches[0]}" ]] && break
        fi
      done
    done
  done
  echo "   $((SECONDS - start)) s" >&2
}

# worker_runs MODEL LIMIT: `convkit train` with augmentation on a subset of
# Fashion-MNIST at 1, 2 and 4 data-loader workers into raw/workers.jsonl.
worker_runs() {
  local model=$1 limit=$2 w line
  echo "== convkit train $model --augment --workers 1,2,4 --limit $limit" >&2
  local start=$SECONDS
  for w in 1 2 4; do
    if line=$("$convkit" train "$model" --data fashion-mnist --limit "$limit" --test-limit 256 --no-validation \
                --epochs 1 --batch 128 --augment --workers "$w" --progress none --json 2>"$raw/err.txt" | tail -n 1); then
      python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(json.dumps({"model": r["model"],
                  "workers": int(sys.argv[2]), "what": "training", "augment": True,
                  "images_per_sec": r["train_images_per_sec"]}))' "$line" "$w" >>"$raw/workers.jsonl"
    else
      echo "report.sh: convkit train failed, the workers sweep has no training figures: $(tail -n 1 "$raw/err.txt")" >&2
      notes+=(--note "convkit train did not run: $(tail -n 1 "$raw/err.txt")")
      break
    fi
  done
  echo "   $((SECONDS - start)) s" >&2
}

zoo=(fmnist-cnn fmnist-cnn-bn cifar10-cnn catdog-cnn catdog-cnn-improved datamadness-cnn resnet18-cifar)
batches=(16 32 64 128 256)
# sim is a correctness backend: never timed for the report.
train_devices=(cpu cuda)
started=$SECONDS
if [[ $preset == quick ]]; then
  # Headline: the CPU algorithms on the Keras cifar10 layers at batch 128.
  run conv bench_conv --sets=cifar10-cnn --devices=cpu --benchmark_min_time=0.2
  # Crossovers at 1/32 of the batch (1/64 for the sizes up to 128x128, 1/8 for
  # the batch sweep so that its sizes stay apart).
  run conv-sweeps bench_conv --sets=sweep-kernel,sweep-filters,sweep-stride --batch-scale=0.03125 \
    --devices=cpu --benchmark_min_time=0.1
  run conv-sweep-size bench_conv --sets=sweep-size --batch-scale=0.015625 --devices=cpu --benchmark_min_time=0.1
  run conv-sweep-batch bench_conv --sets=sweep-batch --batch-scale=0.125 --devices=cpu --benchmark_min_time=0.1
  run layers bench_layers --devices=cpu --benchmark_min_time=0.1
  train_runs 2 cifar10-cnn
  worker_runs fmnist-cnn 3072
  run train bench_train --devices=cpu --pipeline-model=fmnist-cnn --workers=1,2,4 --pipeline-batches=24 \
    --profile-model=cifar10-cnn --profile-batch=128 --steps=3 --profile-out="$raw/profile.json"
elif [[ $preset == smoke ]]; then
  batches=(2 4)
  run conv bench_conv --layer-file="$root/tests/bench/data/tiny_layers.txt" --sets=tiny,sweep-tiny --devices=cpu \
    --rotate-mib=0 --benchmark_min_time=0.001
  run layers bench_layers --devices=cpu --batch-scale=0.02 --benchmark_min_time=0.001
  train_runs 1 fmnist-cnn
  worker_runs fmnist-cnn 256
  run train bench_train --devices=cpu --pipeline-model=fmnist-cnn --workers=1,2 --pipeline-batch=4 \
    --pipeline-batches=2 --profile-model=fmnist-cnn --profile-batch=2 --warmup=0 --steps=1 \
    --profile-out="$raw/profile.json"
else
  run conv bench_conv --sets=all --benchmark_min_time=0.5
  run layers bench_layers --benchmark_min_time=0.5
  train_runs 5 "${zoo[@]}"
  worker_runs fmnist-cnn 12288
  run train bench_train --pipeline-model=fmnist-cnn --workers=1,2,4 --pipeline-batches=96 \
    --profile-model=cifar10-cnn --profile-batch=128 --steps=5 --profile-out="$raw/profile.json"
fi
elapsed=$((SECONDS - started))

machine=$(python3 "$root/benchmarks/report.py" --machine-slug "$raw")
out=${out:-$root/docs/results/$machine}
mkdir -p "$out/raw"
rm -f "$out"/raw/*.json "$out"/raw/*.jsonl
cp "$raw"/*.json "$out/raw/"
cp "$raw"/*.jsonl "$out/raw/" 2>/dev/null || true
python3 "$root/benchmarks/report.py" "$out/raw" "$out" --preset "$preset" \
  --note "The $preset preset ran for $elapsed s." "${notes[@]}"
echo "report.sh: $out/README.md ($elapsed s of benchmarks)" >&2
