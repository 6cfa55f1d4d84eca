#include <convkit/data/augmentation.h>

#include <algorithm>

#include "data_files.h"

namespace convkit::testing {
namespace {

using data::Augmentation;
using data::AugmentDraw;

Augmentation everything() {
  Augmentation a;
  a.rotation_range = 20;
  a.width_shift_range = 0.1;
  a.height_shift_range = 3;
  a.shear_range = 10;
  a.zoom_range = Augmentation::zoom(0.2);
  a.horizontal_flip = true;
  a.vertical_flip = true;
  a.crop.padding = 2;
  return a;
}

bool same(const AugmentDraw& a, const AugmentDraw& b) {
  return a.affine.rotation_deg == b.affine.rotation_deg && a.affine.shift_x == b.affine.shift_x &&
         a.affine.shift_y == b.affine.shift_y && a.affine.shear_deg == b.affine.shear_deg &&
         a.affine.zoom_x == b.affine.zoom_x && a.affine.zoom_y == b.affine.zoom_y &&
         a.flip_horizontal == b.flip_horizontal && a.flip_vertical == b.flip_vertical &&
         a.crop_top == b.crop_top && a.crop_left == b.crop_left;
}

TEST(Augmentation, DrawsDependOnlyOnSeedEpochAndIndex) {
  const Augmentation a = everything();
  EXPECT_TRUE(same(a.draw(1, 2, 3, 30, 40), a.draw(1, 2, 3, 30, 40)));
  EXPECT_FALSE(same(a.draw(1, 2, 3, 30, 40), a.draw(1, 2, 4, 30, 40)));
  EXPECT_FALSE(same(a.draw(1, 2, 3, 30, 40), a.draw(1, 3, 3, 30, 40)));
  EXPECT_FALSE(same(a.draw(1, 2, 3, 30, 40), a.draw(2, 2, 3, 30, 40)));
  // Each option has its own draw: turning others off leaves it unchanged.
  Augmentation rotation_only;
  rotation_only.rotation_range = 20;
  EXPECT_EQ(rotation_only.draw(1, 2, 3, 30, 40).affine.rotation_deg,
            a.draw(1, 2, 3, 30, 40).affine.rotation_deg);
  EXPECT_TRUE(rotation_only.draw(1, 2, 3, 30, 40).affine.zoom_x == 1);
}

TEST(Augmentation, DistributionsFollowKeras) {
  const Augmentation a = everything();
  constexpr int n = 4000;
  double rot_min = 1e9, rot_max = -1e9, sx_max = 0, sy_max = 0, zoom_min = 9, zoom_max = 0, rot_sum = 0;
  int flips_h = 0, flips_v = 0, zoom_equal = 0;
  std::vector<int> tops(5, 0);
  for (int i = 0; i < n; ++i) {
    const AugmentDraw d = a.draw(42, 0, i, 30, 40);
    rot_min = std::min(rot_min, d.affine.rotation_deg);
    rot_max = std::max(rot_max, d.affine.rotation_deg);
    rot_sum += d.affine.rotation_deg;
    sx_max = std::max(sx_max, std::abs(d.affine.shift_x));
    sy_max = std::max(sy_max, std::abs(d.affine.shift_y));
    ASSERT_LE(std::abs(d.affine.shear_deg), 10);
    for (double z : {d.affine.zoom_x, d.affine.zoom_y}) {
      zoom_min = std::min(zoom_min, z);
      zoom_max = std::max(zoom_max, z);
    }
    zoom_equal += d.affine.zoom_x == d.affine.zoom_y;
    flips_h += d.flip_horizontal;
    flips_v += d.flip_vertical;
    ASSERT_GE(d.crop_top, 0);
    ASSERT_LE(d.crop_top, 4);
    ASSERT_GE(d.crop_left, 0);
    ASSERT_LE(d.crop_left, 4);
    ++tops[static_cast<std::size_t>(d.crop_top)];
  }
  EXPECT_GE(rot_min, -20);
  EXPECT_LE(rot_max, 20);
  EXPECT_LT(rot_min, -19);
  EXPECT_GT(rot_max, 19);
  EXPECT_NEAR(rot_sum / n, 0, 0.6);
  // width_shift_range 0.1 of 40 columns: up to 4 pixels; height_shift_range 3: pixels.
  EXPECT_LE(sx_max, 4);
  EXPECT_GT(sx_max, 3.9);
  EXPECT_LE(sy_max, 3);
  EXPECT_GT(sy_max, 2.9);
  EXPECT_GE(zoom_min, 0.8);
  EXPECT_LE(zoom_max, 1.2);
  EXPECT_LT(zoom_min, 0.81);
  EXPECT_GT(zoom_max, 1.19);
  EXPECT_EQ(zoom_equal, 0);  // zoom_x and zoom_y are drawn independently
  EXPECT_NEAR(flips_h, n / 2, n / 20);
  EXPECT_NEAR(flips_v, n / 2, n / 20);
  for (int t : tops) EXPECT_NEAR(t, n / 5, n / 20);
}

TEST(Augmentation, ApplyComposesWarpFlipsThenCrop) {
  const Augmentation a = everything();
  Tensor x = Tensor::empty(Shape{2, 6, 7});
  float* p = x.data<float>();
  for (int i = 0; i < 84; ++i) p[i] = static_cast<float>((i * 37) % 101);
  for (std::int64_t index = 0; index < 8; ++index) {
    const AugmentDraw d = a.draw(5, 1, index, 6, 7);
    Tensor want = data::affine(x, d.affine, a.fill_mode, a.cval);
    if (d.flip_horizontal) want = data::flip_horizontal(want);
    if (d.flip_vertical) want = data::flip_vertical(want);
    want = data::pad_crop(want, 2, d.crop_top, d.crop_left, 6, 7);
    EXPECT_EQ(a.apply(x, 5, 1, index).to_vector<float>(), want.to_vector<float>()) << index;
  }
}

TEST(Augmentation, OffByDefaultAndValidated) {
  const Augmentation off;
  EXPECT_FALSE(off.enabled());
  const Tensor x = ones({1, 3, 3});
  EXPECT_EQ(off.apply(x, 1, 2, 3).to_vector<float>(), x.to_vector<float>());
  EXPECT_TRUE(everything().enabled());
  Augmentation bad;
  bad.rotation_range = -1;
  EXPECT_ERROR_MENTIONS(bad.validate(), "rotation_range", "-1");
  bad = Augmentation{};
  bad.zoom_range = {1.2, 0.8};
  EXPECT_ERROR_MENTIONS(bad.validate(), "zoom_range");
  bad = Augmentation{};
  bad.crop.height = 10;
  EXPECT_ERROR_MENTIONS(bad.draw(0, 0, 0, 4, 4), "random crop does not fit");
}

}  // namespace
}  // namespace convkit::testing
