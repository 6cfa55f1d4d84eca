#pragma once
// Launchers of the GEMM kernels (kernels/gemm.cu): batched, strided
//
//   C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b],   b = 0 .. batch-1
//
// on row-major float32 or float64 matrices. op(A) is M x K, op(B) is K x N, C
// is M x N. Element (m, k) of op(A) sits at a[m * lda + k], or at a[k * lda + m]
// when trans_a; element (k, n) of op(B) at b[k * ldb + n], or b[n * ldb + k]
// when trans_b; C's (m, n) at c[m * ldc + n]. Batch b starts stride_* elements
// after batch b - 1; a stride of 0 broadcasts that operand over the batch.
// When beta == 0, C is never read (it may hold NaN or garbage).
//
// The family "gemm" (kernel_versions.h) has nine versions:
//   1 naive, 2 shared-memory tiles, 3 register-blocked with 16-byte vector
//   loads, 4 warp-tiled, 5 cp.async pipeline, 6 per-shape tiles, 7 split-K
//   (the default: v6 plus split-K where the tiles alone leave SMs idle),
//   8 wide thread tiles (v7 with 8x16 float accumulators per thread in its
//   128x128 tile), 9 cuBLAS (cuda backend only). docs/gpu/gemm.md compares
//   them.
#include <cstdint>
#include <string>

#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

struct GemmArgs {
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t batch = 1;
  bool trans_a = false, trans_b = false;
  const void* a = nullptr;
  std::int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0, stride_b = 0;
  void* c = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  double alpha = 1, beta = 0;
};

inline constexpr int kGemmWarpTiledVersion = 4;
inline constexpr int kGemmPipelinedVersion = 5;
inline constexpr int kGemmPerShapeVersion = 6;
inline constexpr int kGemmSplitKVersion = 7;
inline constexpr int kGemmWideThreadTileVersion = 8;
inline constexpr int kGemmDefaultVersion = kGemmSplitKVersion;
inline constexpr int kGemmCublasVersion = 9;

// Registers the "gemm" kernel family (idempotent). Launchers call it; tests
// call it before set_kernel_version("gemm", ...).
void register_gemm_family();

// Empty when `version` can run these arguments, else the reason it cannot
// (bad sizes, overlapping output, grid limits, cuBLAS's leading-dim rules or
// its absence under sim).
std::string gemm_cannot_implement(DType dtype, const GemmArgs& args, int version);

// What `version` runs for these arguments, in words: for v4-v8 the block,
// warp and thread tiles, the pipeline depth and the split-K factor chosen by
// the shape rules (gemm_warp_tiled.cu); for the others their one kernel.
std::string gemm_describe(DType dtype, const GemmArgs& args, int version);

// Whether version 3 will use 16-byte vector loads and stores for these
// arguments (every pointer 16-byte aligned, every leading dim and batch
// stride a multiple of the vector width); otherwise it loads scalars.
bool gemm_vector_loads(DType dtype, const GemmArgs& args);

// Runs kernel_version("gemm"), or the given version; throws Error naming the
// problem when that version cannot implement the arguments.
void launch_gemm(DType dtype, const GemmArgs& args);
void launch_gemm(DType dtype, const GemmArgs& args, int version);

}  // namespace convkit::CK_GPU_NS
