// The op table's elementwise entries: every UnaryOp and BinaryOp of
// kernel_params.h, through its public op where there is one, plus where and
// the activations. References are the formulas in double, written here
// independently of elementwise_math.h.
#include <algorithm>
#include <cmath>

#include "ops/op_info.h"

namespace convkit::testing {

namespace {

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

OpInfo unary(std::string name, std::function<Tensor(const Tensor&)> op, std::function<double(double)> ref,
             double lo, double hi, std::vector<double> kinks = {}) {
  OpInfo info;
  info.name = std::move(name);
  info.op = [op = std::move(op)](const std::vector<Tensor>& in) { return op(in[0]); };
  info.reference = unary_reference(std::move(ref));
  info.samples = [lo, hi, kinks](std::mt19937_64& rng) { return unary_samples(rng, lo, hi, kinks); };
  return info;
}

OpInfo binary(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> op,
              std::function<double(double, double)> ref, double lo, double hi) {
  OpInfo info;
  info.name = std::move(name);
  info.op = [op = std::move(op)](const std::vector<Tensor>& in) { return op(in[0], in[1]); };
  info.reference = binary_reference(std::move(ref));
  info.samples = [lo, hi](std::mt19937_64& rng) { return binary_samples(rng, lo, hi); };
  return info;
}

// Comparisons see ties only when values repeat: inputs on a grid of 0.5.
OpInfo comparison(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> op,
                  std::function<bool(double, double)> ref) {
  OpInfo info = binary(std::move(name), std::move(op), [ref](double a, double b) { return ref(a, b) ? 1.0 : 0.0; }, -2, 2);
  info.samples = [](std::mt19937_64& rng) {
    std::vector<Sample> samples = binary_samples(rng, -2, 2);
    for (Sample& s : samples)
      for (Tensor& t : s.inputs) {
        std::vector<double> v = t.to_vector<double>();
        for (double& e : v) e = std::round(e * 2) / 2;
        t = from_vector(v, t.shape(), TensorOptions().dtype(DType::float64));
      }
    return samples;
  };
  info.gradcheck = false;  // no gradient
  return info;
}

// The UnaryOps no public op runs (kept for the backends' own use): the
// backend method itself, forward only.
OpInfo kernel_unary(std::string name, UnaryOp kernel, double a, std::function<double(double)> ref, double lo,
                    double hi) {
  OpInfo info = unary(std::move(name), [kernel, a](const Tensor& x) {
    Tensor out = empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
    if (out.numel() > 0) backend_for(x.device()).unary(kernel, x, out, a, 0);
    return out;
  }, std::move(ref), lo, hi);
  info.gradcheck = false;
  return info;
}

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }

}  // namespace

