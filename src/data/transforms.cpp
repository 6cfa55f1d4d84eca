// The deterministic image transforms (the affine warp is in affine.cpp).
#include "convkit/data/transforms.h"

#include <cmath>

#include "data/fill.h"
#include "data/pixels.h"

namespace convkit::data {

std::string fill_mode_name(FillMode mode) {
  switch (mode) {
    case FillMode::nearest: return "nearest";
    case FillMode::constant: return "constant";
    case FillMode::reflect: return "reflect";
    case FillMode::wrap: return "wrap";
  }
  return "?";
}

FillMode parse_fill_mode(const std::string& name) {
  for (FillMode m : {FillMode::nearest, FillMode::constant, FillMode::reflect, FillMode::wrap}) {
    if (fill_mode_name(m) == name) return m;
  }
  CK_FAIL("unknown fill mode '", name, "' (expected nearest, constant, reflect or wrap)");
}

std::string interpolation_name(Interpolation interpolation) {
  return interpolation == Interpolation::bilinear ? "bilinear" : "nearest";
}

Interpolation parse_interpolation(const std::string& name) {
  if (name == "bilinear") return Interpolation::bilinear;
  if (name == "nearest") return Interpolation::nearest;
  CK_FAIL("unknown interpolation '", name, "' (expected bilinear or nearest)");
}

Tensor rescale(const Tensor& image, double scale) {
  CK_CHECK(std::isfinite(scale), "rescale: scale must be finite, got ", scale);
  Tensor out = detail::image_arg(image, "rescale").clone();
  float* p = out.data<float>();
  const float s = static_cast<float>(scale);
  for (std::int64_t i = 0, n = out.numel(); i < n; ++i) p[i] *= s;
  return out;
}

Tensor normalize(const Tensor& image, const std::vector<double>& mean,
                 const std::vector<double>& stddev) {
  Tensor out = detail::image_arg(image, "normalize").clone();
  const std::int64_t c = out.size(0), plane = out.size(1) * out.size(2);
  const auto per_channel = [&](const std::vector<double>& v, const char* what) {
    CK_CHECK(v.size() == 1 || static_cast<std::int64_t>(v.size()) == c, "normalize: ", v.size(),
             " ", what, " values for an image of ", c, " channels (shape ", out.shape(),
             "); give 1 or ", c);
  };
  per_channel(mean, "mean");
  per_channel(stddev, "std");
  float* p = out.data<float>();
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const double m = mean[mean.size() == 1 ? 0 : static_cast<std::size_t>(ch)];
    const double s = stddev[stddev.size() == 1 ? 0 : static_cast<std::size_t>(ch)];
    CK_CHECK(s > 0 && std::isfinite(s) && std::isfinite(m), "normalize: channel ", ch,
             " needs a finite mean and a positive std, got mean ", m, " std ", s);
    const float mf = static_cast<float>(m), inv = static_cast<float>(1.0 / s);
    for (std::int64_t i = 0; i < plane; ++i) p[ch * plane + i] = (p[ch * plane + i] - mf) * inv;
  }
  return out;
}

Tensor flip_horizontal(const Tensor& image) {
  Tensor in = detail::image_arg(image, "flip_horizontal");
  Tensor out = Tensor::empty(in.shape(), TensorOptions(DType::float32));
  const std::int64_t rows = in.size(0) * in.size(1), w = in.size(2);
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t x = 0; x < w; ++x) dst[r * w + x] = src[r * w + (w - 1 - x)];
  }
  return out;
}

Tensor flip_vertical(const Tensor& image) {
  Tensor in = detail::image_arg(image, "flip_vertical");
  Tensor out = Tensor::empty(in.shape(), TensorOptions(DType::float32));
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2);
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t ch = 0; ch < c; ++ch) {
    for (std::int64_t y = 0; y < h; ++y) {
      std::copy_n(src + (ch * h + (h - 1 - y)) * w, w, dst + (ch * h + y) * w);
    }
  }
  return out;
}

namespace {

// Source taps and weights along one axis for half-pixel-centre resampling.
struct Taps {
  std::vector<std::int64_t> i0, i1;
  std::vector<float> w1;  // weight of i1; i0 gets 1 - w1
};

Taps bilinear_taps(std::int64_t in, std::int64_t out) {
  Taps t;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (std::int64_t i = 0; i < out; ++i) {
    // Clamped at 0 as PyTorch's align_corners=False does.
    const double src = std::max(0.0, (static_cast<double>(i) + 0.5) * scale - 0.5);
    const std::int64_t lo = std::min(static_cast<std::int64_t>(src), in - 1);
    t.i0.push_back(lo);
    t.i1.push_back(std::min(lo + 1, in - 1));
    t.w1.push_back(static_cast<float>(src - static_cast<double>(lo)));
  }
  return t;
}

Taps nearest_taps(std::int64_t in, std::int64_t out) {
  Taps t;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (std::int64_t i = 0; i < out; ++i) {
    const auto src = std::min(static_cast<std::int64_t>((static_cast<double>(i) + 0.5) * scale), in - 1);
    t.i0.push_back(src);
    t.i1.push_back(src);
    t.w1.push_back(0.0f);
  }
  return t;
}

}  // namespace

