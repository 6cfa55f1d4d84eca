#pragma once
// Image transforms on one float32 cpu image [C, H, W] (any layout; the result
// is a new contiguous tensor). Deterministic: the random choices live in
// Augmentation (convkit/data/augmentation.h), which calls these with drawn
// parameters. Each maps onto a Keras ImageDataGenerator option; docs/data.md
// has the table.
//
// Coordinates: x is the column (right), y the row (down), and geometric
// transforms act about the image centre ((W-1)/2, (H-1)/2), as in Keras.
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit::data {

// How a sample outside the image is filled (Keras fill_mode):
//   nearest   aaaa|abcd|dddd   (Keras' default)
//   constant  kkkk|abcd|kkkk   (k = cval)
//   reflect   dcba|abcd|dcba
//   wrap      abcd|abcd|abcd
enum class FillMode { nearest, constant, reflect, wrap };
enum class Interpolation { bilinear, nearest };

std::string fill_mode_name(FillMode mode);
FillMode parse_fill_mode(const std::string& name);  // throws Error on an unknown name
std::string interpolation_name(Interpolation interpolation);
Interpolation parse_interpolation(const std::string& name);

// x * scale (Keras rescale=...).
Tensor rescale(const Tensor& image, double scale);
// (x - mean[c]) / std[c] per channel; one value applies to every channel
// (Keras featurewise_center + featurewise_std_normalization).
Tensor normalize(const Tensor& image, const std::vector<double>& mean,
                 const std::vector<double>& stddev);

// Reverses the columns (horizontal_flip) or the rows (vertical_flip).
Tensor flip_horizontal(const Tensor& image);
Tensor flip_vertical(const Tensor& image);

// Resize to [C, height, width] with half-pixel centres (align_corners=False,
// no antialiasing): output pixel i samples input coordinate
// (i + 0.5) * in / out - 0.5. Same size returns an identical copy.
Tensor resize(const Tensor& image, std::int64_t height, std::int64_t width,
              Interpolation interpolation = Interpolation::bilinear);

// The parameters of one affine warp. The image is zoomed, sheared and rotated
// about its centre, then translated:
//   rotation_deg  counter-clockwise as displayed (y down)
//   shift_x/y     pixels the content moves right / down
//   shear_deg     Keras' shear: x' = x - sin(s) y, y' = cos(s) y (output->input)
//   zoom_x/y      Keras' zoom: output samples the input at zoom * offset from
//                 the centre, so zoom < 1 magnifies
struct AffineParams {
  double rotation_deg = 0;
  double shift_x = 0, shift_y = 0;
  double shear_deg = 0;
  double zoom_x = 1, zoom_y = 1;
  bool is_identity() const;
};

// One bilinear warp (Keras apply_affine_transform with order=1). Sample
// coordinates within 1e-9 of a whole pixel are snapped to it, so whole-pixel
// shifts and quarter-turn rotations of a square image reproduce pixels exactly.
Tensor affine(const Tensor& image, const AffineParams& params,
              FillMode fill = FillMode::nearest, double cval = 0);
Tensor rotate(const Tensor& image, double degrees, FillMode fill = FillMode::nearest,
              double cval = 0);
Tensor shift(const Tensor& image, double dx, double dy, FillMode fill = FillMode::nearest,
             double cval = 0);
Tensor zoom(const Tensor& image, double zoom_x, double zoom_y,
            FillMode fill = FillMode::nearest, double cval = 0);
Tensor shear(const Tensor& image, double degrees, FillMode fill = FillMode::nearest,
             double cval = 0);

// Pads by `padding` on every side, then takes the [height, width] window whose
// top-left corner is (top, left) in the padded image; top in
// [0, H + 2 padding - height]. Padding is filled by `fill`
// (torchvision RandomCrop(size, padding) with fixed offsets).
Tensor pad_crop(const Tensor& image, std::int64_t padding, std::int64_t top, std::int64_t left,
                std::int64_t height, std::int64_t width, FillMode fill = FillMode::constant,
                double cval = 0);

// 3 -> 1 channels by ITU-R 601-2 luma (0.299 R + 0.587 G + 0.114 B, as
// PIL's convert("L") without its rounding), 1 -> 3 by repetition.
Tensor convert_channels(const Tensor& image, std::int64_t channels);

}  // namespace convkit::data
