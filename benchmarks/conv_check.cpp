#include "conv_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "convkit/core/error.h"

namespace convkit::bench {

namespace {

// Products a whole check may sum, across its sampled elements.
constexpr double kProductBudget = 2e8;
constexpr std::size_t kMinSamples = 32, kMaxSamples = 1024, kEdgeSamples = 16;
constexpr double kNormwiseErrorFactor = 16;
// As tests/cpu/conv/conv_tolerance.h.
constexpr double kWinogradErrorFactor = 16;

struct Sum {
  double value = 0, magnitude = 0;
  std::int64_t terms = 0;
  void add(double a, double b) {
    value += a * b;
    magnitude += std::abs(a * b);
    ++terms;
  }
};

// Flat-index helpers over the descriptor's layouts.
struct Layout {
  const Conv2dDesc& d;
  std::int64_t P = d.P(), Q = d.Q(), Cg = d.C_per_group(), Kg = d.K_per_group();
  std::int64_t x(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return ((n * d.C + c) * d.H + h) * d.W + w;
  }
  std::int64_t w(std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) const {
    return ((k * Cg + c) * d.R + r) * d.S + s;
  }
  std::int64_t y(std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t q) const {
    return ((n * d.K + k) * P + p) * Q + q;
  }
};

Sum forward_element(const Layout& L, const PassData& in, std::int64_t i) {
  const Conv2dDesc& d = L.d;
  const std::int64_t q = i % L.Q, p = (i / L.Q) % L.P, k = (i / (L.Q * L.P)) % d.K, n = i / (L.Q * L.P * d.K);
  const std::int64_t g = k / L.Kg;
  Sum sum;
  for (std::int64_t c = 0; c < L.Cg; ++c)
    for (std::int64_t r = 0; r < d.R; ++r) {
      const std::int64_t h = p * d.stride_h - d.pad_top + r * d.dilation_h;
      if (h < 0 || h >= d.H) continue;
      for (std::int64_t s = 0; s < d.S; ++s) {
        const std::int64_t w = q * d.stride_w - d.pad_left + s * d.dilation_w;
        if (w < 0 || w >= d.W) continue;
        sum.add(in.x[L.x(n, g * L.Cg + c, h, w)], in.w[L.w(k, c, r, s)]);
      }
    }
  if (!in.b.empty()) sum.add(in.b[k], 1.0);
  return sum;
}

Sum backward_data_element(const Layout& L, const PassData& in, std::int64_t i) {
  const Conv2dDesc& d = L.d;
  const std::int64_t w = i % d.W, h = (i / d.W) % d.H, c = (i / (d.W * d.H)) % d.C, n = i / (d.W * d.H * d.C);
  const std::int64_t g = c / L.Cg, cg = c % L.Cg;
  Sum sum;
  for (std::int64_t kg = 0; kg < L.Kg; ++kg) {
    const std::int64_t k = g * L.Kg + kg;
    for (std::int64_t r = 0; r < d.R; ++r) {
      const std::int64_t ph = h + d.pad_top - r * d.dilation_h;
      if (ph < 0 || ph % d.stride_h != 0 || ph / d.stride_h >= L.P) continue;
      for (std::int64_t s = 0; s < d.S; ++s) {
        const std::int64_t qw = w + d.pad_left - s * d.dilation_w;
        if (qw < 0 || qw % d.stride_w != 0 || qw / d.stride_w >= L.Q) continue;
        sum.add(in.dy[L.y(n, k, ph / d.stride_h, qw / d.stride_w)], in.w[L.w(k, cg, r, s)]);
      }
    }
  }
  return sum;
}

Sum backward_weights_element(const Layout& L, const PassData& in, std::int64_t i) {
  const Conv2dDesc& d = L.d;
  const std::int64_t s = i % d.S, r = (i / d.S) % d.R, c = (i / (d.S * d.R)) % L.Cg, k = i / (d.S * d.R * L.Cg);
  const std::int64_t channel = (k / L.Kg) * L.Cg + c;
  Sum sum;
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t p = 0; p < L.P; ++p) {
      const std::int64_t h = p * d.stride_h - d.pad_top + r * d.dilation_h;
      if (h < 0 || h >= d.H) continue;
      for (std::int64_t q = 0; q < L.Q; ++q) {
        const std::int64_t w = q * d.stride_w - d.pad_left + s * d.dilation_w;
        if (w < 0 || w >= d.W) continue;
        sum.add(in.dy[L.y(n, k, p, q)], in.x[L.x(n, channel, h, w)]);
      }
    }
  return sum;
}

Sum bias_gradient_element(const Layout& L, const PassData& in, std::int64_t k) {
  Sum sum;
  for (std::int64_t n = 0; n < L.d.N; ++n)
    for (std::int64_t j = 0; j < L.P * L.Q; ++j) sum.add(in.dy[L.y(n, k, 0, 0) + j], 1.0);
  return sum;
}

// First and last elements, then seeded random ones, `count` distinct
// indices in all (every index when the tensor is smaller).
std::vector<std::int64_t> sample_indices(std::int64_t size, std::size_t count) {
  std::vector<std::int64_t> idx;
  if (static_cast<std::size_t>(size) <= count) {
    for (std::int64_t i = 0; i < size; ++i) idx.push_back(i);
    return idx;
  }
  std::set<std::int64_t> chosen;
  for (std::size_t i = 0; i < kEdgeSamples; ++i) {
    chosen.insert(static_cast<std::int64_t>(i));
    chosen.insert(size - 1 - static_cast<std::int64_t>(i));
  }
  std::mt19937_64 rng(0x5eed);
  std::uniform_int_distribution<std::int64_t> pick(0, size - 1);
  while (chosen.size() < count) chosen.insert(pick(rng));
  return {chosen.begin(), chosen.end()};
}

std::size_t sample_count(double products_per_element) {
  const double fit = kProductBudget / std::max(products_per_element, 1.0);
  return static_cast<std::size_t>(std::clamp(fit, static_cast<double>(kMinSamples), static_cast<double>(kMaxSamples)));
}

struct Compared {
  double got;
  Sum want;
  std::int64_t index;
  const char* tensor;
};

void compare(ConvAlgo algo, const std::vector<Compared>& items, double operand_unit, CheckResult& result) {
  const double eps = std::numeric_limits<float>::epsilon();
  double largest = 0;
  for (const Compared& c : items) largest = std::max(largest, c.want.magnitude);
  const bool sums_products = algo == ConvAlgo::direct || algo == ConvAlgo::im2col_gemm;
  double worst_excess = 0;
  for (const Compared& c : items) {
    const double err = std::abs(c.got - c.want.value);
    const double rel = c.want.magnitude > 0 ? err / c.want.magnitude : (err > 0 ? INFINITY : 0.0);
    result.max_rel_error = std::max(result.max_rel_error, std::isnan(err) ? INFINITY : rel);
    double tol;
    const double n = static_cast<double>(c.want.terms + 2), u = eps / 2;
    // Operands rounded to tf32 or bf16 before they multiply move each
    // product by at most 2v + v^2 of its size (v their unit roundoff): an
    // element-wise bound for the sums of products, a norm-wise one for the
    // transform algorithms (and for a vendor library, which may run either).
    const double rounding = 2 * operand_unit + operand_unit * operand_unit;
    if (sums_products) {
      tol = (n * u / (1 - n * u) + rounding) * c.want.magnitude;
    } else if (algo == ConvAlgo::winograd) {
      // Its transforms amplify the products' rounding, float32's and the
      // operands' alike (tests/cpu/conv/conv_tolerance.h and
      // tests/gpu/conv_winograd's tf32 bound).
      tol = kWinogradErrorFactor * (n * u / (1 - n * u) + rounding) * largest;
    } else {
      tol = (kNormwiseErrorFactor * eps + rounding) * largest;
    }
    ++result.checked;
    if (err <= tol) continue;  // NaN fails here too
    ++result.failures;
    const double excess = std::isnan(err) ? INFINITY : err / std::max(tol, 1e-300);
    if (result.failures == 1 || excess > worst_excess) {
      worst_excess = excess;
      std::ostringstream os;
      os << c.tensor << "[" << c.index << "] = " << c.got << ", reference " << c.want.value << " (tolerance " << tol
         << ")";
      result.worst = os.str();
    }
  }
}

void require_size(const std::vector<float>& v, std::int64_t size, const char* what) {
  CK_CHECK(static_cast<std::int64_t>(v.size()) == size, "conv check: ", what, " holds ", v.size(),
           " values, expected ", size);
}

}  // namespace

