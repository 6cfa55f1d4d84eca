#pragma once
// cuBLAS as the GEMM baseline of bench_gemm for the reduced-precision modes:
// a row-major float32 product C = A B (n x n) through cublasGemmEx, float32
// in and float32 out, with the compute type that matches convkit's
// float32_precision level: CUBLAS_COMPUTE_32F at highest (what SGEMM
// computes), CUBLAS_COMPUTE_32F_FAST_TF32 at high, CUBLAS_COMPUTE_32F_FAST_16BF
// at medium (operands rounded to bf16 inside cuBLAS, accumulation in
// float32). Same storage, same rounding contract as gemm_tensor_core, so the
// two are timed on equal terms. Built only with the cuda backend
// (CONVKIT_BENCH_CUBLAS); bench_gemm registers its rows only where a cuda
// device is usable.
#include <cstdint>

#include "convkit/backend/precision.h"

namespace convkit::bench {

// c = a * b, row-major n x n device buffers (c = a * b^T with b_transposed);
// waits for the GPU before it returns, so a loop of calls times the products.
void cublas_gemm(Float32Precision precision, const float* a, const float* b, float* c, std::int64_t n,
                 bool b_transposed = false);

}  // namespace convkit::bench
