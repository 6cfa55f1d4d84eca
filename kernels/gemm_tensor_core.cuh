#pragma once
// Launchers of the tensor-core GEMM kernels (kernels/gemm_tensor_core.cu):
// the same batched, strided product as gemm.cuh (same GemmArgs contract),
// float32 in and out, but with the operands rounded to tf32 or bf16 and
// multiplied by mma.sync, accumulating in float32.
//
// A separate family from "gemm" because its contract differs: it is not
// float32 GEMM but a reduced-precision one, chosen only when the user allows
// it (allow_tf32), and it has float32 only. Keeping it apart keeps
// CONVKIT_KERNEL_GEMM=<v> meaning "this strict-precision kernel".
//
// The family "gemm_tensor_core" has seven versions:
//   1 one warp per 16x8 tile of C, fragments straight from global memory
//   2 64x64 block tile, 4 warps of 32x32, shared-memory staging with a
//     register-staged double buffer
//   3 128x128 block tile, 8 warps of 64x32, 16-byte staging loads
//   4 128x128 block tile, 4 warps of 64x64, a 3-stage cp.async pipeline (the
//     default: on the H200 it ran n = 1024-4096 1.3-3.4x faster than v2, and
//     n = 256-512 at 0.92-1.08x v2's speed; docs/results/nvidia-h200-2026-11-28)
//   5 v4 with tf32 stages rounded once as they land and whole-or-nothing
//     copies: 0.91x v4 in tf32, 1.02-1.06x in bf16 on the H200
//   6 wgmma (sm_90a): two warpgroups per 128x128 tile, m64n128k8 from
//     128-byte swizzled stages; tf32, C = A B^T only; not yet run on a GPU
//   7 wgmma from register-staged stages, converted and stored K-major: every
//     transpose pair, tf32 and bf16; not yet run on a GPU
#include <string>

#include "kernels/gemm.cuh"
#include "kernels/tensor_core_precision.cuh"

namespace convkit::CK_GPU_NS {


// Registers the family (idempotent).
void register_gemm_tensor_core_family();

// Empty when `version` can run these arguments in this precision (float32
// only), else why not.
std::string gemm_tensor_core_cannot_implement(TensorCorePrecision precision, DType dtype, const GemmArgs& args,
                                              int version);

// Runs kernel_version("gemm_tensor_core"), or the given version; throws Error
// naming the problem when it cannot implement the arguments. The default
// version 4 gives way to version 3 where the device lacks its shared memory
// (sm_86 and sm_89), unless the family is pinned.
void launch_gemm_tensor_core(TensorCorePrecision precision, DType dtype, const GemmArgs& args);
void launch_gemm_tensor_core(TensorCorePrecision precision, DType dtype, const GemmArgs& args, int version);

}  // namespace convkit::CK_GPU_NS
