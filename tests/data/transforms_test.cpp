#include <convkit/data/transforms.h>

#include <cmath>
#include <numbers>

#include "data_files.h"

namespace convkit::testing {
namespace {

using data::FillMode;

// [C, H, W] from row-major values.
Tensor image(std::vector<float> values, std::int64_t c, std::int64_t h, std::int64_t w) {
  return from_vector(values, Shape{c, h, w});
}

// arange(c * h * w) as [C, H, W].
Tensor ramp(std::int64_t c, std::int64_t h, std::int64_t w) {
  std::vector<float> v(static_cast<std::size_t>(c * h * w));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return image(v, c, h, w);
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(Transforms, FlipsAreExact) {
  const Tensor x = ramp(2, 2, 3);  // channel 0: [[0 1 2] [3 4 5]], channel 1: +6
  EXPECT_EQ(values(data::flip_horizontal(x)),
            (std::vector<float>{2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9}));
  EXPECT_EQ(values(data::flip_vertical(x)),
            (std::vector<float>{3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8}));
  // Non-contiguous input: a transposed view.
  const Tensor t = ramp(1, 3, 2).transpose(1, 2);  // [[0 2 4] [1 3 5]]
  EXPECT_EQ(values(data::flip_horizontal(t)), (std::vector<float>{4, 2, 0, 5, 3, 1}));
}

TEST(Transforms, WholePixelShiftsAreExact) {
  const Tensor x = ramp(1, 3, 4);  // rows [0..3] [4..7] [8..11]
  // Content moves right by 1; the new column is cval (constant) or the edge (nearest).
  EXPECT_EQ(values(data::shift(x, 1, 0, FillMode::constant, -1)),
            (std::vector<float>{-1, 0, 1, 2, -1, 4, 5, 6, -1, 8, 9, 10}));
  EXPECT_EQ(values(data::shift(x, 1, 0)), (std::vector<float>{0, 0, 1, 2, 4, 4, 5, 6, 8, 8, 9, 10}));
  // Content moves up by 1.
  EXPECT_EQ(values(data::shift(x, 0, -1)), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11, 8, 9, 10, 11}));
}

TEST(Transforms, FillModesOnATwoPixelShift) {
  const Tensor row = image({1, 2, 3, 4}, 1, 1, 4);
  EXPECT_EQ(values(data::shift(row, 2, 0, FillMode::nearest)), (std::vector<float>{1, 1, 1, 2}));
  EXPECT_EQ(values(data::shift(row, 2, 0, FillMode::constant, 9)), (std::vector<float>{9, 9, 1, 2}));
  EXPECT_EQ(values(data::shift(row, 2, 0, FillMode::reflect)), (std::vector<float>{2, 1, 1, 2}));
  EXPECT_EQ(values(data::shift(row, 2, 0, FillMode::wrap)), (std::vector<float>{3, 4, 1, 2}));
}

TEST(Transforms, FractionalShiftInterpolatesBilinearly) {
  const Tensor row = image({0, 10, 20, 30}, 1, 1, 4);
  EXPECT_EQ(values(data::shift(row, 0.5, 0)), (std::vector<float>{0, 5, 15, 25}));
  EXPECT_EQ(values(data::shift(row, -0.25, 0)), (std::vector<float>{2.5, 12.5, 22.5, 30}));
}

// out[r][c] = in[c][N-1-r]: numpy's rot90, counter-clockwise.
std::vector<float> rot90(const std::vector<float>& in, int n) {
  std::vector<float> out(in.size());
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) out[static_cast<std::size_t>(r * n + c)] = in[static_cast<std::size_t>(c * n + n - 1 - r)];
  }
  return out;
}

TEST(Transforms, QuarterTurnsAreExact) {
  for (int n : {3, 4, 5}) {
    const Tensor x = ramp(1, n, n);
    const auto once = rot90(values(x), n);
    EXPECT_EQ(values(data::rotate(x, 90)), once) << n;
    EXPECT_EQ(values(data::rotate(x, 180)), rot90(once, n)) << n;
    EXPECT_EQ(values(data::rotate(x, -90)), rot90(rot90(once, n), n)) << n;
    EXPECT_EQ(values(data::rotate(x, 360)), values(x)) << n;
  }
  // Half a turn of a non-square image reverses it entirely.
  const auto r = values(data::rotate(ramp(1, 2, 3), 180));
  EXPECT_EQ(r, (std::vector<float>{5, 4, 3, 2, 1, 0}));
}

TEST(Transforms, SmallRotationMatchesBilinearReference) {
  // 30 degrees about the centre of a 5x5 ramp, checked at the centre pixel
  // (fixed) and one neighbour computed by hand through the same formula.
  const Tensor x = ramp(1, 5, 5);
  const auto out = values(data::rotate(x, 30));
  EXPECT_EQ(out[12], 12.0f);
  // Output (x=3, y=2): offset (1, 0) samples the input at (cos, sin) = (0.866, 0.5)
  // from the centre, i.e. x = 2.866, y = 2.5: bilinear on the ramp 5 y + x.
  EXPECT_NEAR(out[2 * 5 + 3], 5 * 2.5 + (2 + std::cos(std::numbers::pi / 6)), 1e-5);
}

TEST(Transforms, ZoomFollowsKerasConvention) {
  const Tensor row = image({0, 10, 20, 30}, 1, 1, 4);
  // zoom 0.5 magnifies: output x samples the input at 0.5 (x - 1.5) + 1.5.
  EXPECT_EQ(values(data::zoom(row, 0.5, 1)), (std::vector<float>{7.5, 12.5, 17.5, 22.5}));
  // zoom 2 shrinks; outside is filled.
  EXPECT_EQ(values(data::zoom(row, 2, 1, FillMode::constant, 0)), (std::vector<float>{0, 5, 25, 0}));
}

