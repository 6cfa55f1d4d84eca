// PyTorch-style printing: tensor([[ 1.0000, -2.5000], ...], requires_grad=True).
// Tensor::str (declared in convkit/core/tensor.h) copies to the host and names
// the grad_fn, which ops and the graph provide: it lives in ops.
// Large tensors are summarised with "..." (first and last 3 per dim).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "convkit/autograd/node.h"
#include "convkit/core/tensor.h"

namespace convkit {

namespace {

constexpr std::int64_t kSummariseAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

struct Formatter {
  bool integer_dtype = false;
  bool all_integral = true;  // floats that are whole numbers print as "1."
  bool scientific = false;
  int width = 1;

  explicit Formatter(const std::vector<double>& v, DType dtype) : integer_dtype(dtype == DType::int64) {
    double max_abs = 0, min_abs = INFINITY;
    for (double x : v) {
      if (!std::isfinite(x)) continue;
      all_integral = all_integral && x == std::floor(x);
      max_abs = std::max(max_abs, std::abs(x));
      if (x != 0) min_abs = std::min(min_abs, std::abs(x));
    }
    scientific = !integer_dtype && !all_integral && (max_abs >= 1e8 || (min_abs < 1e-4 && max_abs / min_abs > 1e3));
    for (double x : v) width = std::max(width, static_cast<int>(format(x).size()));
  }

  std::string format(double x) const {
    char buf[64];
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    if (integer_dtype) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(x));
    else if (scientific) std::snprintf(buf, sizeof buf, "%.4e", x);
    else if (all_integral) std::snprintf(buf, sizeof buf, "%.0f.", x);
    else std::snprintf(buf, sizeof buf, "%.4f", x);
    return buf;
  }
  std::string padded(double x) const {
    std::string s = format(x);
    return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(s.size()))), ' ') + s;
  }
};

void print_dim(std::ostream& os, const std::vector<double>& v, const Shape& shape,
               const std::vector<std::int64_t>& strides, std::size_t d, std::int64_t base,
               const Formatter& f, bool summarise, int indent) {
  const std::int64_t n = shape[d];
  const bool cut = summarise && n > 2 * kEdgeItems;
  os << '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) {
      os << (d + 1 == shape.size() ? "..., " : "...,\n" + std::string(static_cast<std::size_t>(indent + 1), ' '));
      i = n - kEdgeItems;
    }
    if (d + 1 == shape.size()) {
      os << f.padded(v[static_cast<std::size_t>(base + i * strides[d])]);
      if (i + 1 < n) os << ", ";
    } else {
      print_dim(os, v, shape, strides, d + 1, base + i * strides[d], f, summarise, indent + 1);
      if (i + 1 < n) {
        os << ',' << std::string(shape.size() - d - 1, '\n')
           << std::string(static_cast<std::size_t>(indent + 1), ' ');
      }
    }
  }
  os << ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::vector<double> values = to_vector<double>();
  std::ostringstream os;
  os << "tensor(";
  const Formatter f(values, dtype());
  if (dim() == 0) {
    os << f.format(values[0]);
  } else if (numel() == 0) {
    os << "[], size=" << shape();
  } else {
    print_dim(os, values, shape(), contiguous_strides(shape()), 0, 0, f, numel() > kSummariseAbove, 7);
  }
  if (device() != kCPU) os << ", device='" << device() << "'";
  if (dtype() != DType::float32) os << ", dtype=" << dtype();
  if (grad_fn()) os << ", grad_fn=<" << grad_fn()->name() << '>';
  else if (requires_grad()) os << ", requires_grad=True";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace convkit
