// Raw tests of kernels/im2col.cu on sim (and, in the nvcc build, on cuda): im2col and col2im
// against float64 references on random geometries (stride, asymmetric
// padding, dilation, windows larger than the input), with 32- and 64-bit
// indexing; the adjoint identity <im2col(x), y> = <x, col2im(y)>; and the
// bias fill and slot sum used by the im2col+GEMM convolution (the bias
// gradient is tests/gpu/bias_gradient's).
#include <cmath>

#include "gpu/gpu_testing.h"
#include "kernels/im2col.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::CK_GPU_NS;
using testing::kernel_options;

double tolerance(DType dt) { return dt == DType::float32 ? 1e-6 : 1e-14; }

std::vector<double> random_values(std::int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

// A random valid descriptor: P and Q >= 1, windows that may overhang.
Conv2dDesc random_desc(std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  for (;;) {
    Conv2dDesc d;
    d.N = pick(1, 3), d.C = pick(1, 4), d.H = pick(1, 9), d.W = pick(1, 9), d.K = 1;
    d.R = pick(1, 4), d.S = pick(1, 4);
    d.stride_h = pick(1, 3), d.stride_w = pick(1, 3);
    d.pad_top = pick(0, 2), d.pad_bottom = pick(0, 2), d.pad_left = pick(0, 2), d.pad_right = pick(0, 2);
    d.dilation_h = pick(1, 2), d.dilation_w = pick(1, 2);
    if (d.H + d.pad_top + d.pad_bottom >= d.dilation_h * (d.R - 1) + 1 &&
        d.W + d.pad_left + d.pad_right >= d.dilation_w * (d.S - 1) + 1)
      return d;
  }
}

// Index of column entry (n, c, r, s, p, q), and of the input pixel it copies
// (-1 in the padding).
struct Taps {
  const Conv2dDesc& d;
  std::int64_t P, Q;
  explicit Taps(const Conv2dDesc& desc) : d(desc), P(desc.P()), Q(desc.Q()) {}
  std::int64_t col_size() const { return d.N * d.C * d.R * d.S * P * Q; }
  std::int64_t image_size() const { return d.N * d.C * d.H * d.W; }
  template <typename F>
  void each(F&& f) const {  // f(col_index, input_index or -1)
    std::int64_t i = 0;
    for (std::int64_t n = 0; n < d.N; ++n)
      for (std::int64_t c = 0; c < d.C; ++c)
        for (std::int64_t r = 0; r < d.R; ++r)
          for (std::int64_t s = 0; s < d.S; ++s)
            for (std::int64_t p = 0; p < P; ++p)
              for (std::int64_t q = 0; q < Q; ++q, ++i) {
                const std::int64_t h = p * d.stride_h + r * d.dilation_h - d.pad_top;
                const std::int64_t w = q * d.stride_w + s * d.dilation_w - d.pad_left;
                f(i, h >= 0 && h < d.H && w >= 0 && w < d.W ? ((n * d.C + c) * d.H + h) * d.W + w : -1);
              }
  }
};

void check_im2col_and_col2im(const Conv2dDesc& d, DType dt, std::mt19937_64& rng) {
  const Taps taps(d);
  const std::vector<double> x = random_values(taps.image_size(), rng);
  const std::vector<double> y = random_values(taps.col_size(), rng);
  const Tensor xd = from_vector(x, {taps.image_size()}, kernel_options(dt));
  const Tensor yd = from_vector(y, {taps.col_size()}, kernel_options(dt));
  // Filled with garbage first: both kernels must overwrite every element.
  Tensor col = full({taps.col_size()}, 7.0, kernel_options(dt));
  Tensor dx = full({taps.image_size()}, 7.0, kernel_options(dt));
  kernels::launch_im2col(dt, d, xd.raw_data(), d.N, col.raw_data());
  kernels::launch_col2im(dt, d, yd.raw_data(), d.N, dx.raw_data());

  std::vector<double> want_col(y.size()), want_dx(x.size(), 0.0);
  const std::vector<double> xr = xd.to_vector<double>(), yr = yd.to_vector<double>();  // rounded to dt
  taps.each([&](std::int64_t i, std::int64_t src) {
    want_col[static_cast<std::size_t>(i)] = src < 0 ? 0.0 : xr[static_cast<std::size_t>(src)];
    if (src >= 0) want_dx[static_cast<std::size_t>(src)] += yr[static_cast<std::size_t>(i)];
  });
  EXPECT_TRUE(testing::all_close(col, want_col, 0, 0)) << "im2col " << dt << " " << d;
  EXPECT_TRUE(testing::all_close(dx, want_dx, tolerance(dt) * d.R * d.S, tolerance(dt))) << "col2im " << dt << " " << d;

  // The adjoint identity, in float64 over the kernels' own outputs.
  const std::vector<double> colv = col.to_vector<double>(), dxv = dx.to_vector<double>();
  double lhs = 0, rhs = 0, scale = 0;
  for (std::size_t i = 0; i < colv.size(); ++i) lhs += colv[i] * yr[i], scale += std::abs(colv[i] * yr[i]);
  for (std::size_t i = 0; i < dxv.size(); ++i) rhs += xr[i] * dxv[i];
  EXPECT_NEAR(lhs, rhs, 1e-5 * (1 + scale)) << dt << " " << d;
}

TEST(GpuIm2col, Im2colAndCol2imMatchTheReferenceOnRandomGeometries) {
  std::mt19937_64 rng(testing::kSeed + 500);
  for (int i = 0; i < 60; ++i) {
    const Conv2dDesc d = random_desc(rng);
    for (DType dt : {DType::float32, DType::float64}) check_im2col_and_col2im(d, dt, rng);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(GpuIm2col, SixtyFourBitIndexingGivesTheSameResults) {
  std::mt19937_64 rng(testing::kSeed + 501);
  kernels::im2col_force_64_bit_indices(true);
  for (int i = 0; i < 15; ++i) {
    const Conv2dDesc d = random_desc(rng);
    for (DType dt : {DType::float32, DType::float64}) check_im2col_and_col2im(d, dt, rng);
  }
  kernels::im2col_force_64_bit_indices(false);
}

TEST(GpuIm2col, FixedGeometriesIncludingOneByOneAndWindowWiderThanInput) {
  std::mt19937_64 rng(testing::kSeed + 502);
  Conv2dDesc one;  // 1x1, stride 1: the column matrix is the image
  one.N = 2, one.C = 3, one.H = 5, one.W = 4;
  Conv2dDesc wide;  // 5x5 window on a 2x3 input, all padding
  wide.N = 1, wide.C = 2, wide.H = 2, wide.W = 3, wide.R = 5, wide.S = 5, wide.pad_top = 2, wide.pad_bottom = 2,
  wide.pad_left = 1, wide.pad_right = 3;
  Conv2dDesc strided;  // stride larger than the window: pixels no tap reads get 0 in col2im
  strided.N = 2, strided.C = 2, strided.H = 9, strided.W = 8, strided.R = 2, strided.S = 1, strided.stride_h = 3,
  strided.stride_w = 3;
  for (const Conv2dDesc& d : {one, wide, strided})
    for (DType dt : {DType::float32, DType::float64}) check_im2col_and_col2im(d, dt, rng);
}

TEST(GpuIm2col, BiasFillAndSlotSum) {
  std::mt19937_64 rng(testing::kSeed + 503);
  for (DType dt : {DType::float32, DType::float64}) {
    for (auto [N, K, plane] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 1}, {3, 5, 7},
                               {2, 3, 300}, {5, 2, 0}, {4, 33, 49}}) {
      const std::vector<double> bias = random_values(K, rng);
      const Tensor bd = from_vector(bias, {K}, kernel_options(dt));
      Tensor y = full({std::max<std::int64_t>(N * K * plane, 1)}, 7.0, kernel_options(dt));
      kernels::launch_bias_fill(dt, bd.raw_data(), N, K, plane, y.raw_data());
      const std::vector<double> br = bd.to_vector<double>(), yv = y.to_vector<double>();
      for (std::int64_t i = 0; i < N * K * plane; ++i)
        ASSERT_EQ(yv[static_cast<std::size_t>(i)], br[static_cast<std::size_t>((i / plane) % K)]) << i;
    }
    for (std::int64_t slices : {1, 2, 7}) {
      const std::int64_t n = 37;
      const Tensor in = from_vector(random_values(slices * n, rng), {slices * n}, kernel_options(dt));
      Tensor out = full({n}, 7.0, kernel_options(dt));
      kernels::launch_sum_slices(dt, in.raw_data(), slices, n, out.raw_data());
      const std::vector<double> iv = in.to_vector<double>();
      std::vector<double> want(static_cast<std::size_t>(n), 0.0);
      for (std::int64_t s = 0; s < slices; ++s)
        for (std::int64_t i = 0; i < n; ++i) want[static_cast<std::size_t>(i)] += iv[static_cast<std::size_t>(s * n + i)];
      EXPECT_TRUE(testing::all_close(out, want, tolerance(dt) * slices, tolerance(dt))) << slices << " slices";
    }
  }
}

TEST(GpuIm2col, BadArgumentsNameTheProblem) {
  Conv2dDesc d;
  d.R = 3;  // 3-row window on a 1-row input
  Tensor buf = Tensor::empty({64}, kernel_options(DType::float32));
  EXPECT_THROW(kernels::launch_im2col(DType::float32, d, buf.raw_data(), 1, buf.raw_data()), Error);
  Conv2dDesc ok;
  EXPECT_THROW(kernels::launch_col2im(DType::float32, ok, nullptr, 1, buf.raw_data()), Error);
  EXPECT_THROW(kernels::launch_im2col(DType::int64, ok, buf.raw_data(), 1, buf.raw_data()), Error);
  EXPECT_THROW(kernels::launch_sum_slices(DType::float32, buf.raw_data(), 0, 4, buf.raw_data()), Error);
}

}  // namespace
}  // namespace convkit
