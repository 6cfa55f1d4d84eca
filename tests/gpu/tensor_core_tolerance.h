#pragma once
// How far a tensor-core result may be from the float64 reference: a float32
// sum of products whose operands were first rounded to a unit roundoff u
// (tf32: 2^-11, bf16: 2^-8). Each product of two rounded operands is off by at
// most 2u + u^2 relative, and the float32 accumulation of `terms` products
// adds at most (terms + 2) * 2^-24 relative to their magnitude sum|a||b|
// (one term for the last rounding, one for a bias or beta term). The bound
// is the worst case, so a failure is a bug; at the test sizes it is still
// ~1e-3 relative, where an indexing bug is O(1).
#include <cstdint>

namespace convkit::testing {

inline constexpr double kTf32Unit = 0x1p-11;
inline constexpr double kBf16Unit = 0x1p-8;

inline double rounded_operand_bound(double magnitude, std::int64_t terms, double unit) {
  return magnitude * (2 * unit + unit * unit + static_cast<double>(terms + 2) * 0x1p-24);
}

}  // namespace convkit::testing
