#pragma once
// Helpers shared by the op tests (on top of support/support.h).
#include <algorithm>
#include <numeric>
#include <string>

#include "support/support.h"

namespace convkit::testing {

inline TensorOptions opts(DType dt, Device dev) { return TensorOptions().dtype(dt).device(dev); }

// Float32 results are compared at this tolerance, float64 ones much tighter.
inline double tol_for(DType dt) { return dt == DType::float32 ? 2e-5 : 1e-11; }

// Distinct values (a shuffled 0.01-spaced ramp in [-k, k)), so max-pooling
// windows have no ties and central differences never cross one.
inline Tensor distinct_tensor(const Shape& shape, std::mt19937_64& rng, TensorOptions o) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), rng);
  const double half = static_cast<double>(v.size()) / 2;
  for (double& e : v) e = (e - half) * 0.01;
  const bool grad = o.requires_grad_;
  Tensor t = from_vector(v, shape, o.requires_grad(false));
  if (grad) t.requires_grad_(true);
  return t;
}

}  // namespace convkit::testing
