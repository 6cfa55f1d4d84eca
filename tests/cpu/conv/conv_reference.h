#pragma once
// The float64 reference for the convolution tests, and the test descriptors.
//
// The reference enumerates every "connection" (one input pixel, one filter tap,
// one output pixel) of the convolution in plain nested loops, straight from the
// definition; the three passes are the three ways to sum products over those
// connections. Next to each value it sums the absolute values of the same
// products (the magnitude), which sets the rounding-error tolerance.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "convkit/backend/conv_desc.h"

namespace convkit::cpu::testing {

struct Reference {
  std::vector<double> value;
  std::vector<double> magnitude;  // sum of |products| per element
  std::int64_t max_terms = 0;     // most products summed into one element
};

// y = conv(x, w) + b (b empty: no bias).
Reference reference_forward(const Conv2dDesc& d, const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& b);
Reference reference_backward_data(const Conv2dDesc& d, const std::vector<double>& dy, const std::vector<double>& w);
Reference reference_backward_weights(const Conv2dDesc& d, const std::vector<double>& x,
                                     const std::vector<double>& dy);
Reference reference_bias_gradient(const Conv2dDesc& d, const std::vector<double>& dy);

struct ConvCase {
  std::string name;
  Conv2dDesc desc;
};
// Hand-picked descriptors covering every feature, then seeded random ones.
const std::vector<ConvCase>& conv_cases();

std::int64_t x_size(const Conv2dDesc& d);
std::int64_t w_size(const Conv2dDesc& d);
std::int64_t y_size(const Conv2dDesc& d);

// `count` uniform values in [-1, 1), rounded to T and returned as double, so
// the reference sees exactly the values the algorithm sees.
template <typename T>
std::vector<double> random_values(std::int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(static_cast<std::size_t>(count));
  for (double& v : out) v = static_cast<double>(static_cast<T>(dist(rng)));
  return out;
}

template <typename T>
std::vector<T> cast_to(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace convkit::cpu::testing
