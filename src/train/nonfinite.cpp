#include "train/nonfinite.h"

#include <cmath>
#include <limits>
#include <vector>

#include "convkit/autograd/grad_mode.h"
#include "convkit/ops/factory.h"
#include "convkit/nn/module.h"
#include "convkit/ops/elementwise.h"
#include "convkit/ops/reduce.h"
#include "train/forward_units.h"

namespace convkit::train::detail {

namespace {

struct Census {
  std::int64_t nan = 0, inf = 0, total = 0;
  bool finite() const { return nan == 0 && inf == 0; }
};

Census census(const Tensor& t) {
  Census c;
  if (!t.defined() || !is_floating(t.dtype())) return c;
  const Tensor host = t.detach().to(kCPU).to(DType::float64).contiguous();
  const double* v = host.data<double>();
  c.total = host.numel();
  for (std::int64_t i = 0; i < c.total; ++i) {
    if (std::isnan(v[i])) ++c.nan;
    else if (std::isinf(v[i])) ++c.inf;
  }
  return c;
}

std::string counts(const Census& c) {
  return " (" + std::to_string(c.nan) + " NaN, " + std::to_string(c.inf) + " Inf of " +
         std::to_string(c.total) + " values)";
}

// "features.0.weight" -> tensor "weight" in layer "features.0"; a parameter
// of the model itself has the layer "(model)".
std::string in_layer(const std::string& what, const std::string& dotted) {
  const std::size_t dot = dotted.rfind('.');
  const std::string layer = dot == std::string::npos ? "(model)" : dotted.substr(0, dot);
  const std::string name = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  return what + "'" + name + "' in layer '" + layer + "'";
}

}  // namespace

namespace {

// x * 0 is 0 for every finite x and NaN for NaN and Inf, so the sum of x * 0
// is 0 exactly when every element is finite: no overflow, no false alarm.
// One vectorised pass over memory the backward has just written, on this
// thread: an OpenMP team would cost more to wake than the pass takes.
template <typename T>
bool host_all_finite(const T* p, std::int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t i = 0; i < n; ++i) acc += p[i] * T(0);
  return acc == T(0);
}

// nullopt when `t` is not a contiguous floating tensor on the cpu.
std::optional<bool> cpu_all_finite(const Tensor& t) {
  if (t.device() != kCPU || !t.is_contiguous()) return std::nullopt;
  if (t.dtype() == DType::float32) return host_all_finite(t.data<float>(), t.numel());
  if (t.dtype() == DType::float64) return host_all_finite(t.data<double>(), t.numel());
  return std::nullopt;
}

}  // namespace

bool step_sum_is_finite(const nn::Module& model, const Tensor& loss) {
  NoGradGuard no_grad;
  // On the cpu the tensors are read where they lie; elsewhere one device
  // scalar collects them and is read once.
  Tensor total;
  auto add = [&](const Tensor& t) {
    if (const std::optional<bool> finite = cpu_all_finite(t)) {
      if (!*finite) total = full({}, std::numeric_limits<double>::quiet_NaN());
      return !*finite;
    }
    const Tensor s = sum(t.detach()).to(DType::float64);
    total = total.defined() ? total + s.to(total.device()) : s;
    return false;
  };
  if (add(loss)) return false;
  for (const Tensor& p : model.parameters()) {
    const Tensor g = p.grad();
    if (g.defined() && add(g)) return false;
  }
  return !total.defined() || std::isfinite(total.item());
}

std::optional<std::string> locate_nonfinite(nn::Module& model, const Tensor& images,
                                            const Tensor& loss) {
  NoGradGuard no_grad;
  for (const auto& [name, p] : model.named_parameters())
    if (const Census c = census(p); !c.finite()) return in_layer("the value of parameter ", name) + counts(c);
  for (const auto& [name, b] : model.named_buffers())
    if (const Census c = census(b); !c.finite()) return in_layer("the value of buffer ", name) + counts(c);
  // The forward again, unit by unit, to find where it first went wrong. It
  // runs in the step's mode, so BatchNorm's running statistics and the
  // generator (dropout) are put back afterwards.
  std::vector<Tensor> saved_buffers;
  for (const auto& [name, b] : model.named_buffers()) saved_buffers.push_back(b.clone());
  const Generator saved_generator = default_generator();
  std::optional<std::string> found;
  Tensor x = images;
  // Layer by layer, not as the forward fuses them: a ReLU fused after a
  // batch norm would hide the batch norm's NaN.
  for (const ForwardUnit& unit : forward_units(model, Split::per_layer)) {
    x = unit.run(std::move(x), images);
    if (const Census c = census(x); !c.finite()) {
      found = "the output of layer '" + unit.name + "' (" + unit.type + ")" + counts(c);
      break;
    }
  }
  std::size_t i = 0;
  for (const auto& [name, b] : model.named_buffers()) b.detach().copy_(saved_buffers[i++]);
  default_generator() = saved_generator;
  if (found) return found;
  if (const Census c = census(loss); !c.finite())
    return "the loss (every layer's output is finite)" + counts(c);
  for (const auto& [name, p] : model.named_parameters())
    if (const Census c = census(p.grad()); !c.finite()) return in_layer("the gradient of ", name) + counts(c);
  return std::nullopt;
}

}  // namespace convkit::train::detail
