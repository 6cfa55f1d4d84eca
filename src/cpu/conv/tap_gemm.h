#pragma once
// Implicit-GEMM ("tap") kernels for stride-1 float32 convolutions: the GEMMs
// of im2col_gemm without the column matrix.
//
// At stride 1, row (c, r, s) of an image's column matrix, restricted to one
// output row p, is a contiguous run of the zero-padded image:
//   col[(c*R + r)*S + s][p*Q + q] = xpad[c][p + r*dh][q + s*dw],   q = 0..Q-1.
// So a GEMM micro-kernel can load its "B panel" straight from the padded
// image at a fixed offset per tap (c, r, s) instead of from a packed copy of
// col. Nothing of size C*R*S x P*Q is ever written or read: for a first layer
// (C = 3) forming and packing col costs as much as the product itself.
//
//   forward           y[k][p][q]  = b[k] + sum_{c,r,s} w[k][c][r][s] * xpad[c][p + r*dh][q + s*dw]
//   backward-data     dx[c][h][w] = sum_{k,r,s} wflip[c][k][r][s] * dypad[k][h + r*dh][w + s*dw]
//                     with wflip[c][k][r][s] = w[k][c][R-1-r][S-1-s] and dy padded by
//                     (R-1)*dh - pad_top above and (S-1)*dw - pad_left on the left:
//                     a forward pass of the same kernel, channels swapped.
//   backward-weights  dw[k][c][r][s] += sum_{p,q} dy[k][p][q] * xpad[c][p + r*dh][q + s*dw]
//
// The micro-kernels are AVX2 + FMA (8 floats per register), with a 32-column
// AVX-512 forward tile in the AVX-512 copy, and exist in the AVX2 and AVX-512
// copies of the cpu backend (docs/cpu-isa.md; tap_gemm_compiled()): on the
// baseline copy im2col_gemm falls back to its Eigen twin, and the tests
// check each against the other. These declarations forward to the copy that
// runs (isa_dispatch.cpp); within a copy, its own (cpu/isa_entry_points.h).
#include <cstdint>

#include "convkit/backend/conv_desc.h"

namespace convkit::cpu {

// True when this build has the AVX2 + FMA micro-kernels.
bool tap_gemm_compiled();
// Whether the tap kernels compute `d` (stride 1, any padding, dilation and
// groups), given the build has them.
bool tap_gemm_shape(const Conv2dDesc& d);

// Floats of per-image scratch a pass needs (the padded image, or for
// backward-data the padded output gradient).
std::int64_t tap_gemm_scratch_floats(const Conv2dDesc& d, ConvPass pass);
// Floats of the flipped filters backward-data needs once per call.
std::int64_t tap_gemm_flipped_filter_floats(const Conv2dDesc& d);
// wflip (groups x C/groups x K/groups x R x S) from w (K x C/groups x R x S).
void tap_gemm_flip_filters(const Conv2dDesc& d, const float* w, float* wflip);

// One image each. `scratch` holds tap_gemm_scratch_floats(d, pass) floats;
// with `parallel`, output rows (or filter blocks) are split over threads.
void tap_gemm_forward_image(const Conv2dDesc& d, const float* x_image, const float* w, const float* b,
                            float* y_image, float* scratch, bool parallel);
void tap_gemm_backward_data_image(const Conv2dDesc& d, const float* dy_image, const float* wflip,
                                  float* dx_image, float* scratch, bool parallel);
// out[o * out_stride + q] = sum over t < taps of a[o * taps + t] * b[offsets[t] + q]
// for o < rows and q < cols, on the calling thread: the forward tiles as a
// plain product whose B operand is read in place, without packing (winograd's
// per-point products U[xi] * V[xi]). b is read up to kTapGemmOverread floats
// past each offsets[t] + cols; out is written only within its cols.
void tap_gemm_multiply(const float* a, std::int64_t rows, const std::int64_t* offsets, std::int64_t taps,
                       const float* b, std::int64_t cols, float* out, std::int64_t out_stride);
constexpr std::int64_t kTapGemmOverread = 15;

// Adds this image's filter gradient to dw.
void tap_gemm_backward_weights_image(const Conv2dDesc& d, const float* x_image, const float* dy_image,
                                     float* dw, float* scratch, bool parallel);

}  // namespace convkit::cpu
