// Activations beyond those in elementwise.h: leaky_relu, elu and silu (backend
// unary kernels with hand-written backwards), softmax and log_softmax (a
// dedicated stable kernel along any dim).
#include "convkit/ops/elementwise.h"
#include "core/op_scope.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/nn_functional.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using V = std::vector<Tensor>;

namespace {

Tensor unary(UnaryOp op, const char* name, const Tensor& x, double a) {
  const detail::OpScope op_scope(name);
  detail::check_floating(name, x);
  Tensor out = detail::new_empty(x.shape(), x);
  if (out.numel() > 0) detail::backend_of(x).unary(op, x, out, a, 0);
  return out;
}

Tensor positive(const Tensor& x) {
  return gt(x, zeros({}, TensorOptions().dtype(x.dtype()).device(x.device())));
}

Tensor softmax_impl(const Tensor& x, std::int64_t dim, bool log, const char* name) {
  const detail::OpScope op_scope(name);
  detail::check_floating(name, x);
  CK_CHECK(x.dim() >= 1, name, ": expected a tensor with at least 1 dim, got a scalar");
  const std::int64_t d = wrap_dim(dim, x.dim(), name);
  Tensor out = detail::new_empty(x.shape(), x);
  if (out.numel() > 0) detail::backend_of(x).softmax_forward(x.detach().contiguous(), d, log, out);
  return record(out, log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x},
                [so = SavedTensor(out.detach()), d, log](const Tensor& g) {
                  const Tensor& y = so.get();
                  Tensor grad_in = detail::new_empty(y.shape(), y);
                  if (y.numel() > 0) detail::backend_of(y).softmax_backward(g.contiguous(), y, d, log, grad_in);
                  return V{grad_in};
                });
}

}  // namespace

// Gradient 1 for x > 0 and negative_slope otherwise (at 0 too, as torch).
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  Tensor out = unary(UnaryOp::leaky_relu, "leaky_relu", x, negative_slope);
  return record(out, "LeakyReluBackward", {x}, [sx = SavedTensor(x), negative_slope](const Tensor& g) {
    return V{where(positive(sx.get()), g, mul_scalar(g, negative_slope))};
  });
}

// Gradient 1 for x > 0, else alpha * exp(x) = out + alpha.
Tensor elu(const Tensor& x, double alpha) {
  Tensor out = unary(UnaryOp::elu, "elu", x, alpha);
  return record(out, "EluBackward", {x},
                [sx = SavedTensor(x), so = SavedTensor(out.detach()), alpha](const Tensor& g) {
                  return V{where(positive(sx.get()), g, mul(g, add_scalar(so.get(), alpha)))};
                });
}

// Gradient s * (1 + x * (1 - s)) with s = sigmoid(x).
Tensor silu(const Tensor& x) {
  Tensor out = unary(UnaryOp::silu, "silu", x, 0);
  return record(out, "SiluBackward", {x}, [sx = SavedTensor(x)](const Tensor& g) {
    const Tensor& v = sx.get();
    const Tensor s = sigmoid(v);
    return V{mul(g, mul(s, add_scalar(mul(v, 1.0 - s), 1.0)))};
  });
}

Tensor softmax(const Tensor& x, std::int64_t dim) { return softmax_impl(x, dim, false, "softmax"); }
Tensor log_softmax(const Tensor& x, std::int64_t dim) { return softmax_impl(x, dim, true, "log_softmax"); }

}  // namespace convkit
