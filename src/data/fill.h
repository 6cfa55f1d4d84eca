#pragma once
// Where a pixel index outside [0, n) reads from, per fill mode.
#include <algorithm>
#include <cstdint>

#include "convkit/data/transforms.h"

namespace convkit::data::detail {

// The in-range index that i stands for, or -1 for FillMode::constant's cval.
inline std::int64_t fill_index(std::int64_t i, std::int64_t n, FillMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case FillMode::nearest: return std::clamp<std::int64_t>(i, 0, n - 1);
    case FillMode::constant: return -1;
    case FillMode::reflect: {  // dcba|abcd|dcba: period 2n
      const std::int64_t m = ((i % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case FillMode::wrap: return ((i % n) + n) % n;
  }
  return -1;
}

}  // namespace convkit::data::detail