std::vector<OpInfo> elementwise_op_infos() {
  std::vector<OpInfo> t = {
      // ---- unary
      unary("copy", [](const Tensor& x) { return x.clone(); }, [](double v) { return v; }, -2, 2),
      unary("neg", [](const Tensor& x) { return -x; }, [](double v) { return -v; }, -2, 2),
      unary("exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }, -2, 2),
      unary("log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 0.2, 3),
      unary("sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.2, 3),
      kernel_unary("rsqrt", UnaryOp::rsqrt, 0, [](double v) { return 1 / std::sqrt(v); }, 0.2, 3),
      unary("abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::abs(v); }, -2, 2, {0}),
      kernel_unary("sign", UnaryOp::sign, 0, [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }, -2, 2),
      unary("square", [](const Tensor& x) { return square(x); }, [](double v) { return v * v; }, -2, 2),
      kernel_unary("reciprocal", UnaryOp::reciprocal, 0, [](double v) { return 1 / v; }, 0.5, 2),
      unary("relu", [](const Tensor& x) { return relu(x); }, [](double v) { return std::max(v, 0.0); }, -1, 1, {0}),
      unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_ref, -3, 3),
      unary("tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, -3, 3),
      unary("add_scalar", [](const Tensor& x) { return x + 1.5; }, [](double v) { return v + 1.5; }, -2, 2),
      unary("mul_scalar", [](const Tensor& x) { return x * -3.0; }, [](double v) { return v * -3; }, -2, 2),
      unary("pow_scalar", [](const Tensor& x) { return pow(x, 2.5); }, [](double v) { return std::pow(v, 2.5); }, 0.2, 2),
      unary("pow_scalar 2", [](const Tensor& x) { return pow(x, 2.0); }, [](double v) { return v * v; }, -2, 2),
      unary("rsub_scalar", [](const Tensor& x) { return 1.5 - x; }, [](double v) { return 1.5 - v; }, -2, 2),
      unary("rdiv_scalar", [](const Tensor& x) { return 2.0 / x; }, [](double v) { return 2 / v; }, 0.5, 2),
      unary("clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.5); },
            [](double v) { return std::min(std::max(v, -0.5), 0.5); }, -1, 1, {-0.5, 0.5}),
      unary("leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); },
            [](double v) { return v > 0 ? v : 0.2 * v; }, -3, 3, {0}),
      unary("elu", [](const Tensor& x) { return elu(x, 0.7); },
            [](double v) { return v > 0 ? v : 0.7 * (std::exp(v) - 1); }, -3, 3, {0}),
      unary("silu", [](const Tensor& x) { return silu(x); }, [](double v) { return v / (1 + std::exp(-v)); }, -4, 4),
      kernel_unary("gt_scalar", UnaryOp::gt_scalar, 0.25, [](double v) { return v > 0.25 ? 1.0 : 0.0; }, -1, 1),
      // ---- binary
      binary("add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, -2, 2),
      binary("add alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, -0.5); },
             [](double a, double b) { return a - 0.5 * b; }, -2, 2),
      binary("sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }, -2, 2),
      binary("mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, -2, 2),
      binary("div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, 0.5, 2),
      binary("pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
             [](double a, double b) { return std::pow(a, b); }, 0.5, 2),
      binary("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
             [](double a, double b) { return std::max(a, b); }, -2, 2),
      binary("minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
             [](double a, double b) { return std::min(a, b); }, -2, 2),
      comparison("eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double a, double b) { return a == b; }),
      comparison("ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double a, double b) { return a != b; }),
      comparison("lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double a, double b) { return a < b; }),
      comparison("le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double a, double b) { return a <= b; }),
      comparison("gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double a, double b) { return a > b; }),
      comparison("ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double a, double b) { return a >= b; }),
  };
  // Kernels reached through another op's gradient: abs's multiplies by
  // sign(x), relu's backward is relu_grad.
  for (OpInfo& info : t) {
    if (info.name == "abs") info.also_covers = {"sign"};
    if (info.name == "relu") info.also_covers = {"relu_grad"};
  }

  // where(c > 0, a, b): differentiable in a and b, broadcast over all three.
  OpInfo where_info;
  where_info.name = "where";
  where_info.op = [](const std::vector<Tensor>& in) {
    return where(gt(in[0], zeros({}, TensorOptions().dtype(in[0].dtype()).device(in[0].device()))), in[1], in[2]);
  };
  where_info.reference = [](const std::vector<Values>& in) {
    const Shape shape = broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape, "where"), in[2].shape, "where");
    Values out{shape, {}};
    for (std::int64_t i = 0; i < shape.numel(); ++i) {
      const auto idx = unravel(i, shape);
      auto at = [&](const Values& v) { return v.v[static_cast<std::size_t>(broadcast_index(idx, v.shape))]; };
      out.v.push_back(at(in[0]) > 0 ? at(in[1]) : at(in[2]));
    }
    return out;
  };
  where_info.samples = [](std::mt19937_64& rng) {
    auto in = [&](const Shape& c, const Shape& a, const Shape& b) {
      return std::vector<Tensor>{values_in(c, rng, -1, 1, {0}), values_in(a, rng, -2, 2), values_in(b, rng, -2, 2)};
    };
    return std::vector<Sample>{{"same [2, 3]", in({2, 3}, {2, 3}, {2, 3}), {}},
                               {"broadcast [2, 3] [3] [2, 1]", in({2, 3}, {3}, {2, 1}), {}},
                               {"batch 1 [1, 4]", in({1, 4}, {1, 4}, {}), {}},
                               {"strided [3, 4]", in({3, 4}, {3, 4}, {3, 4}), strided}};
  };
  t.push_back(where_info);
  return t;
}

}  // namespace convkit::testing
