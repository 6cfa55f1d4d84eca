#include "cublas_baseline.h"

#include "convkit/core/error.h"

#if defined(CONVKIT_BENCH_CUBLAS)
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

namespace convkit::bench {

#if defined(CONVKIT_BENCH_CUBLAS)

namespace {

cublasHandle_t handle() {
  // Never destroyed: a static destructor may run after the CUDA runtime has gone.
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    const cublasStatus_t s = cublasCreate(&created);
    CK_CHECK(s == CUBLAS_STATUS_SUCCESS, "cuBLAS baseline: cublasCreate failed: ", cublasGetStatusString(s));
    return created;
  }();
  return h;
}

cublasComputeType_t compute_type(Float32Precision p) {
  switch (p) {
    case Float32Precision::highest: return CUBLAS_COMPUTE_32F;
    case Float32Precision::high: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case Float32Precision::medium: return CUBLAS_COMPUTE_32F_FAST_16BF;
  }
  return CUBLAS_COMPUTE_32F;
}

}  // namespace

void cublas_gemm(Float32Precision precision, const float* a, const float* b, float* c, std::int64_t n,
                 bool b_transposed) {
  // Row-major C = A B is column-major C^T = B^T A^T: B first, then A. With B
  // transposed (C = A S^T, S stored row-major), C^T = S A^T: the stored S,
  // which column-major reads as S^T, is transposed back.
  const int m = static_cast<int>(n);
  const float alpha = 1, beta = 0;
  const cublasOperation_t op_b = b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasStatus_t s = cublasGemmEx(handle(), op_b, CUBLAS_OP_N, m, m, m, &alpha, b, CUDA_R_32F, m, a,
                                        CUDA_R_32F, m, &beta, c, CUDA_R_32F, m, compute_type(precision),
                                        CUBLAS_GEMM_DEFAULT);
  CK_CHECK(s == CUBLAS_STATUS_SUCCESS, "cuBLAS baseline: cublasGemmEx (", to_string(precision),
           ") failed: ", cublasGetStatusString(s));
  const cudaError_t e = cudaDeviceSynchronize();
  CK_CHECK(e == cudaSuccess, "cuBLAS baseline: ", cudaGetErrorString(e));
}

#else

void cublas_gemm(Float32Precision, const float*, const float*, float*, std::int64_t, bool) {
  CK_FAIL("cuBLAS baseline: this build has no cuda backend");
}

#endif

}  // namespace convkit::bench
