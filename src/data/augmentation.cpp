#include "convkit/data/augmentation.h"

#include <cmath>

#include "data/keyed_random.h"
#include "data/pixels.h"

namespace convkit::data {

namespace {

// Fixed word slots per parameter, so turning one option on never changes
// the draws of another.
enum Slot : std::uint64_t {
  kRotation = 0, kShiftX, kShiftY, kShear, kZoomX, kZoomY, kFlipH, kFlipV,
  kCropTop = 4,   // below() pairs: words 8, 9
  kCropLeft = 5,  // words 10, 11
};

bool crop_enabled(const RandomCrop& crop) {
  return crop.padding > 0 || crop.height > 0 || crop.width > 0;
}

double shift_pixels(const detail::KeyedRandom& rng, std::uint64_t slot, double range,
                    std::int64_t size) {
  if (range == 0) return 0;
  const double v = rng.uniform(slot, -range, range);
  return range < 1 ? v * static_cast<double>(size) : v;
}

}  // namespace

bool Augmentation::enabled() const {
  return rotation_range != 0 || width_shift_range != 0 || height_shift_range != 0 ||
         shear_range != 0 || zoom_range[0] != 1 || zoom_range[1] != 1 || horizontal_flip ||
         vertical_flip || crop_enabled(crop);
}

void Augmentation::validate() const {
  const auto non_negative = [](double v, const char* name) {
    CK_CHECK(std::isfinite(v) && v >= 0, "Augmentation: ", name,
             " must be finite and non-negative, got ", v);
  };
  non_negative(rotation_range, "rotation_range");
  non_negative(width_shift_range, "width_shift_range");
  non_negative(height_shift_range, "height_shift_range");
  non_negative(shear_range, "shear_range");
  CK_CHECK(std::isfinite(zoom_range[0]) && std::isfinite(zoom_range[1]) && zoom_range[0] > 0 &&
               zoom_range[0] <= zoom_range[1],
           "Augmentation: zoom_range must be {lo, hi} with 0 < lo <= hi, got {", zoom_range[0],
           ", ", zoom_range[1], "}");
  CK_CHECK(std::isfinite(cval), "Augmentation: cval must be finite, got ", cval);
  CK_CHECK(crop.padding >= 0 && crop.height >= 0 && crop.width >= 0 && std::isfinite(crop.cval),
           "Augmentation: crop needs padding, height, width >= 0 and a finite cval, got padding ",
           crop.padding, " size ", crop.height, "x", crop.width);
}

AugmentDraw Augmentation::draw(std::uint64_t seed, std::uint64_t epoch, std::int64_t index,
                               std::int64_t height, std::int64_t width) const {
  const detail::KeyedRandom rng(seed, detail::Stream::augment, epoch,
                                static_cast<std::uint64_t>(index));
  AugmentDraw d;
  if (rotation_range != 0) d.affine.rotation_deg = rng.uniform(kRotation, -rotation_range, rotation_range);
  d.affine.shift_x = shift_pixels(rng, kShiftX, width_shift_range, width);
  d.affine.shift_y = shift_pixels(rng, kShiftY, height_shift_range, height);
  if (shear_range != 0) d.affine.shear_deg = rng.uniform(kShear, -shear_range, shear_range);
  if (zoom_range[0] != 1 || zoom_range[1] != 1) {
    d.affine.zoom_x = rng.uniform(kZoomX, zoom_range[0], zoom_range[1]);
    d.affine.zoom_y = rng.uniform(kZoomY, zoom_range[0], zoom_range[1]);
  }
  d.flip_horizontal = horizontal_flip && rng.uniform(kFlipH) < 0.5;
  d.flip_vertical = vertical_flip && rng.uniform(kFlipV) < 0.5;
  if (crop_enabled(crop)) {
    const std::int64_t ch = crop.height ? crop.height : height;
    const std::int64_t cw = crop.width ? crop.width : width;
    const std::int64_t room_y = height + 2 * crop.padding - ch;
    const std::int64_t room_x = width + 2 * crop.padding - cw;
    CK_CHECK(room_y >= 0 && room_x >= 0, "Augmentation: a ", ch, "x", cw,
             " random crop does not fit a ", height, "x", width, " image padded by ", crop.padding);
    d.crop_top = static_cast<std::int64_t>(rng.below(kCropTop, static_cast<std::uint64_t>(room_y + 1)));
    d.crop_left = static_cast<std::int64_t>(rng.below(kCropLeft, static_cast<std::uint64_t>(room_x + 1)));
  }
  return d;
}

Tensor Augmentation::apply(const Tensor& image, const AugmentDraw& d) const {
  Tensor out = detail::image_arg(image, "Augmentation::apply");
  if (!d.affine.is_identity()) out = affine(out, d.affine, fill_mode, cval);
  if (d.flip_horizontal) out = flip_horizontal(out);
  if (d.flip_vertical) out = flip_vertical(out);
  if (crop_enabled(crop)) {
    out = pad_crop(out, crop.padding, d.crop_top, d.crop_left,
                   crop.height ? crop.height : out.size(1), crop.width ? crop.width : out.size(2),
                   crop.fill, crop.cval);
  }
  return out;
}

Tensor Augmentation::apply(const Tensor& image, std::uint64_t seed, std::uint64_t epoch,
                           std::int64_t index) const {
  CK_CHECK(image.defined() && image.dim() == 3, "Augmentation::apply: expected an image [C, H, W], got ",
           image.defined() ? image.shape().str() : std::string("an undefined tensor"));
  return apply(image, draw(seed, epoch, index, image.size(1), image.size(2)));
}

}  // namespace convkit::data
