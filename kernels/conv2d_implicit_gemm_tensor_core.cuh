#pragma once
// Launchers of the tensor-core implicit-GEMM convolution
// (kernels/conv2d_implicit_gemm_tensor_core.cu): the three passes of the
// im2col_gemm algorithm as the implicit GEMMs of conv2d_implicit_gemm.cuh,
// float32 in and out, with the operands rounded to tf32 (cvt.rna, 10 mantissa
// bits; mma.sync m16n8k8) or bf16 (nearest even, 7 bits; m16n8k16),
// accumulating in float32.
//
// A separate family from "conv2d_implicit_gemm" for the reason
// gemm_tensor_core is separate from gemm: its contract is reduced precision,
// chosen only when the user allows it (float32_precision high or medium,
// convkit/backend/precision.h),
// and float32 only. CONVKIT_KERNEL_CONV2D_IMPLICIT_GEMM=<v> keeps meaning "this
// strict-precision kernel".
//
// The family "conv2d_implicit_gemm_tensor_core" has five versions:
//   1 warp per tile: one warp per 16x8 tile of the product, each lane gathering
//     its fragments from x, w or dy and rounding them; the twin, no workspace
//   2 tiled (the default): 64x64x32 block tiles gathered into shared memory by
//     version 3's loaders, rounded once as they are staged, 8 warps of 32x16,
//     backward-data's transposed filter and backward-weights' split-K as in
//     version 3 (so the same workspace)
//   3 pipelined: conv2d_implicit_gemm version 5's division-free gathering
//     loaders, 4-stage cp.async pipeline and 64x64 / 64x32 / 32x64 tiles, each
//     warp's product on mma.sync, float32 stages rounded as the fragments are
//     read; version 5's descriptors, workspace and split-K slices
//   4 channels-last: every pass on channels-last copies of its operands in
//     the workspace, each group's channels padded to a multiple of 4, every
//     gather a 16-byte cp.async of 4 channels: forward and backward-data on
//     the image (x or dy) and taps-major copies of the filter, stages of
//     16 k swizzled for conflict-free fragment reads; backward-weights on x
//     and dy, into version 3's k-major stages, or version 3's own where
//     those copies pass workspace_limit
//     (kernels/conv2d_implicit_gemm_channels_last.cuh)
//   5 wgmma: version 4's copies, workspace and split-K, every pass
//     multiplied in tf32 by Hopper's m64n128k8 wgmma from 128-byte swizzled
//     stages: forward and backward-data with version 4's gathers, in 128x128
//     or 64x128 tiles of one or two warpgroups; backward-weights staged
//     through registers and stored transposed (position-major); bf16 runs
//     version 4's kernels. Only where wgmma runs: a compute capability 9.0
//     GPU with a build for sm_90a, and sim
#include <cstddef>
#include <string>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_core_precision.cuh"

namespace convkit::CK_GPU_NS {

inline constexpr int kImplicitGemmTcWarpVersion = 1;
inline constexpr int kImplicitGemmTcTiledVersion = 2;
inline constexpr int kImplicitGemmTcPipelinedVersion = 3;
inline constexpr int kImplicitGemmTcChannelsLastVersion = 4;
inline constexpr int kImplicitGemmTcWgmmaVersion = 5;
// The newest version conv benchmark mode may time. A tuner picks by speed
// alone, so a version joins its candidates once a GPU has passed its tests:
// version 5's wgmma has run only on sim's emulation (pin it to try it).
inline constexpr int kImplicitGemmTcNewestTunedVersion = kImplicitGemmTcChannelsLastVersion;

// Registers the "conv2d_implicit_gemm_tensor_core" family (idempotent).
void register_conv2d_implicit_gemm_tensor_core_family();

// Empty when `version` can run `d` in `dtype`, else why not (a version other
// than 1 to 5, a dtype other than float32, an index past 32 bits, a grid too
// big; for version 3 what conv2d_implicit_gemm version 5 cannot run; for
// versions 4 and 5 copies past 32-bit indices or workspace_limit; for
// version 5 a device or build without wgmma).
std::string conv2d_implicit_gemm_tensor_core_cannot_implement(DType dtype, const Conv2dDesc& d, int version);

// Bytes of workspace `pass` needs under `version` (0 when none). Version 2's
// equal conv2d_implicit_gemm version 3's for every descriptor, version 3's
// version 5's; versions 4 and 5's are their copies (backward-weights: then version 5's
// split-K partials, within what the copies leave of the limit; version 3's
// where the copies do not fit). A pure
// function of the descriptor, dtype and version; never above d.workspace_limit.
std::size_t conv2d_implicit_gemm_tensor_core_workspace_bytes(DType dtype, const Conv2dDesc& d, ConvPass pass,
                                                             int version);

// The split-K slices of backward-weights (1: none), fixed by the descriptor.
int conv2d_implicit_gemm_tensor_core_weight_slices(DType dtype, const Conv2dDesc& d, int version);

// The passes, as in conv2d_implicit_gemm.cuh, with the operands rounded to
// `precision`; each overwrites its output. Forward's workspace is versions
// 4 and 5's alone (others may pass null).
void launch_conv2d_implicit_gemm_tensor_core_forward(TensorCorePrecision precision, DType dtype, const Conv2dDesc& d,
                                                     const void* x, const void* w, const void* b, void* y,
                                                     void* workspace, int version);
void launch_conv2d_implicit_gemm_tensor_core_backward_data(TensorCorePrecision precision, DType dtype,
                                                           const Conv2dDesc& d, const void* dy, const void* w,
                                                           void* dx, void* workspace, int version);
void launch_conv2d_implicit_gemm_tensor_core_backward_weights(TensorCorePrecision precision, DType dtype,
                                                              const Conv2dDesc& d, const void* x, const void* dy,
                                                              void* dw, void* workspace, int version);

}  // namespace convkit::CK_GPU_NS
