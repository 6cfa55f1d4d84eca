#!/usr/bin/env bash
# Lease of 2026-11-28, run 3: implicit GEMM v5 and tensor-core v3 with the
# output tile staged through shared memory (coalesced stores) and
# backward-data's unreached stride phases filled instead of multiplied;
# tests, both layer sets against cuDNN (strict, then tf32 with cuDNN's tf32),
# training beside PyTorch.
set -u
R=/tmp/r3; mkdir -p $R
scripts/gpu-check.sh --quick --prebuilt --steps tests $R/t
scripts/gpu-check.sh --prebuilt --steps bench_conv,train $R/m
export $(grep -m1 '^LD_LIBRARY_PATH=' $R/t/log.txt)
CONVKIT_ALLOW_TF32=1 timeout 120 build/gpu-sm90/benchmarks/bench_conv --sets=cifar10-cnn,resnet18-cifar \
  --devices=cuda --algos=im2col_gemm,winograd,cudnn --benchmark_min_time=0.02 --benchmark_format=console \
  --benchmark_out_format=json --benchmark_out=$R/bench_conv_tf32.json >$R/bench_conv_tf32.txt 2>&1
echo "exit $?" >>$R/bench_conv_tf32.txt
tar -czf $OUT/run3.tar.gz -C $R .
