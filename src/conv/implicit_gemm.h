#pragma once
// The matrix products of im2col + GEMM, per image and group:
//
//   forward           y[n, g]  = w[g] * col(x[n])[g]             (Kg x plane) = (Kg x depth) (depth x plane)
//   backward-data     dcol[n, g] = w[g]^T * dy[n, g]              (depth x plane) = (depth x Kg) (Kg x plane)
//   backward-weights  dw[g]   += dy[n, g] * col(x[n])[g]^T        (Kg x depth) = (Kg x plane) (plane x depth)
//
// with w[g] group g's Kg x Cg*R*S filter matrix, dy[n, g] its Kg x P*Q block
// of the output (gradient) and col(x[n])[g] its Cg*R*S x P*Q block of image
// n's column matrix. A 1x1, stride-1, unpadded convolution needs no im2col:
// the image itself (C x H*W) is its column matrix. The cpu and gpu
// im2col_gemm algorithms both plan with this shape.
#include <cstdint>

#include "convkit/backend/conv_desc.h"

namespace convkit::conv {

// M x N x K of one product: C (M x N) = A (M x K) * B (K x N).
struct GemmDims {
  std::int64_t M = 0, N = 0, K = 0;
};

struct GemmShape {
  std::int64_t N, C, K, groups, Cg, Kg;
  std::int64_t image;  // C*H*W: elements of one input image
  std::int64_t plane;  // P*Q: columns of every matrix product
  std::int64_t depth;  // Cg*R*S: rows of one group's column block
  bool image_is_col;   // 1x1, stride 1, no padding: skip im2col

  explicit GemmShape(const Conv2dDesc& d)
      : N(d.N), C(d.C), K(d.K), groups(d.groups), Cg(d.C_per_group()), Kg(d.K_per_group()),
        image(d.C * d.H * d.W), plane(d.P() * d.Q()), depth(d.C_per_group() * d.R * d.S),
        image_is_col(d.R == 1 && d.S == 1 && d.stride_h == 1 && d.stride_w == 1 && d.pad_top == 0 &&
                     d.pad_bottom == 0 && d.pad_left == 0 && d.pad_right == 0) {}
  // Elements of one image's column matrix (0 when the image is its own).
  std::int64_t col_elems() const { return image_is_col ? 0 : groups * depth * plane; }
  // Distance between consecutive images' column matrices, wherever they live.
  std::int64_t col_stride() const { return image_is_col ? image : groups * depth * plane; }
  std::int64_t dw_elems() const { return K * depth; }

  // One group's product in `pass` (see the table above).
  GemmDims dims(ConvPass pass) const {
    switch (pass) {
      case ConvPass::forward: return {Kg, plane, depth};
      case ConvPass::backward_data: return {depth, plane, Kg};
      case ConvPass::backward_weights: return {Kg, depth, plane};
    }
    return {};
  }
};

}  // namespace convkit::conv
