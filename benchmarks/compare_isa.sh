#!/usr/bin/env bash
# Training throughput of the cpu backend's ISA copies (docs/cpu-isa.md)
# against a -march=native build, alternating the runs side by side so that
# the machine's drift spreads over every variant.
#
#   benchmarks/compare_isa.sh NATIVE_CONVKIT PORTABLE_CONVKIT OUT.jsonl [rounds] [steps]
#
# Each round runs, for each model, the native binary, then the portable one
# under CONVKIT_CPU_ISA=baseline and =avx2 (and avx512 where the CPU has it),
# in a rotating order. Each run is `convkit bench train MODEL --optimizer sgd
# --batch 64 --json`; its JSON line gets the variant, the round and the
# process's CPU seconds (user + sys, from /usr/bin/time) appended.
# benchmarks/compare_isa_summary.py OUT.jsonl prints the medians.
set -euo pipefail
native=$1 portable=$2 out=$3 rounds=${4:-5} steps=${5:-10}
models=(fmnist-cnn cifar10-cnn)
variants=(native baseline avx2)
if grep -q avx512bw /proc/cpuinfo; then variants+=(avx512); fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
: > "$out"
for round in $(seq 1 "$rounds"); do
  for model in "${models[@]}"; do
    n=${#variants[@]}
    for i in $(seq 0 $((n - 1))); do
      variant=${variants[$(( (i + round) % n ))]}
      if [ "$variant" = native ]; then bin=$native isa=; else bin=$portable isa=$variant; fi
      cpu_file=$(mktemp)
      line=$(CONVKIT_CPU_ISA=$isa /usr/bin/time -f '%U %S' -o "$cpu_file" \
             "$bin" bench train "$model" --optimizer sgd --batch 64 --steps "$steps" --json | tail -1)
      cpu=$(awk '{print $1 + $2}' "$cpu_file"); rm -f "$cpu_file"
      load=$(cut -d' ' -f1 /proc/loadavg)
      echo "${line%\}}, \"variant\": \"$variant\", \"round\": $round, \"process_cpu_seconds\": $cpu, \"load_average\": $load}" | tee -a "$out"
    done
  done
done
