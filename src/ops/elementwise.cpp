// Elementwise ops: broadcast, run the backend kernel, record the backward.
#include "convkit/ops/elementwise.h"
#include "core/op_scope.h"

#include "convkit/ops/factory.h"
#include "convkit/ops/reduce.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;
using detail::backend_of;
using V = std::vector<Tensor>;

namespace {

Tensor binary_op(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  const detail::OpScope op_scope(name);
  detail::check_same(name, a, b);
  detail::check_floating(name, a);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = detail::new_empty(shape, a);
  NoGradGuard no_grad;  // the expand views are kernel arguments, not graph nodes
  backend_of(a).binary(op, a.expand(shape), b.expand(shape), out);
  return out;
}

Tensor unary_op(UnaryOp op, const char* name, const Tensor& x, double p0 = 0, double p1 = 0) {
  const detail::OpScope op_scope(name);
  detail::check_floating(name, x);
  Tensor out = detail::new_empty(x.shape(), x);
  backend_of(x).unary(op, x, out, p0, p1);
  return out;
}

}  // namespace

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const std::int64_t lead = grad.dim() - shape.rank();
  std::vector<std::int64_t> dims;
  for (std::int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (shape[static_cast<std::size_t>(d - lead)] == 1 && grad.size(d) != 1)) dims.push_back(d);
  Tensor s = dims.empty() ? grad : sum(grad, dims, true);
  return s.reshape(shape);
}

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = alpha == 1.0 ? binary_op(BinaryOp::add, "add", a, b)
                            : binary_op(BinaryOp::add, "add", a, mul_scalar(b.detach(), alpha));
  const Shape sa = a.shape(), sb = b.shape();
  return record(out, "AddBackward", {a, b}, [sa, sb, alpha](const Tensor& g) {
    return V{sum_to(g, sa), sum_to(alpha == 1.0 ? g : mul_scalar(g, alpha), sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(BinaryOp::sub, "sub", a, b);
  const Shape sa = a.shape(), sb = b.shape();
  return record(out, "SubBackward", {a, b},
                [sa, sb](const Tensor& g) { return V{sum_to(g, sa), sum_to(neg(g), sb)}; });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(BinaryOp::mul, "mul", a, b);
  return record(out, "MulBackward", {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    return V{sum_to(mul(g, y), x.shape()), sum_to(mul(g, x), y.shape())};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(BinaryOp::div, "div", a, b);
  return record(out, "DivBackward", {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    const Tensor gx = div(g, y);
    return V{sum_to(gx, x.shape()), sum_to(neg(mul(gx, div(x, y))), y.shape())};
  });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(BinaryOp::pow, "pow", a, b);
  return record(out, "PowBackward", {a, b},
                [sa = SavedTensor(a), sb = SavedTensor(b), so = SavedTensor(out.detach())](const Tensor& g) {
                  const Tensor& x = sa.get();
                  const Tensor& y = sb.get();
                  const Tensor ga = mul(g, mul(y, pow(x, sub(y, ones_like(y)))));
                  const Tensor gb = mul(g, mul(so.get(), log(x)));
                  return V{sum_to(ga, x.shape()), sum_to(gb, y.shape())};
                });
}

Tensor pow(const Tensor& a, double exponent) {
  Tensor out = unary_op(UnaryOp::pow_scalar, "pow", a, exponent);
  return record(out, "PowScalarBackward", {a}, [sa = SavedTensor(a), exponent](const Tensor& g) {
    return V{mul(g, mul_scalar(pow(sa.get(), exponent - 1), exponent))};
  });
}

namespace {
// max/min: the gradient goes to the chosen input; ties split it evenly, as in torch.
Tensor select_binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  Tensor out = binary_op(op, name, a, b);
  return record(out, name, {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b), op](const Tensor& g) {
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    const Tensor a_wins = op == BinaryOp::maximum ? gt(x, y) : lt(x, y);
    const Tensor tie = mul_scalar(eq(x, y), 0.5);
    const Tensor wa = add(a_wins, tie);
    const Tensor wb = sub(ones_like(wa), wa);
    return V{sum_to(mul(g, wa), x.shape()), sum_to(mul(g, wb), y.shape())};
  });
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return select_binary(BinaryOp::maximum, "MaximumBackward", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return select_binary(BinaryOp::minimum, "MinimumBackward", a, b); }

Tensor add_scalar(const Tensor& a, double s) {
  Tensor out = unary_op(UnaryOp::add_scalar, "add", a, s);
  return record(out, "AddScalarBackward", {a}, [](const Tensor& g) { return V{g}; });
}

Tensor mul_scalar(const Tensor& a, double s) {
  Tensor out = unary_op(UnaryOp::mul_scalar, "mul", a, s);
  return record(out, "MulScalarBackward", {a}, [s](const Tensor& g) { return V{mul_scalar(g, s)}; });
}

Tensor neg(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::neg, "neg", x);
  return record(out, "NegBackward", {x}, [](const Tensor& g) { return V{neg(g)}; });
}

Tensor exp(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::exp, "exp", x);
  return record(out, "ExpBackward", {x},
                [so = SavedTensor(out.detach())](const Tensor& g) { return V{mul(g, so.get())}; });
}

Tensor log(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::log, "log", x);
  return record(out, "LogBackward", {x}, [sx = SavedTensor(x)](const Tensor& g) { return V{div(g, sx.get())}; });
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::sqrt, "sqrt", x);
  return record(out, "SqrtBackward", {x}, [so = SavedTensor(out.detach())](const Tensor& g) {
    return V{div(g, mul_scalar(so.get(), 2.0))};
  });
}

Tensor abs(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::abs, "abs", x);
  return record(out, "AbsBackward", {x}, [sx = SavedTensor(x)](const Tensor& g) {
    return V{mul(g, unary_op(UnaryOp::sign, "sign", sx.get()))};
  });
}

