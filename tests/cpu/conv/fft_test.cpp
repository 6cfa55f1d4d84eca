// The FFTs against a naive DFT evaluated in long double.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <vector>

#include "convkit/core/error.h"
#include "cpu/fft/fft.h"


namespace convkit::cpu::fft {
namespace {

// Fixed so failures reproduce.
constexpr std::uint64_t kFftSeed = 20261122;

using Exact = std::complex<long double>;

// exp(-2*pi*i*m/n) for m < n, in long double.
std::vector<Exact> roots_of_unity(std::int64_t n) {
  std::vector<Exact> roots(static_cast<std::size_t>(n));
  for (std::int64_t m = 0; m < n; ++m) {
    const long double angle = -2.0L * std::numbers::pi_v<long double> * static_cast<long double>(m) / n;
    roots[static_cast<std::size_t>(m)] = Exact(std::cos(angle), std::sin(angle));
  }
  return roots;
}

// X[k] = sum_j x[j] exp(sign * 2*pi*i*j*k/n), straight from the definition.
std::vector<Exact> naive_dft(const std::vector<Exact>& x, int sign) {
  const auto n = static_cast<std::int64_t>(x.size());
  const std::vector<Exact> roots = roots_of_unity(n);  // exp(-2*pi*i*m/n); conjugated for sign > 0
  std::vector<Exact> out(x.size());
  for (std::int64_t k = 0; k < n; ++k) {
    Exact sum = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const Exact root = roots[static_cast<std::size_t>((j * k) % n)];
      sum += x[static_cast<std::size_t>(j)] * (sign < 0 ? root : std::conj(root));
    }
    out[static_cast<std::size_t>(k)] = sum;
  }
  return out;
}

// 2-D DFT of a real rows x cols array, full spectrum:
// X[u][v] = sum_{i,j} x[i][j] exp(-2*pi*i*(i*u/rows + j*v/cols)), term by term
// (the exponential factors through tables of roots of unity).
std::vector<Exact> naive_dft_2d(const std::vector<long double>& x, std::int64_t rows, std::int64_t cols) {
  const std::vector<Exact> row_roots = roots_of_unity(rows), col_roots = roots_of_unity(cols);
  std::vector<Exact> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t u = 0; u < rows; ++u)
    for (std::int64_t v = 0; v < cols; ++v) {
      Exact sum = 0;
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          sum += x[static_cast<std::size_t>(i * cols + j)] * row_roots[static_cast<std::size_t>((i * u) % rows)] *
                 col_roots[static_cast<std::size_t>((j * v) % cols)];
      out[static_cast<std::size_t>(u * cols + v)] = sum;
    }
  return out;
}

// The radix-2 FFT's error grows like u * log2(n) * ||x||; per element we allow
// 4 * u * (log2(n) + 1) * ||x||_2, a few times the textbook bound's constant.
template <typename T>
double fft_tolerance(std::int64_t n, double norm) {
  return 4.0 * std::numeric_limits<T>::epsilon() * (std::log2(static_cast<double>(n)) + 1) * norm;
}

template <typename T>
class ConvFftTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ConvFftTest, FloatTypes);

TYPED_TEST(ConvFftTest, ComplexForwardAndInverseMatchNaiveDft) {
  using T = TypeParam;
  std::mt19937_64 rng(kFftSeed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (std::int64_t n = 1; n <= 256; n *= 2) {
    for (std::int64_t lanes : {1, 3}) {
      std::vector<std::vector<Exact>> signals(static_cast<std::size_t>(lanes), std::vector<Exact>(n));
      std::vector<std::complex<T>> data(static_cast<std::size_t>(n * lanes));
      double norm2 = 0;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t l = 0; l < lanes; ++l) {
          const std::complex<T> v(static_cast<T>(dist(rng)), static_cast<T>(dist(rng)));
          data[static_cast<std::size_t>(j * lanes + l)] = v;
          signals[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)] = Exact(v.real(), v.imag());
          norm2 += std::norm(v);
        }
      const double tol = fft_tolerance<T>(n, std::sqrt(norm2));
      std::vector<std::complex<T>> forward = data;
      const ComplexFft<T> fft(n);
      fft.forward(forward.data(), lanes);
      for (int sign : {-1, +1}) {
        std::vector<std::complex<T>> got = data;
        if (sign < 0) fft.forward(got.data(), lanes); else fft.inverse(got.data(), lanes);
        for (std::int64_t l = 0; l < lanes; ++l) {
          const auto want = naive_dft(signals[static_cast<std::size_t>(l)], sign);
          for (std::int64_t k = 0; k < n; ++k) {
            const auto g = got[static_cast<std::size_t>(k * lanes + l)];
            const Exact w = want[static_cast<std::size_t>(k)];
            ASSERT_NEAR(g.real(), static_cast<double>(w.real()), tol) << "n=" << n << " lanes=" << lanes << " k=" << k;
            ASSERT_NEAR(g.imag(), static_cast<double>(w.imag()), tol) << "n=" << n << " lanes=" << lanes << " k=" << k;
          }
        }
      }
    }
  }
}

