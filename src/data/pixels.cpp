#include "data/pixels.h"

#include <cstdio>

namespace convkit::data::detail {

Tensor bytes_to_image(const std::uint8_t* bytes, const Shape& shape) {
  Tensor t = Tensor::empty(shape, TensorOptions(DType::float32));
  float* out = t.data<float>();
  const std::int64_t n = shape.numel();
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(bytes[i]);
  return t;
}

std::string hex_bytes(const std::uint8_t* bytes, std::size_t n) {
  std::string s;
  char buf[4];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    if (i) s += ' ';
    s += buf;
  }
  return s;
}

Tensor image_arg(const Tensor& image, const char* op) {
  CK_CHECK(image.defined(), op, ": the image is an undefined tensor");
  CK_CHECK(image.dim() == 3, op, ": expected an image [C, H, W], got shape ", image.shape());
  CK_CHECK(is_floating(image.dtype()), op, ": expected a float image, got ", image.dtype(),
           " of shape ", image.shape());
  CK_CHECK(image.device() == kCPU, op, ": expects a cpu image, got one on ", image.device(),
           " (shape ", image.shape(), "); augment before moving to the device");
  Tensor t = image.dtype() == DType::float32 ? image : image.to(DType::float32);
  return t.contiguous();
}

}  // namespace convkit::data::detail
