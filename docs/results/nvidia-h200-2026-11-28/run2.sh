#!/usr/bin/env bash
# Lease of 2026-11-28, run 2: the defaults run 1 chose (direct v4, FFT v4,
# tensor-core conv v3 under tf32 without a pin, tensor-core GEMM v4) tested,
# timed against cuDNN and in training beside PyTorch; one Nsight Compute
# report of the tensor-core GEMM v4 at n = 4096 (tf32 and bf16) for the next
# step; racecheck of the tensor-core conv v3 on two small cases.
set -u
R=/tmp/r2; mkdir -p $R
scripts/gpu-check.sh --quick --prebuilt --steps tests $R/t
scripts/gpu-check.sh --prebuilt --steps bench_conv,train $R/m
export $(grep -m1 '^LD_LIBRARY_PATH=' $R/t/log.txt)
B=build/gpu-sm90
echo "=== racecheck conv TC v3" >$R/sanitizer.txt
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 3 --print-limit 20 \
  $B/tests/gpu/conv_implicit_gemm_tensor_core/test_gpu_conv_implicit_gemm_tensor_core_cuda \
  --gtest_filter='*single_pixel_v3*:*odd_nonsquare_3x3_pad1_v3*' --gtest_brief=1 >>$R/sanitizer.txt 2>&1
echo "=== exit $?" >>$R/sanitizer.txt
for p in tf32 bf16; do
  timeout 60 ncu --kernel-name regex:gemm_tc_v4 --launch-skip 2 --launch-count 1 --set full --page details \
    $B/benchmarks/bench_gemm --benchmark_filter="TensorCore/$p/v4_async_pipeline/4096" \
    --benchmark_min_time=0.01 >$R/ncu-gemm-tc-v4-$p-4096.txt 2>&1
  echo "exit $?" >>$R/ncu-gemm-tc-v4-$p-4096.txt
done
tar -czf $OUT/run2.tar.gz -C $R .
