#pragma once
// 2-D convolution, NCHW, with a choice of algorithm per call.
#include <array>
#include <cstdint>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/tensor.h"

namespace convkit {

// Chained setters, as libtorch's functional options:
//   conv2d(x, w, b, Conv2dParams().stride(2).padding(1).algo(ConvAlgo::fft))
struct Conv2dParams {
  std::array<std::int64_t, 2> stride_{1, 1};
  std::array<std::int64_t, 4> padding_{0, 0, 0, 0};  // top, bottom, left, right
  bool same_ = false;                                 // 'same': output size = ceil(input / stride)
  std::array<std::int64_t, 2> dilation_{1, 1};
  std::int64_t groups_ = 1;
  ConvAlgo algo_ = ConvAlgo::automatic;
  std::size_t workspace_limit_ = std::size_t{256} << 20;

  Conv2dParams& stride(std::int64_t s) { stride_ = {s, s}; return *this; }
  Conv2dParams& stride(std::int64_t sh, std::int64_t sw) { stride_ = {sh, sw}; return *this; }
  Conv2dParams& padding(std::int64_t p) { padding_ = {p, p, p, p}; same_ = false; return *this; }
  Conv2dParams& padding(std::int64_t ph, std::int64_t pw) { padding_ = {ph, ph, pw, pw}; same_ = false; return *this; }
  Conv2dParams& padding(std::int64_t top, std::int64_t bottom, std::int64_t left, std::int64_t right) {
    padding_ = {top, bottom, left, right};
    same_ = false;
    return *this;
  }
  // TensorFlow/Keras 'same': the total padding is split with the extra pixel at the bottom/right.
  Conv2dParams& padding_same() { same_ = true; return *this; }
  Conv2dParams& dilation(std::int64_t d) { dilation_ = {d, d}; return *this; }
  Conv2dParams& dilation(std::int64_t dh, std::int64_t dw) { dilation_ = {dh, dw}; return *this; }
  Conv2dParams& groups(std::int64_t g) { groups_ = g; return *this; }
  Conv2dParams& algo(ConvAlgo a) { algo_ = a; return *this; }
  Conv2dParams& workspace_limit(std::size_t bytes) { workspace_limit_ = bytes; return *this; }
};

// x: [N, C, H, W], w: [K, C/groups, R, S], b: [K] or undefined. Differentiable
// in x, w and b, by the same algorithm as the forward pass.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
              const Conv2dParams& params = {});

// The descriptor conv2d builds for these arguments (padding 'same' resolved).
Conv2dDesc make_conv2d_desc(const Shape& x, const Shape& w, const Conv2dParams& params);

}  // namespace convkit