CheckResult check_conv_pass(const Conv2dDesc& d, ConvAlgo algo, ConvPass pass, const PassData& data,
                            double operand_unit) {
  d.validate("conv check");
  const Layout L{d};
  const std::int64_t x_size = d.N * d.C * d.H * d.W, w_size = d.K * L.Cg * d.R * d.S;
  const std::int64_t y_size = d.N * d.K * L.P * L.Q;
  std::vector<Compared> items;
  CheckResult result;
  switch (pass) {
    case ConvPass::forward: {
      require_size(data.x, x_size, "x");
      require_size(data.w, w_size, "w");
      require_size(data.out, y_size, "y");
      for (std::int64_t i : sample_indices(y_size, sample_count(static_cast<double>(L.Cg * d.R * d.S))))
        items.push_back({data.out[i], forward_element(L, data, i), i, "y"});
      break;
    }
    case ConvPass::backward_data: {
      require_size(data.dy, y_size, "dy");
      require_size(data.w, w_size, "w");
      require_size(data.out, x_size, "dx");
      for (std::int64_t i : sample_indices(x_size, sample_count(static_cast<double>(L.Kg * d.R * d.S))))
        items.push_back({data.out[i], backward_data_element(L, data, i), i, "dx"});
      break;
    }
    case ConvPass::backward_weights: {
      require_size(data.x, x_size, "x");
      require_size(data.dy, y_size, "dy");
      require_size(data.out, w_size, "dw");
      for (std::int64_t i : sample_indices(w_size, sample_count(static_cast<double>(d.N * L.P * L.Q))))
        items.push_back({data.out[i], backward_weights_element(L, data, i), i, "dw"});
      compare(algo, items, operand_unit, result);
      items.clear();
      if (!data.db.empty()) {
        require_size(data.db, d.K, "db");
        for (std::int64_t k : sample_indices(d.K, sample_count(static_cast<double>(d.N * L.P * L.Q))))
          items.push_back({data.db[k], bias_gradient_element(L, data, k), k, "db"});
        // The bias gradient is a plain sum in every algorithm.
        compare(ConvAlgo::direct, items, 0, result);
      }
      return result;
    }
  }
  compare(algo, items, operand_unit, result);
  return result;
}

}  // namespace convkit::bench
