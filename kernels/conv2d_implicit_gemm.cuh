#pragma once
// Launchers of the implicit-GEMM convolution kernels (kernels/conv2d_implicit_gemm.cu):
// the three passes of the im2col_gemm algorithm with im2col done inside the
// GEMM's operand loads, so no column matrix is ever written.
//
// Buffers are contiguous device buffers of the dtype (float32 or float64),
// laid out as in Conv2dDesc: x NCHW, w K x C/groups x R x S, y/dy NKPQ.
//
// The family "conv2d_implicit_gemm" (kernel_versions.h) picks how the
// im2col_gemm algorithm (src/gpu/gpu_conv_im2col_gemm.cpp) multiplies:
//   1 explicit: im2col writes the column matrix, the gemm family multiplies
//     (kernels/im2col.cu, kernels/gemm.cu); the twin, runs every descriptor
//   2 implicit, simple: one thread per output element, the K loop gathering
//     the column entries it needs on the fly
//   3 implicit, tiled: 64x64 tiles staged through shared
//     memory by gathering loaders, 4x4 outputs per thread, split-K for the
//     weight gradient; also what runs a descriptor version 4 cannot
//   4 implicit, staged: version 3's tiles, the image patch
//     and the A rows copied to shared memory as aligned row-contiguous runs,
//     im2col formed from there (kernels/conv2d_implicit_gemm_staged.cuh)
//   5 implicit, pipelined (the default): warp tiles fed by a 4-stage
//     cp.async pipeline of gathered elements, whose indices step by
//     mixed-radix adds instead of divisions
//     (kernels/conv2d_implicit_gemm_pipelined.cuh)
// Under allow_tf32 the algorithm runs float32 passes on the tensor cores
// instead (kernels/conv2d_implicit_gemm_tensor_core.cuh), whatever this
// family's version.
#include <cstddef>
#include <cstdint>
#include <string>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"
#include "kernels/tensor_core_precision.cuh"