TYPED_TEST(ConvFftTest, Real2dForwardMatchesNaiveDftAndInverseRoundTrips) {
  using T = TypeParam;
  std::mt19937_64 rng(kFftSeed + 1);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (std::int64_t lanes : {1, 3})
    for (std::int64_t rows : {1, 2, 4, 8, 16, 32})
      for (std::int64_t cols : {2, 4, 8, 16, 32}) {
        const RealFft2d<T> fft(rows, cols);
        const std::int64_t sc = fft.spectrum_cols();
        // x[(i*cols + j)*lanes + l]: element (i, j) of array l.
        std::vector<T> x(static_cast<std::size_t>(rows * cols * lanes));
        for (T& v : x) v = static_cast<T>(dist(rng));
        std::vector<std::complex<T>> spectrum(static_cast<std::size_t>(fft.spectrum_size() * lanes));
        std::vector<std::complex<T>> scratch(static_cast<std::size_t>(fft.scratch_size(lanes)));
        fft.forward(x.data(), spectrum.data(), scratch.data(), lanes);
        for (std::int64_t l = 0; l < lanes; ++l) {
          std::vector<long double> exact(static_cast<std::size_t>(rows * cols));
          double norm2 = 0;
          for (std::int64_t e = 0; e < rows * cols; ++e) {
            exact[static_cast<std::size_t>(e)] = x[static_cast<std::size_t>(e * lanes + l)];
            norm2 += static_cast<double>(exact[static_cast<std::size_t>(e)] * exact[static_cast<std::size_t>(e)]);
          }
          const auto want = naive_dft_2d(exact, rows, cols);
          const double tol = fft_tolerance<T>(rows * cols, std::sqrt(norm2));
          for (std::int64_t u = 0; u < rows; ++u)
            for (std::int64_t v = 0; v < sc; ++v) {
              const auto g = spectrum[static_cast<std::size_t>((u * sc + v) * lanes + l)];
              const Exact w = want[static_cast<std::size_t>(u * cols + v)];
              ASSERT_NEAR(g.real(), static_cast<double>(w.real()), tol) << rows << "x" << cols << " lane " << l << " u=" << u << " v=" << v;
              ASSERT_NEAR(g.imag(), static_cast<double>(w.imag()), tol) << rows << "x" << cols << " lane " << l << " u=" << u << " v=" << v;
            }
        }
        // inverse(forward(x)) = rows*cols * x.
        std::vector<T> back(x.size());
        fft.inverse(spectrum.data(), back.data(), scratch.data(), lanes);
        const double scale = static_cast<double>(rows * cols);
        const double tol = fft_tolerance<T>(rows * cols, std::sqrt(scale));  // |x| <= 1 per element
        for (std::size_t i = 0; i < x.size(); ++i)
          ASSERT_NEAR(back[i] / scale, x[i], 2 * tol / std::sqrt(scale)) << rows << "x" << cols << " i=" << i;
      }
}

TEST(ConvFft, RejectsLengthsThatAreNotPowersOfTwo) {
  EXPECT_THROW(ComplexFft<float>(12), Error);
  EXPECT_THROW(ComplexFft<float>(0), Error);
  EXPECT_THROW(RealFft2d<double>(4, 1), Error);
  try {
    ComplexFft<double> bad(6);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace convkit::cpu::fft
