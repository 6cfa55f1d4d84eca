// One bilinear affine warp for rotation, shift, shear and zoom (Keras'
// apply_affine_transform with order=1), and the single-purpose wrappers.
#include <cmath>
#include <numbers>

#include "convkit/data/transforms.h"
#include "data/fill.h"
#include "data/pixels.h"

namespace convkit::data {

namespace {

// Whole-pixel coordinates computed through sin/cos land within ~1e-15 of the
// integer; snapping them makes quarter turns and whole shifts exact.
double snap(double v) {
  const double r = std::nearbyint(v);
  return std::abs(v - r) < 1e-9 ? r : v;
}

}  // namespace

bool AffineParams::is_identity() const {
  return rotation_deg == 0 && shift_x == 0 && shift_y == 0 && shear_deg == 0 && zoom_x == 1 &&
         zoom_y == 1;
}

Tensor affine(const Tensor& image, const AffineParams& p, FillMode fill, double cval) {
  Tensor in = detail::image_arg(image, "affine");
  for (double v : {p.rotation_deg, p.shift_x, p.shift_y, p.shear_deg, p.zoom_x, p.zoom_y, cval}) {
    CK_CHECK(std::isfinite(v), "affine: parameters must be finite (rotation ", p.rotation_deg,
             ", shift ", p.shift_x, ",", p.shift_y, ", shear ", p.shear_deg, ", zoom ", p.zoom_x,
             ",", p.zoom_y, ", cval ", cval, ")");
  }
  if (p.is_identity()) return in.clone();
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2);

  // Output -> input map, in (x, y) about the centre: M = R * Sh * Z, applied
  // to the output offset with the shift taken off first, so the content
  // moves by exactly (shift_x, shift_y) after rotating.
  const double th = p.rotation_deg * std::numbers::pi / 180;
  const double sh = p.shear_deg * std::numbers::pi / 180;
  const double r00 = std::cos(th), r01 = -std::sin(th), r10 = std::sin(th), r11 = std::cos(th);
  const double s01 = -std::sin(sh), s11 = std::cos(sh);  // Sh = [[1, s01], [0, s11]]
  // R * Sh
  const double a00 = r00, a01 = r00 * s01 + r01 * s11;
  const double a10 = r10, a11 = r10 * s01 + r11 * s11;
  // (R * Sh) * Z
  const double m00 = a00 * p.zoom_x, m01 = a01 * p.zoom_y;
  const double m10 = a10 * p.zoom_x, m11 = a11 * p.zoom_y;
  const double cx = (static_cast<double>(w) - 1) / 2, cy = (static_cast<double>(h) - 1) / 2;

  Tensor out = Tensor::empty(in.shape(), TensorOptions(DType::float32));
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  const std::int64_t plane = h * w;
  for (std::int64_t y = 0; y < h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      const double ox = static_cast<double>(x) - cx - p.shift_x;
      const double oy = static_cast<double>(y) - cy - p.shift_y;
      const double sx = snap(m00 * ox + m01 * oy + cx);
      const double sy = snap(m10 * ox + m11 * oy + cy);
      const double fx0 = std::floor(sx), fy0 = std::floor(sy);
      const auto x0 = static_cast<std::int64_t>(fx0), y0 = static_cast<std::int64_t>(fy0);
      const double wx = sx - fx0, wy = sy - fy0;
      const std::int64_t xs[2] = {detail::fill_index(x0, w, fill), detail::fill_index(x0 + 1, w, fill)};
      const std::int64_t ys[2] = {detail::fill_index(y0, h, fill), detail::fill_index(y0 + 1, h, fill)};
      const double wxs[2] = {1 - wx, wx}, wys[2] = {1 - wy, wy};
      for (std::int64_t ch = 0; ch < c; ++ch) {
        double v = 0;
        for (int j = 0; j < 2; ++j) {
          if (wys[j] == 0) continue;
          for (int i = 0; i < 2; ++i) {
            if (wxs[i] == 0) continue;
            const double tap =
                (ys[j] < 0 || xs[i] < 0) ? cval : src[ch * plane + ys[j] * w + xs[i]];
            v += wys[j] * wxs[i] * tap;
          }
        }
        dst[ch * plane + y * w + x] = static_cast<float>(v);
      }
    }
  }
  return out;
}

Tensor rotate(const Tensor& image, double degrees, FillMode fill, double cval) {
  AffineParams p;
  p.rotation_deg = degrees;
  return affine(image, p, fill, cval);
}

Tensor shift(const Tensor& image, double dx, double dy, FillMode fill, double cval) {
  AffineParams p;
  p.shift_x = dx;
  p.shift_y = dy;
  return affine(image, p, fill, cval);
}

Tensor zoom(const Tensor& image, double zoom_x, double zoom_y, FillMode fill, double cval) {
  AffineParams p;
  p.zoom_x = zoom_x;
  p.zoom_y = zoom_y;
  return affine(image, p, fill, cval);
}

Tensor shear(const Tensor& image, double degrees, FillMode fill, double cval) {
  AffineParams p;
  p.shear_deg = degrees;
  return affine(image, p, fill, cval);
}

}  // namespace convkit::data