Tensor square(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::square, "square", x);
  return record(out, "SquareBackward", {x},
                [sx = SavedTensor(x)](const Tensor& g) { return V{mul(g, mul_scalar(sx.get(), 2.0))}; });
}

Tensor clamp(const Tensor& x, double lo, double hi) {
  CK_CHECK(lo <= hi, "clamp: lower bound ", lo, " is above upper bound ", hi);
  Tensor out = unary_op(UnaryOp::clamp, "clamp", x, lo, hi);
  return record(out, "ClampBackward", {x}, [sx = SavedTensor(x), lo, hi](const Tensor& g) {
    const Tensor& v = sx.get();
    return V{mul(g, mul(ge(v, full({}, lo, TensorOptions().dtype(v.dtype()).device(v.device()))),
                        le(v, full({}, hi, TensorOptions().dtype(v.dtype()).device(v.device())))))};
  });
}

Tensor detail::relu_backward(const Tensor& g, const Tensor& y) {
  if (autograd::exclusively_owned(g) && g.shape() == y.shape() && g.dtype() == y.dtype()) {
    backend_of(g).binary(BinaryOp::relu_grad, g, y, g);
    return g;
  }
  return binary_op(BinaryOp::relu_grad, "relu_backward", g, y);
}

Tensor relu(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::relu, "relu", x);
  return record(out, "ReluBackward", {x},
                [so = SavedTensor(out.detach())](const Tensor& g) { return V{detail::relu_backward(g, so.get())}; });
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::sigmoid, "sigmoid", x);
  return record(out, "SigmoidBackward", {x}, [so = SavedTensor(out.detach())](const Tensor& g) {
    const Tensor& s = so.get();
    return V{mul(g, mul(s, unary_op(UnaryOp::rsub_scalar, "sigmoid", s, 1.0)))};
  });
}

Tensor tanh(const Tensor& x) {
  Tensor out = unary_op(UnaryOp::tanh, "tanh", x);
  return record(out, "TanhBackward", {x}, [so = SavedTensor(out.detach())](const Tensor& g) {
    return V{mul(g, unary_op(UnaryOp::rsub_scalar, "tanh", square(so.get()), 1.0))};
  });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const detail::OpScope op_scope("where");
  detail::check_same("where", a, b);
  detail::check_defined("where", cond, "condition");
  CK_CHECK(cond.device() == a.device(), "where: condition is on ", cond.device(), " but values are on ", a.device());
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = detail::new_empty(shape, a);
  {
    NoGradGuard no_grad;
    backend_of(a).where(cond.expand(shape), a.expand(shape), b.expand(shape), out);
  }
  return record(out, "WhereBackward", {a, b}, [sc = SavedTensor(cond), sa = a.shape(), sb = b.shape()](const Tensor& g) {
    const Tensor zero = zeros({}, TensorOptions().dtype(g.dtype()).device(g.device()));
    return V{sum_to(where(sc.get(), g, zero), sa), sum_to(where(sc.get(), zero, g), sb)};
  });
}

Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::eq, "eq", a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ne, "ne", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::lt, "lt", a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::le, "le", a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::gt, "gt", a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ge, "ge", a, b); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, double s) { return add_scalar(a, s); }
Tensor operator+(double s, const Tensor& a) { return add_scalar(a, s); }
Tensor operator-(const Tensor& a, double s) { return add_scalar(a, -s); }
Tensor operator-(double s, const Tensor& a) { return add_scalar(neg(a), s); }
Tensor operator*(const Tensor& a, double s) { return mul_scalar(a, s); }
Tensor operator*(double s, const Tensor& a) { return mul_scalar(a, s); }
Tensor operator/(const Tensor& a, double s) { return mul_scalar(a, 1.0 / s); }
Tensor operator/(double s, const Tensor& a) {
  Tensor out = unary_op(UnaryOp::rdiv_scalar, "div", a, s);
  return record(out, "RdivBackward", {a}, [sa = SavedTensor(a), s](const Tensor& g) {
    return V{neg(mul_scalar(div(g, square(sa.get())), s))};
  });
}

}  // namespace convkit