namespace convkit::CK_GPU_NS {

inline constexpr int kImplicitGemmExplicitVersion = 1;
inline constexpr int kImplicitGemmSimpleVersion = 2;
inline constexpr int kImplicitGemmTiledVersion = 3;
inline constexpr int kImplicitGemmStagedVersion = 4;
inline constexpr int kImplicitGemmPipelinedVersion = 5;

// Registers the "conv2d_implicit_gemm" family (idempotent).
void register_conv2d_implicit_gemm_family();

// Empty when implicit `version` (2 to 5) can run `d` in `dtype`, else why
// not (a dtype other than float32/float64, an index past 32 bits, a grid too
// big; for version 4 also a plane or stride phase under 32 positions, an
// image patch over its shared memory; for versions 4 and 5 a transposed
// filter over workspace_limit).
// Version 1 is the explicit path, which this file does not run: asking for it
// returns a reason.
std::string conv2d_implicit_gemm_cannot_implement(DType dtype, const Conv2dDesc& d, int version);

// Bytes of workspace `pass` needs under implicit `version` (0 when none):
// backward-data's transposed filter and backward-weights' split-K partials
// (versions 3 to 5), plus 256 bytes of alignment slack per slice. A pure function
// of the descriptor, dtype and version; never above d.workspace_limit.
std::size_t conv2d_implicit_gemm_workspace_bytes(DType dtype, const Conv2dDesc& d, ConvPass pass, int version);

// The split-K slices version 3, 4 or 5 cuts backward-weights' K = N*P*Q into
// (1: no second pass). Fixed by the descriptor, dtype and version, so results
// are the same bits on every run.
int conv2d_implicit_gemm_weight_slices(DType dtype, const Conv2dDesc& d, int version);

// y = conv(x, w) (+ b when b is not null). Overwrites y.
void launch_conv2d_implicit_gemm_forward(DType dtype, const Conv2dDesc& d, const void* x, const void* w,
                                         const void* b, void* y, int version);
// dx = the gradient of <y, dy> with respect to x. Overwrites dx.
void launch_conv2d_implicit_gemm_backward_data(DType dtype, const Conv2dDesc& d, const void* dy, const void* w,
                                               void* dx, void* workspace, int version);
// dw = the gradient of <y, dy> with respect to w (the bias gradient is the
// caller's: kernels/bias_gradient.cuh). Overwrites dw.
void launch_conv2d_implicit_gemm_backward_weights(DType dtype, const Conv2dDesc& d, const void* x, const void* dy,
                                                  void* dw, void* workspace, int version);

// Version 5's loaders, pipeline and tiles with each warp's product on the
// tensor cores (mma.sync in `precision`), float32 only: what
// conv2d_implicit_gemm_tensor_core's version 3 runs. The same descriptors as
// version 5 (conv2d_implicit_gemm_cannot_implement(float32, d, 5)), the same
// workspace and split-K slices; the caller checks both.
void launch_conv2d_implicit_gemm_pipelined_mma_forward(TensorCorePrecision precision, const Conv2dDesc& d,
                                                       const void* x, const void* w, const void* b, void* y);
void launch_conv2d_implicit_gemm_pipelined_mma_backward_data(TensorCorePrecision precision, const Conv2dDesc& d,
                                                             const void* dy, const void* w, void* dx,
                                                             void* workspace);
void launch_conv2d_implicit_gemm_pipelined_mma_backward_weights(TensorCorePrecision precision, const Conv2dDesc& d,
                                                                const void* x, const void* dy, void* dw,
                                                                void* workspace);


// The tensor-core family's version 4 (kernels/conv2d_implicit_gemm_channels_last.cuh):
// every pass on channels-last copies of its operands (forward and
// backward-data also copy the filter taps-major), which the workspace
// holds (16-byte aligned), followed in backward-weights by the split-K
// partials. Why it cannot run d beyond the index limits of every tiled
// kernel (empty when it can: forward's and backward-data's copies fit 32-bit
// indices and workspace_limit; where backward-weights' do not, that pass
// runs version 3's, with its workspace and slices), the workspace of a pass,
// and backward-weights' slices.
std::string conv2d_implicit_gemm_channels_last_cannot_implement(const Conv2dDesc& d);
std::size_t conv2d_implicit_gemm_channels_last_workspace_bytes(const Conv2dDesc& d, ConvPass pass);
int conv2d_implicit_gemm_channels_last_weight_slices(const Conv2dDesc& d);
// Which instruction multiplies the stages: mma.sync (version 4) or, in
// tf32, wgmma (version 5, sm_90a; in bf16 it runs version 4's kernels).
// Version 5's copies, workspace and split-K are version 4's.
enum class ChannelsLastProduct { mma_sync, wgmma };
// Why version 5 cannot run here beyond what version 4 cannot: no wgmma on
// this device or build, or too little shared memory.
std::string conv2d_implicit_gemm_channels_last_wgmma_cannot_implement();
// The rows of version 5's forward and backward-data tile for an M x cols
// product over `groups`: 128 (two warpgroups) or 64 (one), whichever gives
// the busiest SM fewer rows of 128 columns to multiply when the blocks are
// dealt out in waves of kSmCount; 128 on a tie (it reads each operand
// element for twice the products). Where 128 x 128 tiles fill the GPU in
// whole waves that is 128; where they leave SMs idle (resnet18-cifar's
// layer4: 64 blocks of 128 x 128) or leave a last wave part-full, 64.
int conv2d_implicit_gemm_wgmma_tile_rows(std::int64_t M, std::int64_t cols, std::int64_t groups);
void launch_conv2d_implicit_gemm_channels_last_mma_forward(TensorCorePrecision precision, const Conv2dDesc& d,
                                                           const void* x, const void* w, const void* b, void* y,
                                                           void* workspace, ChannelsLastProduct product);
void launch_conv2d_implicit_gemm_channels_last_mma_backward_data(TensorCorePrecision precision, const Conv2dDesc& d,
                                                                 const void* dy, const void* w, void* dx,
                                                                 void* workspace, ChannelsLastProduct product);
void launch_conv2d_implicit_gemm_channels_last_mma_backward_weights(TensorCorePrecision precision,
                                                                    const Conv2dDesc& d, const void* x,
                                                                    const void* dy, void* dw, void* workspace,
                                                                    ChannelsLastProduct product);

}  // namespace convkit::CK_GPU_NS
