#include "convkit/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "convkit/autograd/grad_mode.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/factory.h"
#include "convkit/ops/reduce.h"

namespace convkit::autograd {

namespace {

// <fn(inputs), v> evaluated without recording, in float64.
double projected(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                 const std::vector<Tensor>& inputs, const std::vector<double>& v) {
  NoGradGuard no_grad;
  const std::vector<double> out = fn(inputs).to_vector<double>();
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out[i] * v[i];
  return s;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs_in, GradcheckOptions opts) {
  // Private copies: finite differences perturb the inputs in place.
  std::vector<Tensor> inputs;
  for (const Tensor& t : inputs_in) {
    Tensor c = t.detach().clone();
    if (t.requires_grad()) c.requires_grad_(true);
    inputs.push_back(c);
  }

  Tensor out = fn(inputs);
  CK_CHECK(out.requires_grad(), "gradcheck: the function's output does not require grad; "
           "mark at least one input with requires_grad");
  // A fixed random projection turns the Jacobian into one vector-Jacobian product.
  std::vector<double> v(static_cast<std::size_t>(out.numel()));
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (double& x : v) {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    x = static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
  out.backward(from_vector(v, out.shape(), TensorOptions().dtype(out.dtype()).device(out.device())));

  GradcheckResult result;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    const std::vector<double> analytic =
        x.grad().defined() ? x.grad().to_vector<double>() : std::vector<double>(static_cast<std::size_t>(x.numel()), 0.0);
    const std::int64_t n = x.numel();
    const std::int64_t step = opts.max_elements > 0 && n > opts.max_elements ? (n + opts.max_elements - 1) / opts.max_elements : 1;
    // Perturb through a host copy; the tensor is contiguous (cloned above).
    std::vector<double> host = x.to_vector<double>();
    auto set = [&](std::int64_t i, double value) {
      NoGradGuard no_grad;
      host[static_cast<std::size_t>(i)] = value;
      x.detach().copy_(from_vector(host, x.shape(), TensorOptions().dtype(x.dtype())));
    };
    for (std::int64_t i = 0; i < n; i += step) {
      const double orig = host[static_cast<std::size_t>(i)];
      set(i, orig + opts.eps);
      const double plus = projected(fn, inputs, v);
      set(i, orig - opts.eps);
      const double minus = projected(fn, inputs, v);
      set(i, orig);
      const double numeric = (plus - minus) / (2 * opts.eps);
      const double a = analytic[static_cast<std::size_t>(i)];
      const double err = std::abs(a - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      result.max_rel_error = std::max(result.max_rel_error, err / std::max(std::abs(numeric), 1e-12));
      if (err > opts.atol + opts.rtol * std::abs(numeric) && result.ok) {
        result.ok = false;
        std::ostringstream os;
        os << "gradcheck: input " << k << " (shape " << x.shape() << ") element " << i
           << ": analytic " << a << " vs numeric " << numeric << " (abs error " << err << ")";
        result.message = os.str();
      }
    }
  }
  return result;
}

}  // namespace convkit::autograd
