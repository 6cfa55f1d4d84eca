#!/usr/bin/env bash
# Lease of 2026-11-28, run 3: implicit GEMM v5 and tensor-core v3 with the
# output tile staged through shared memory (coalesced stores), backward-data's
# unreached stride phases filled instead of multiplied, tensor-core GEMM v5;
# tests, both layer sets against cuDNN (strict, then tf32 against cuDNN's tf32:
# gpu-check's bench_conv_tf32 step), every GEMM version, training beside PyTorch.
set -u
R=/tmp/r3; mkdir -p $R
scripts/gpu-check.sh --quick --prebuilt --steps tests $R/t
scripts/gpu-check.sh --prebuilt --steps bench_conv,bench_conv_tf32,gemm,train $R/m
tar -czf $OUT/run3.tar.gz -C $R .
