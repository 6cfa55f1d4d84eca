// Max and average pooling: resolve the window and output size (PyTorch's
// rules), run the backend kernel on a contiguous input, record the backward.
#include "convkit/ops/pool.h"
#include "core/op_scope.h"

#include "convkit/ops/reduce.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using V = std::vector<Tensor>;

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// PyTorch's pooling_output_shape: with ceil_mode the last window may hang over
// the bottom/right edge, but it must start inside the input or the left padding.
std::int64_t pooled_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, bool ceil_mode) {
  std::int64_t out = floor_div(in + 2 * p - k + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct ResolvedPool {
  PoolWindow window;
  Shape out_shape;
};

ResolvedPool resolve(const char* op, const Tensor& x, const Pool2dParams& params) {
  detail::check_floating(op, x);
  CK_CHECK(x.dim() == 4, op, ": expected an NCHW input of 4 dims, got shape ", x.shape());
  const auto& k = params.kernel_;
  const auto& p = params.padding_;
  const std::array<std::int64_t, 2> s{params.stride_[0] == 0 ? k[0] : params.stride_[0],
                                      params.stride_[1] == 0 ? k[1] : params.stride_[1]};
  CK_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel size must be positive, got ", k[0], "x", k[1]);
  CK_CHECK(s[0] > 0 && s[1] > 0, op, ": stride must be positive (or 0 for the kernel size), got ",
           params.stride_[0], "x", params.stride_[1]);
  CK_CHECK(p[0] >= 0 && p[1] >= 0, op, ": padding must be non-negative, got ", p[0], "x", p[1]);
  CK_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op, ": padding ", p[0], "x", p[1],
           " must be at most half the kernel size ", k[0], "x", k[1]);
  const std::int64_t H = x.size(2), W = x.size(3);
  const std::int64_t OH = pooled_size(H, k[0], s[0], p[0], params.ceil_mode_);
  const std::int64_t OW = pooled_size(W, k[1], s[1], p[1], params.ceil_mode_);
  CK_CHECK(OH >= 1 && OW >= 1, op, ": input ", x.shape(), " is too small for kernel ", k[0], "x",
           k[1], ", stride ", s[0], "x", s[1], ", padding ", p[0], "x", p[1], " (output would be ",
           OH, "x", OW, ")");
  PoolWindow w;
  w.kernel_h = k[0];
  w.kernel_w = k[1];
  w.stride_h = s[0];
  w.stride_w = s[1];
  w.pad_h = p[0];
  w.pad_w = p[1];
  w.count_include_pad = params.count_include_pad_;
  return {w, Shape{x.size(0), x.size(1), OH, OW}};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dParams& params) {
  const detail::OpScope op_scope("max_pool2d");
  const ResolvedPool r = resolve("max_pool2d", x, params);
  Tensor out = detail::new_empty(r.out_shape, x);
  const Tensor argmax = detail::new_empty(r.out_shape, x, DType::int64);
  if (out.numel() > 0) detail::backend_of(x).max_pool2d_forward(x.detach().contiguous(), out, argmax, r.window);
  // argmax is private to this node, so it needs no SavedTensor version check.
  return record(out, "MaxPool2dBackward", {x}, [argmax, window = r.window, in_shape = x.shape()](const Tensor& g) {
    Tensor grad_in = detail::new_empty(in_shape, g);
    if (grad_in.numel() > 0)
      detail::backend_of(g).max_pool2d_backward(g.contiguous(), argmax, grad_in, window);
    return V{grad_in};
  });
}

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& params) {
  const detail::OpScope op_scope("avg_pool2d");
  const ResolvedPool r = resolve("avg_pool2d", x, params);
  Tensor out = detail::new_empty(r.out_shape, x);
  if (out.numel() > 0) detail::backend_of(x).avg_pool2d_forward(x.detach().contiguous(), out, r.window);
  return record(out, "AvgPool2dBackward", {x}, [window = r.window, in_shape = x.shape()](const Tensor& g) {
    Tensor grad_in = detail::new_empty(in_shape, g);
    if (grad_in.numel() > 0) detail::backend_of(g).avg_pool2d_backward(g.contiguous(), grad_in, window);
    return V{grad_in};
  });
}

Tensor global_avg_pool2d(const Tensor& x) {
  detail::check_floating("global_avg_pool2d", x);
  CK_CHECK(x.dim() == 4, "global_avg_pool2d: expected an NCHW input of 4 dims, got shape ", x.shape());
  CK_CHECK(x.size(2) > 0 && x.size(3) > 0, "global_avg_pool2d: empty spatial size in shape ", x.shape());
  return mean(x, {2, 3}, true);
}

}  // namespace convkit
