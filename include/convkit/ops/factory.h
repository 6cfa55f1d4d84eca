#pragma once
// Tensor factories. Random ones draw from the Philox generator (convkit::manual_seed).
#include <cstdint>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit {

Tensor empty(const Shape& shape, TensorOptions opts = {});
Tensor zeros(const Shape& shape, TensorOptions opts = {});
Tensor ones(const Shape& shape, TensorOptions opts = {});
Tensor full(const Shape& shape, double value, TensorOptions opts = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
// [start, end) with step; the length is ceil((end - start) / step).
Tensor arange(double start, double end, double step = 1, TensorOptions opts = {});
Tensor arange(double end, TensorOptions opts = {});
Tensor rand(const Shape& shape, TensorOptions opts = {});   // uniform [0, 1)
Tensor randn(const Shape& shape, TensorOptions opts = {});  // standard normal
Tensor uniform(const Shape& shape, double lo, double hi, TensorOptions opts = {});
Tensor normal(const Shape& shape, double mean, double std, TensorOptions opts = {});
// Copies host values into a new tensor; values.size() must equal shape.numel().
// The dtype is opts' when given; otherwise float32 for float and double
// values, and int64 for int64 values (class labels stay integers).
Tensor from_vector(const std::vector<float>& values, const Shape& shape, TensorOptions opts = {});
Tensor from_vector(const std::vector<double>& values, const Shape& shape, TensorOptions opts = {});
Tensor from_vector(const std::vector<std::int64_t>& values, const Shape& shape,
                   TensorOptions opts = {});
// Integers drawn uniformly from [low, high), int64 unless opts give a dtype.
// Needs high - low <= 2^52 (the draws are float64 uniforms, floored).
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, TensorOptions opts = {});
Tensor scalar_tensor(double value, TensorOptions opts = {});

// The process-wide Philox generator: a seed and an offset that every random
// draw advances by its element count (rounded up to a Philox block).
struct Generator {
  std::uint64_t seed = 0x5EEDC0DE;
  std::uint64_t offset = 0;
  // Reserves n elements; returns the offset they start at.
  std::uint64_t reserve(std::uint64_t n);
};
Generator& default_generator();
void manual_seed(std::uint64_t seed);  // also resets the offset

}  // namespace convkit
