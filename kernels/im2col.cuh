#pragma once
// Launchers of the im2col+GEMM convolution's data-movement kernels
// (kernels/im2col.cu). Every pointer is a device pointer of the given dtype
// (float32 or float64) to contiguous data laid out as in Conv2dDesc: images
// NCHW, outputs NKPQ. Groups are the caller's business: the column matrix of
// an image holds every channel, and group g's rows are a contiguous block.
#include <cstdint>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Registers the "im2col" kernel family (one version; idempotent).
void register_im2col_family();

// im2col and col2im index with 32-bit integers when every index fits, else
// 64-bit; tests force the 64-bit path, which real sizes reach only past 2^30
// elements. Not thread-safe against concurrent launches.
void im2col_force_64_bit_indices(bool force);

// col[n] = the (C*R*S) x (P*Q) column matrix of image x[n], for n < images:
// col[n][(c*R + r)*S + s][p*Q + q] = x[n][c][p*sh + r*dh - pad_top][q*sw + s*dw - pad_left],
// 0 where that falls in the padding.
void launch_im2col(DType dtype, const Conv2dDesc& d, const void* x, std::int64_t images, void* col);

// The adjoint: dx[n][c][h][w] = sum of the column entries that im2col copied
// from (c, h, w), for n < images. Overwrites dx (no accumulation into it).
void launch_col2im(DType dtype, const Conv2dDesc& d, const void* col, std::int64_t images, void* dx);

// y[n][k][i] = bias[k] for n < images, k < K, i < plane.
void launch_bias_fill(DType dtype, const void* bias, std::int64_t images, std::int64_t K, std::int64_t plane,
                      void* y);

// out[i] = sum over s < slices, in order, of in[s * n + i], for i < n.
void launch_sum_slices(DType dtype, const void* in, std::int64_t slices, std::int64_t n, void* out);

}  // namespace convkit::CK_GPU_NS
