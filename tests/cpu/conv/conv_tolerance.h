#pragma once
// How far an algorithm's result may be from the float64 reference.
//
// direct and im2col_gemm compute every output as a sum of products in T. For
// any summation order (sequential, blocked, SIMD lanes, FMA) the rounding
// error of a sum of n products is at most gamma_n * sum|products|, with
// gamma_n = n*u / (1 - n*u) and u = epsilon/2 (Higham, Accuracy and Stability
// of Numerical Algorithms, section 3.1). We allow gamma_{n+2} (one more term
// for the final rounding, one for the bias), element by element, against the
// reference's magnitude. The bound is rigorous, so a failure is a bug, and it
// is still tight enough to catch one: with n up to a few thousand in float32 it
// is ~1e-4 relative, while a wrong index or a missing tap is O(1).
//
// fft is not a sum of the products: every output mixes all frequencies of its
// tile, so its error is bounded norm-wise, u * O(log2(tile area)) per
// transform times the size of the signals, not per element. We compare each
// element with kFftErrorFactor * epsilon * (largest magnitude in the tensor).
// Over all test cases the largest error observed is 1.6 * epsilon * (largest
// magnitude), in float32 and float64 alike; kFftErrorFactor = 16 leaves a 10x
// margin and is still ~2e-6 relative in float32, where an indexing bug is O(1).
//
// winograd sums transformed values, not the products, and its transforms mix
// the inputs of a tile (F(2x2): weights 1 and 1/2; F(4x4): up to 8 and
// 1/24), so it too is bounded only against the tile's neighbourhood, not per
// element. Its GEMMs still sum n terms, so the bound keeps gamma_{n+2} and
// replaces the element's magnitude by the largest in the tensor. Over all
// test cases the largest error observed is 0.59 * gamma_{n+2} * (largest
// magnitude) with F(2x2) and 3.0 times that with F(4x4), in float32 and
// float64; kWinogradErrorFactor = 16 leaves a 5x margin over F(4x4), and is
// still at most ~4e-4 relative in float32 for the test sizes, where an
// indexing bug is O(1).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "convkit/backend/conv_desc.h"
#include "cpu/conv/conv_reference.h"

namespace convkit::cpu::testing {

constexpr double kFftErrorFactor = 16;
constexpr double kWinogradErrorFactor = 16;

// Per-element tolerances of `algo` in precision T against `ref`.
template <typename T>
std::vector<double> tolerances(ConvAlgo algo, const Reference& ref) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  std::vector<double> tol(ref.value.size());
  if (algo == ConvAlgo::fft) {
    const double largest = ref.magnitude.empty() ? 0.0 : *std::max_element(ref.magnitude.begin(), ref.magnitude.end());
    std::fill(tol.begin(), tol.end(), kFftErrorFactor * std::numeric_limits<T>::epsilon() * largest);
  } else if (algo == ConvAlgo::winograd) {
    const double largest = ref.magnitude.empty() ? 0.0 : *std::max_element(ref.magnitude.begin(), ref.magnitude.end());
    const double n = static_cast<double>(ref.max_terms + 2);
    std::fill(tol.begin(), tol.end(), kWinogradErrorFactor * n * u / (1 - n * u) * largest);
  } else {
    const double n = static_cast<double>(ref.max_terms + 2);
    const double gamma = n * u / (1 - n * u);
    for (std::size_t i = 0; i < tol.size(); ++i) tol[i] = gamma * ref.magnitude[i];
  }
  return tol;
}

// Element-wise |got - want| <= tol, reporting the worst violation.
template <typename T>
::testing::AssertionResult all_within(const std::vector<T>& got, const std::vector<double>& want,
                                      const std::vector<double>& tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  std::size_t worst = 0, bad = 0;
  double worst_excess = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= tol[i])) {  // also catches NaN
      ++bad;
      const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / std::max(tol[i], 1e-300);
      if (bad == 1 || excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements out of tolerance; worst at "
                                       << worst << ": got " << static_cast<double>(got[worst]) << ", want "
                                       << want[worst] << ", tolerance " << tol[worst];
}

}  // namespace convkit::cpu::testing
