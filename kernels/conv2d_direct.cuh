#pragma once
// Launchers of the direct convolution kernels (kernels/conv2d_direct.cu).
// Buffers are contiguous device buffers laid out as in Conv2dDesc (x NCHW,
// w K x C/groups x R x S, y and dy N x K x P x Q) of one floating dtype.
#include <cstddef>
#include <cstdint>
#include <string>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// A descriptor as plain ints for kernel arguments. Coordinates and sizes fit
// in int (conv_geometry checks); flat offsets are formed in int64.
struct ConvGeometry {
  int N, C, H, W, K, R, S, P, Q;
  int stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  int groups, Cg, Kg;
};

// Throws Error naming the field when a size does not fit the kernels' int coordinates.
ConvGeometry conv_geometry(const Conv2dDesc& desc);

// The "conv2d_direct" kernel family: registers it on first use and returns the
// version to run now (see kernel_versions.h).
int conv2d_direct_version();

// Whether `version` can run `g` in `dtype`; when not, `why` says which limit it
// exceeds (shared memory for the tiles, grid size). Version 1 runs everything.
bool conv2d_direct_can_implement(int version, const ConvGeometry& g, DType dtype, std::string* why);

// Empty when version 5's own backward-data kernel (one dx pixel of every
// channel of its group per thread) runs `g` in `dtype`: groups of at most 4
// input channels whose filters fit 48 KiB of shared memory. Else why not;
// version 5 then runs version 4's backward-data.
std::string direct_narrow_backward_data_cannot(const ConvGeometry& g, DType dtype);

// y = conv(x, w) + b; b may be null.
void launch_conv2d_direct_forward(int version, DType dtype, const ConvGeometry& g, const void* x,
                                  const void* w, const void* b, void* y);
// dx = the gradient of <y, dy> with respect to x (overwritten).
void launch_conv2d_direct_backward_data(int version, DType dtype, const ConvGeometry& g, const void* dy,
                                        const void* w, void* dx);
// Bytes of workspace backward-weights takes under `version` with at most
// workspace_limit bytes: v4's partial dw (0 for one slice), 0 for the others.
std::size_t conv2d_direct_weights_workspace_bytes(int version, DType dtype, const ConvGeometry& g,
                                                  std::size_t workspace_limit);
// dw = the gradient of <y, dy> with respect to w (overwritten). `workspace`
// holds conv2d_direct_weights_workspace_bytes(version, dtype, g,
// workspace_limit) bytes, and may be null where that is 0.
void launch_conv2d_direct_backward_weights(int version, DType dtype, const ConvGeometry& g, const void* x,
                                           const void* dy, void* dw, void* workspace, std::size_t workspace_limit);
}  // namespace convkit::CK_GPU_NS
