#pragma once
// Random augmentation, the random half of Keras' ImageDataGenerator. Every
// random choice for a sample is drawn from Philox keyed by
// (seed, epoch, dataset index), never from a shared generator, so a sample's
// augmentation is the same whichever thread prepares it and in whatever order.
#include <array>
#include <cstdint>

#include "convkit/core/tensor.h"
#include "convkit/data/transforms.h"

namespace convkit::data {

// Random crop with padding (torchvision RandomCrop(size, padding)); applied last.
struct RandomCrop {
  std::int64_t padding = 0;
  std::int64_t height = 0, width = 0;  // 0: the input's size
  FillMode fill = FillMode::constant;
  double cval = 0;
};

// The parameters drawn for one sample.
struct AugmentDraw {
  AffineParams affine;
  bool flip_horizontal = false;
  bool flip_vertical = false;
  std::int64_t crop_top = 0, crop_left = 0;
};

struct Augmentation {
  // Keras ImageDataGenerator options, same meaning and distributions:
  double rotation_range = 0;      // degrees; uniform(-r, r)
  double width_shift_range = 0;   // uniform(-r, r) of the width if r < 1, else pixels
  double height_shift_range = 0;  // likewise of the height
  double shear_range = 0;         // degrees; uniform(-r, r)
  // zoom_x and zoom_y each uniform(lo, hi), independently. Keras'
  // zoom_range=z is {1 - z, 1 + z}: see zoom().
  std::array<double, 2> zoom_range{1, 1};
  bool horizontal_flip = false;   // each with probability 1/2
  bool vertical_flip = false;
  FillMode fill_mode = FillMode::nearest;
  double cval = 0;                // for fill_mode constant, in raw pixel units
  // Not in Keras: applied after the warp and flips when padding > 0 or its
  // size differs from the image.
  RandomCrop crop;

  static std::array<double, 2> zoom(double z) { return {1 - z, 1 + z}; }
  bool enabled() const;  // false when every option is off: apply() copies nothing
  void validate() const;  // throws Error naming a bad option

  // The draws for image `index` in `epoch`, for an input of height x width.
  AugmentDraw draw(std::uint64_t seed, std::uint64_t epoch, std::int64_t index,
                   std::int64_t height, std::int64_t width) const;
  // Warp, then flips, then crop, with the given draws.
  Tensor apply(const Tensor& image, const AugmentDraw& draw) const;
  Tensor apply(const Tensor& image, std::uint64_t seed, std::uint64_t epoch,
               std::int64_t index) const;
};

}  // namespace convkit::data
