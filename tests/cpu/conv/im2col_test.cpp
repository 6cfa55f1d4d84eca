// im2col / col2im (row-at-a-time) against their element-at-a-time twins, and
// col2im as the adjoint of im2col.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "cpu/conv/im2col.h"
#include "cpu/conv/conv_reference.h"

namespace convkit::cpu::testing {
namespace {

template <typename T>
class ConvIm2colTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ConvIm2colTest, FloatTypes);

// Both versions copy (im2col) or add in the same order (col2im), so they agree exactly.
TYPED_TEST(ConvIm2colTest, MatchesElementwiseTwinOnEveryCase) {
  using T = TypeParam;
  std::mt19937_64 rng(7);
  for (const ConvCase& c : conv_cases()) {
    const Conv2dDesc& d = c.desc;
    const std::int64_t image = d.C * d.H * d.W, cols = d.C * d.R * d.S * d.P() * d.Q();
    const std::vector<T> x = cast_to<T>(random_values<T>(image, rng));
    const std::vector<T> col_in = cast_to<T>(random_values<T>(cols, rng));
    for (bool parallel : {false, true}) {
      std::vector<T> got(static_cast<std::size_t>(cols), T(-3)), want(static_cast<std::size_t>(cols));
      im2col(d, x.data(), got.data(), parallel);
      im2col_reference(d, x.data(), want.data());
      EXPECT_EQ(got, want) << c.name << " " << d;
      std::vector<T> dx(static_cast<std::size_t>(image), T(-3)), dx_want(static_cast<std::size_t>(image));
      col2im(d, col_in.data(), dx.data(), parallel);
      col2im_reference(d, col_in.data(), dx_want.data());
      EXPECT_EQ(dx, dx_want) << c.name << " " << d;
    }
  }
}

// Why im2col_gemm may skip im2col for 1x1, stride-1, unpadded filters: the
// column matrix of such a convolution is the image itself (C x H*W).
TEST(ConvIm2col, PointwiseColumnMatrixIsTheImage) {
  std::mt19937_64 rng(9);
  for (std::int64_t groups : {1, 2}) {
    Conv2dDesc d;
    d.N = 1, d.C = 4, d.H = 5, d.W = 7, d.K = 6, d.groups = groups;
    const std::vector<double> x = random_values<double>(d.C * d.H * d.W, rng);
    std::vector<double> col(x.size());
    im2col(d, x.data(), col.data(), false);
    EXPECT_EQ(col, x);
    std::vector<double> back(x.size());
    col2im(d, x.data(), back.data(), false);
    EXPECT_EQ(back, x);
  }
}

// <im2col(x), c> == <x, col2im(c)> in float64, up to rounding of the two sums.
TEST(ConvIm2col, Col2imIsTheAdjointOfIm2col) {
  std::mt19937_64 rng(8);
  for (const ConvCase& c : conv_cases()) {
    const Conv2dDesc& d = c.desc;
    const std::int64_t image = d.C * d.H * d.W, cols = d.C * d.R * d.S * d.P() * d.Q();
    const std::vector<double> x = random_values<double>(image, rng), col = random_values<double>(cols, rng);
    std::vector<double> x_cols(static_cast<std::size_t>(cols)), col_image(static_cast<std::size_t>(image));
    im2col(d, x.data(), x_cols.data(), false);
    col2im(d, col.data(), col_image.data(), false);
    const double a = std::inner_product(x_cols.begin(), x_cols.end(), col.begin(), 0.0);
    const double b = std::inner_product(x.begin(), x.end(), col_image.begin(), 0.0);
    EXPECT_NEAR(a, b, 1e-12 * static_cast<double>(cols)) << c.name;
  }
}

}  // namespace
}  // namespace convkit::cpu::testing
