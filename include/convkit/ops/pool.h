#pragma once
// Max and average pooling over NCHW tensors.
#include <array>
#include <cstdint>

#include "convkit/core/tensor.h"

namespace convkit {

struct Pool2dParams {
  std::array<std::int64_t, 2> kernel_{2, 2};
  std::array<std::int64_t, 2> stride_{0, 0};   // 0 = same as the kernel (PyTorch's default)
  std::array<std::int64_t, 2> padding_{0, 0};  // symmetric; at most half the kernel
  bool ceil_mode_ = false;
  bool count_include_pad_ = true;              // avg only, PyTorch's default

  Pool2dParams() = default;
  explicit Pool2dParams(std::int64_t k) : kernel_{k, k} {}
  Pool2dParams(std::int64_t kh, std::int64_t kw) : kernel_{kh, kw} {}
  Pool2dParams& stride(std::int64_t s) { stride_ = {s, s}; return *this; }
  Pool2dParams& stride(std::int64_t sh, std::int64_t sw) { stride_ = {sh, sw}; return *this; }
  Pool2dParams& padding(std::int64_t p) { padding_ = {p, p}; return *this; }
  Pool2dParams& padding(std::int64_t ph, std::int64_t pw) { padding_ = {ph, pw}; return *this; }
  Pool2dParams& ceil_mode(bool c = true) { ceil_mode_ = c; return *this; }
  Pool2dParams& count_include_pad(bool c) { count_include_pad_ = c; return *this; }
};

Tensor max_pool2d(const Tensor& x, const Pool2dParams& params);
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& params);
// Mean over H and W: [N, C, H, W] -> [N, C, 1, 1].
Tensor global_avg_pool2d(const Tensor& x);

}  // namespace convkit
