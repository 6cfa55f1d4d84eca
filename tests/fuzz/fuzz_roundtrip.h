#pragma once
// What a reader accepted, its writer must write, and the reader must read
// back the same: a mismatch between the two is a bug even where neither
// crashes (a file convkit loads but cannot save, or saves differently).
#include <cstdlib>
#include <cstring>

#include "convkit/core/dtype.h"
#include "convkit/nn/state_dict.h"

namespace convkit::fuzz {

// Same names, shapes, dtypes and bytes, in order; aborts otherwise.
inline void require_same(const StateDict& a, const StateDict& b) {
  if (a.size() != b.size()) std::abort();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor x = a[i].second.contiguous(), y = b[i].second.contiguous();
    if (a[i].first != b[i].first || x.shape() != y.shape() || x.dtype() != y.dtype()) std::abort();
    const std::size_t bytes = static_cast<std::size_t>(x.numel()) * dtype_size(x.dtype());
    if (bytes && std::memcmp(x.raw_data(), y.raw_data(), bytes) != 0) std::abort();
  }
}

}  // namespace convkit::fuzz
