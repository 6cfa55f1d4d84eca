// In-place ops. Each bumps the storage's version counter so that autograd
// notices when a saved tensor is overwritten. Under grad mode, in-place ops on
// tensors in the graph are differentiable where it is cheap and sound
// (add_, sub_, mul_, div_, relu_); the rest refuse with a clear error.
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using V = std::vector<Tensor>;

void detail::check_inplace(const char* op, const Tensor& self, bool differentiable) {
  detail::check_defined(op, self);
  if (!autograd::grad_enabled() || !self.requires_grad()) return;
  CK_CHECK(!self.is_leaf(), op, ": a leaf tensor of shape ", self.shape(),
           " that requires grad cannot be modified in place; wrap the update in NoGradGuard");
  CK_CHECK(!self.impl()->is_view, op, ": in-place modification of a view (shape ", self.shape(),
           ") of a tensor that requires grad is not supported; use an out-of-place op");
  CK_CHECK(differentiable, op, " is not differentiable in place (tensor of shape ", self.shape(),
           " requires grad); use the out-of-place op");
}

namespace {

// Runs a binary kernel with self as both first input and output.
void binary_into_self(BinaryOp op, const char* name, const Tensor& self, const Tensor& other) {
  detail::check_same(name, self, other);
  detail::check_floating(name, self);
  const Shape shape = broadcast_shapes(self.shape(), other.shape(), name);
  CK_CHECK(shape == self.shape(), name, ": the result shape ", shape,
           " does not fit the in-place target of shape ", self.shape());
  NoGradGuard no_grad;
  detail::backend_of(self).binary(op, self, other.expand(shape), self);
  self.storage()->bump_version();
}

void unary_into_self(UnaryOp op, const Tensor& self, double a = 0, double b = 0) {
  detail::check_floating("in-place op", self);
  detail::backend_of(self).unary(op, self, self, a, b);
  self.storage()->bump_version();
}

}  // namespace

Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::fill_(double value) {
  detail::check_inplace("fill_", *this, false);
  if (numel()) detail::backend_of(*this).fill(*this, value);
  storage()->bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  detail::check_inplace("copy_", *this, false);
  detail::check_defined("copy_", src, "source");
  CK_CHECK(!autograd::grad_enabled() || !src.requires_grad(), "copy_: the source of shape ",
           src.shape(), " requires grad but copy_ is not differentiable; use clone() or to()");
  NoGradGuard no_grad;
  Tensor s = src.device() == device() ? src : src.to(device());
  s = s.expand(broadcast_shapes(shape(), s.shape(), "copy_"));
  CK_CHECK(s.shape() == shape(), "copy_: source of shape ", src.shape(),
           " cannot be broadcast to the target's shape ", shape());
  if (numel()) detail::backend_of(*this).unary(UnaryOp::copy, s, *this);
  storage()->bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  detail::check_inplace("add_", *this, true);
  const bool recording = autograd::needs_grad({this, &other});
  const Tensor scaled = alpha == 1.0 ? other.detach() : mul_scalar(other.detach(), alpha);
  binary_into_self(BinaryOp::add, "add_", *this, scaled);
  if (recording) {
    record(*this, "AddInplaceBackward", {*this, other}, [sb = other.shape(), alpha](const Tensor& g) {
      return V{g, sum_to(alpha == 1.0 ? g : mul_scalar(g, alpha), sb)};
    });
  }
  return *this;
}

Tensor& Tensor::sub_(const Tensor& other) { return add_(other, -1.0); }

Tensor& Tensor::mul_(const Tensor& other) {
  detail::check_inplace("mul_", *this, true);
  const bool recording = autograd::needs_grad({this, &other});
  const Tensor before = recording ? detach().clone() : Tensor();
  binary_into_self(BinaryOp::mul, "mul_", *this, other);
  if (recording) {
    record(*this, "MulInplaceBackward", {*this, other},
           [sx = SavedTensor(before), sy = SavedTensor(other)](const Tensor& g) {
             return V{mul(g, sy.get()), sum_to(mul(g, sx.get()), sy.get().shape())};
           });
  }
  return *this;
}

Tensor& Tensor::div_(const Tensor& other) {
  detail::check_inplace("div_", *this, true);
  const bool recording = autograd::needs_grad({this, &other});
  binary_into_self(BinaryOp::div, "div_", *this, other);
  if (recording) {
    record(*this, "DivInplaceBackward", {*this, other},
           [sq = SavedTensor(detach()), sy = SavedTensor(other)](const Tensor& g) {
             const Tensor gx = div(g, sy.get());
             return V{gx, sum_to(neg(mul(gx, sq.get())), sy.get().shape())};
           });
  }
  return *this;
}

Tensor& Tensor::add_(double value) {
  detail::check_inplace("add_", *this, true);
  unary_into_self(UnaryOp::add_scalar, *this, value);
  if (autograd::needs_grad({this}))
    record(*this, "AddScalarInplaceBackward", {*this}, [](const Tensor& g) { return V{g}; });
  return *this;
}

Tensor& Tensor::mul_(double value) {
  detail::check_inplace("mul_", *this, true);
  unary_into_self(UnaryOp::mul_scalar, *this, value);
  if (autograd::needs_grad({this}))
    record(*this, "MulScalarInplaceBackward", {*this},
           [value](const Tensor& g) { return V{mul_scalar(g, value)}; });
  return *this;
}

Tensor& Tensor::clamp_(double lo, double hi) {
  detail::check_inplace("clamp_", *this, false);
  CK_CHECK(lo <= hi, "clamp_: lower bound ", lo, " is above upper bound ", hi);
  unary_into_self(UnaryOp::clamp, *this, lo, hi);
  return *this;
}

Tensor& Tensor::relu_() {
  detail::check_inplace("relu_", *this, true);
  unary_into_self(UnaryOp::relu, *this);
  if (autograd::needs_grad({this})) {
    record(*this, "ReluInplaceBackward", {*this},
           [so = SavedTensor(detach())](const Tensor& g) { return V{detail::relu_backward(g, so.get())}; });
  }
  return *this;
}

}  // namespace convkit
