#!/usr/bin/env bash
# Lease of 2026-11-28, run 1: the kernels written without a GPU (FFT v4,
# direct v4, tensor-core conv v3, tensor-core GEMM v4) tested, sanitized and
# timed beside every other version. Everything lands in $OUT/run1.tar.gz.
set -u
R=/tmp/r; mkdir -p $R
scripts/gpu-check.sh --quick --prebuilt --steps tests $R/t
scripts/gpu-check.sh --prebuilt --steps gemm,kernel_versions $R/v
export $(grep -m1 '^LD_LIBRARY_PATH=' $R/t/log.txt)
B=build/gpu-sm90/tests/gpu
s() {  # tool binary filter seconds
  echo "=== compute-sanitizer --tool $1 $2 --gtest_filter=$3" >>$R/sanitizer.txt
  timeout $4 compute-sanitizer --tool $1 --error-exitcode 3 --print-limit 20 $B/$2 --gtest_filter="$3" --gtest_brief=1 >>$R/sanitizer.txt 2>&1
  echo "=== exit $?" >>$R/sanitizer.txt
}
t0=$SECONDS
s memcheck conv_fft/test_gpu_conv_fft_cuda '*v4*:*Fused*:*ChannelSums*' 40
s memcheck conv_direct/test_gpu_conv_direct_cuda '*v4*:*Split*' 40
s memcheck conv_implicit_gemm_tensor_core/test_gpu_conv_implicit_gemm_tensor_core_cuda '*v3*:*Pipelined*' 40
s memcheck gemm_tensor_core/test_gpu_gemm_tensor_core_cuda '*' 30
s racecheck conv_fft/test_gpu_conv_fft_cuda '*Fused*:*ChannelSums*:*odd_nonsquare*v4*' 40
s racecheck conv_implicit_gemm_tensor_core/test_gpu_conv_implicit_gemm_tensor_core_cuda '*Pipelined*' 30
echo "sanitizer seconds: $((SECONDS - t0))" >>$R/sanitizer.txt
nvidia-smi >$R/nvidia-smi.txt 2>&1
tar -czf $OUT/run1.tar.gz -C $R .