Tensor resize(const Tensor& image, std::int64_t height, std::int64_t width,
              Interpolation interpolation) {
  Tensor in = detail::image_arg(image, "resize");
  CK_CHECK(height > 0 && width > 0, "resize: target size must be positive, got ", height, "x",
           width, " for an image of shape ", in.shape());
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2);
  CK_CHECK(h > 0 && w > 0, "resize: cannot resize an empty image of shape ", in.shape());
  if (h == height && w == width) return in.clone();
  const bool bilinear = interpolation == Interpolation::bilinear;
  const Taps ty = bilinear ? bilinear_taps(h, height) : nearest_taps(h, height);
  const Taps tx = bilinear ? bilinear_taps(w, width) : nearest_taps(w, width);
  Tensor out = Tensor::empty(Shape{c, height, width}, TensorOptions(DType::float32));
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const float* plane = src + ch * h * w;
    for (std::int64_t y = 0; y < height; ++y) {
      const float* r0 = plane + ty.i0[y] * w;
      const float* r1 = plane + ty.i1[y] * w;
      const float wy = ty.w1[y];
      float* o = dst + (ch * height + y) * width;
      for (std::int64_t x = 0; x < width; ++x) {
        const float wx = tx.w1[x];
        const float top = r0[tx.i0[x]] + wx * (r0[tx.i1[x]] - r0[tx.i0[x]]);
        const float bottom = r1[tx.i0[x]] + wx * (r1[tx.i1[x]] - r1[tx.i0[x]]);
        o[x] = top + wy * (bottom - top);
      }
    }
  }
  return out;
}

Tensor pad_crop(const Tensor& image, std::int64_t padding, std::int64_t top, std::int64_t left,
                std::int64_t height, std::int64_t width, FillMode fill, double cval) {
  Tensor in = detail::image_arg(image, "pad_crop");
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2);
  CK_CHECK(padding >= 0 && height > 0 && width > 0, "pad_crop: needs padding >= 0 and a positive size, got padding ",
           padding, " size ", height, "x", width);
  CK_CHECK(top >= 0 && left >= 0 && top + height <= h + 2 * padding &&
               left + width <= w + 2 * padding,
           "pad_crop: a ", height, "x", width, " window at (", top, ", ", left,
           ") does not fit an image of shape ", in.shape(), " padded by ", padding);
  Tensor out = Tensor::empty(Shape{c, height, width}, TensorOptions(DType::float32));
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  const float fill_value = static_cast<float>(cval);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    for (std::int64_t y = 0; y < height; ++y) {
      const std::int64_t sy = detail::fill_index(y + top - padding, h, fill);
      for (std::int64_t x = 0; x < width; ++x) {
        const std::int64_t sx = detail::fill_index(x + left - padding, w, fill);
        dst[(ch * height + y) * width + x] =
            (sy < 0 || sx < 0) ? fill_value : src[(ch * h + sy) * w + sx];
      }
    }
  }
  return out;
}

Tensor convert_channels(const Tensor& image, std::int64_t channels) {
  Tensor in = detail::image_arg(image, "convert_channels");
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2), plane = h * w;
  CK_CHECK(channels == 1 || channels == 3, "convert_channels: target must be 1 or 3 channels, got ",
           channels);
  if (c == channels) return in.clone();
  CK_CHECK(c == 1 || c == 3, "convert_channels: cannot convert ", c, " channels (shape ",
           in.shape(), ") to ", channels);
  Tensor out = Tensor::empty(Shape{channels, h, w}, TensorOptions(DType::float32));
  const float* src = in.data<float>();
  float* dst = out.data<float>();
  if (channels == 3) {
    for (std::int64_t ch = 0; ch < 3; ++ch) std::copy_n(src, plane, dst + ch * plane);
  } else {
    for (std::int64_t i = 0; i < plane; ++i) {
      dst[i] = 0.299f * src[i] + 0.587f * src[plane + i] + 0.114f * src[2 * plane + i];
    }
  }
  return out;
}

}  // namespace convkit::data