TEST(Transforms, ShearSlidesRowsByTheirDistanceFromTheCentre) {
  // Columns of constant value 10 x: row y samples x - sin(30) (y - 1).
  const Tensor cols = image({0, 10, 20, 0, 10, 20, 0, 10, 20}, 1, 3, 3);
  EXPECT_EQ(values(data::shear(cols, 30)), (std::vector<float>{5, 15, 20, 0, 10, 20, 0, 5, 15}));
}

TEST(Transforms, AffineIdentityIsACopy) {
  const Tensor x = ramp(3, 4, 5);
  const Tensor y = data::affine(x, data::AffineParams{});
  EXPECT_EQ(values(y), values(x));
  EXPECT_FALSE(y.storage() == x.storage());
}

TEST(Transforms, ResizeBilinearHalfPixelAndNearest) {
  const Tensor row = image({0, 100}, 1, 1, 2);
  EXPECT_EQ(values(data::resize(row, 1, 4)), (std::vector<float>{0, 25, 75, 100}));
  const Tensor four = image({0, 10, 20, 40}, 1, 1, 4);
  EXPECT_EQ(values(data::resize(four, 1, 2)), (std::vector<float>{5, 30}));
  EXPECT_EQ(values(data::resize(four, 1, 2, data::Interpolation::nearest)), (std::vector<float>{10, 40}));
  EXPECT_EQ(values(data::resize(row, 1, 4, data::Interpolation::nearest)), (std::vector<float>{0, 0, 100, 100}));
  // 2-D: the centre 2x2 of a 2x2 -> 4x4 upsample mixes 9:3:3:1.
  const auto big = values(data::resize(image({0, 16, 32, 48}, 1, 2, 2), 4, 4));
  EXPECT_EQ(big[5], (9 * 0 + 3 * 16 + 3 * 32 + 1 * 48) / 16.0f);
  EXPECT_EQ(big[0], 0.0f);
  EXPECT_EQ(big[15], 48.0f);
  const Tensor x = ramp(2, 3, 5);
  EXPECT_EQ(values(data::resize(x, 3, 5)), values(x));
}

TEST(Transforms, PadCropWindows) {
  const Tensor x = image({1, 2, 3, 4}, 1, 2, 2);
  EXPECT_EQ(values(data::pad_crop(x, 1, 0, 0, 2, 2)), (std::vector<float>{0, 0, 0, 1}));
  EXPECT_EQ(values(data::pad_crop(x, 1, 2, 2, 2, 2)), (std::vector<float>{4, 0, 0, 0}));
  EXPECT_EQ(values(data::pad_crop(x, 1, 1, 1, 2, 2)), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(values(data::pad_crop(x, 1, 0, 0, 2, 2, FillMode::nearest)), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(values(data::pad_crop(x, 2, 0, 1, 3, 3, FillMode::constant, 7)),
            (std::vector<float>{7, 7, 7, 7, 7, 7, 7, 1, 2}));
  EXPECT_ERROR_MENTIONS(data::pad_crop(x, 1, 2, 3, 2, 2), "pad_crop", "does not fit");
}

TEST(Transforms, RescaleNormalizeAndChannels) {
  const Tensor x = image({0, 255, 51, 102, 10, 20}, 3, 1, 2);
  EXPECT_EQ(values(data::rescale(x, 2)), (std::vector<float>{0, 510, 102, 204, 20, 40}));
  EXPECT_EQ(values(data::normalize(x, {1, 2, 10}, {1, 0.5, 10})),
            (std::vector<float>{-1, 254, 98, 200, 0, 1}));
  EXPECT_EQ(values(data::normalize(x, {10}, {2})), (std::vector<float>{-5, 122.5, 20.5, 46, 0, 5}));
  EXPECT_ERROR_MENTIONS(data::normalize(x, {1, 2}, {1}), "normalize", "2 mean values", "3 channels");
  EXPECT_ERROR_MENTIONS(data::normalize(x, {0}, {0}), "positive std");
  const auto gray = values(data::convert_channels(image({100, 0, 0, 200, 50, 10}, 3, 1, 2), 1));
  EXPECT_NEAR(gray[0], 0.299 * 100 + 0.114 * 50, 1e-4);
  EXPECT_NEAR(gray[1], 0.587 * 200 + 0.114 * 10, 1e-4);
  EXPECT_EQ(values(data::convert_channels(image({1, 2}, 1, 1, 2), 3)), (std::vector<float>{1, 2, 1, 2, 1, 2}));
}

TEST(Transforms, ArgumentsAreChecked) {
  EXPECT_ERROR_MENTIONS(data::flip_horizontal(zeros({4, 4})), "flip_horizontal", "[C, H, W]", "[4, 4]");
  EXPECT_ERROR_MENTIONS(data::rotate(zeros({1, 2, 2}, DType::int64), 5), "affine", "float", "int64");
  EXPECT_ERROR_MENTIONS(data::resize(zeros({1, 2, 2}), 0, 3), "resize", "positive");
  EXPECT_ERROR_MENTIONS(data::parse_fill_mode("mirror"), "mirror", "nearest, constant, reflect or wrap");
  EXPECT_EQ(data::parse_fill_mode("wrap"), FillMode::wrap);
  // float64 images are accepted and come back as float32.
  EXPECT_EQ(data::flip_vertical(ones({1, 2, 1}, DType::float64)).dtype(), DType::float32);
}

}  // namespace
}  // namespace convkit::testing
