#pragma once
// Small helpers shared by the readers: bytes -> image tensors, hex dumps.
#include <cstdint>
#include <string>

#include "convkit/core/shape.h"
#include "convkit/core/tensor.h"

namespace convkit::data::detail {

// A new float32 cpu tensor of `shape` holding the bytes' values 0..255.
Tensor bytes_to_image(const std::uint8_t* bytes, const Shape& shape);

// "00 00 08 03"
std::string hex_bytes(const std::uint8_t* bytes, std::size_t n);

// The image's float32 cpu contiguous form, checked to be [C, H, W].
Tensor image_arg(const Tensor& image, const char* op);

}  // namespace convkit::data::detail
