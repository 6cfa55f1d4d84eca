#!/usr/bin/env bash
# Compute time of one training step (forward, backward, optimizer step) of
# each zoo model at two batch sizes: the measured input of the scaling model
# (scripts/scaling_model.py, docs/distributed-scaling.md).
#
#   benchmarks/step_times.sh CONVKIT OUT.jsonl [batches] [models]
#
# Each run is `convkit bench train MODEL --device cpu --optimizer sgd --batch B
# --json`, with fewer timed steps for the models whose step takes seconds; its
# JSON line gets the 1-minute load average before and after the run and the
# process's CPU seconds (user + sys, from /usr/bin/time) appended, since the
# machine is shared and the wall-clock time depends on its load.
set -euo pipefail
bin=$1 out=$2
batches=${3:-"32 128"}
models=${4:-}
if [ -z "$models" ]; then
  models="fmnist-cnn fmnist-cnn-bn cifar10-cnn cifar10-cnn-bn catdog-cnn catdog-cnn-improved datamadness-cnn resnet18-cifar"
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
: > "$out"
for model in $models; do
  case $model in
    datamadness-cnn|resnet18-cifar|catdog-cnn-improved) steps=3 warmup=1 ;;
    *) steps=10 warmup=2 ;;
  esac
  for batch in $batches; do
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    cpu_file=$(mktemp)
    line=$(/usr/bin/time -f '%U %S' -o "$cpu_file" "$bin" bench train "$model" --device cpu \
           --optimizer sgd --batch "$batch" --steps "$steps" --warmup "$warmup" --json | tail -1)
    cpu=$(awk '{print $1 + $2}' "$cpu_file"); rm -f "$cpu_file"
    load_after=$(cut -d' ' -f1 /proc/loadavg)
    echo "${line%\}}, \"process_cpu_seconds\": $cpu, \"load_average_before\": $load_before, \"load_average_after\": $load_after}" | tee -a "$out"
  done
done
