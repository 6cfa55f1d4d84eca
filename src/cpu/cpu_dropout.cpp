// Dropout mask from the Philox stream. A uniform u = (word >> 8) / 2^24 is at
// least p exactly when the integer (word >> 8) is at least ceil(p * 2^24)
// (p * 2^24 is exact in double), so the test is done on integers; one Philox
// block yields the words of four consecutive elements.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "convkit/core/philox.h"
#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu {

void CpuBackend::dropout_mask(const Tensor& out, std::uint64_t seed, std::uint64_t offset,
                              double p) {
  // p in [0, 1]; p = 1 gives 2^24, above every (word >> 8), so nothing is kept.
  const auto threshold = static_cast<std::uint32_t>(std::ceil(p * 16777216.0));  // 2^24
  dispatch_floating(out.dtype(), "dropout_mask", [&]<typename T>() {
    T* mp = out.data<T>();
    const T keep = static_cast<T>(1.0 / (1.0 - p));
    const std::int64_t n = out.numel();
    constexpr std::int64_t kChunk = 4096;  // a multiple of 4: blocks do not straddle chunks
    const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      const std::int64_t begin = chunk * kChunk, end = std::min(n, begin + kChunk);
      philox::U32x4 words{};
      std::uint64_t block = ~std::uint64_t{0};
      for (std::int64_t i = begin; i < end; ++i) {
        const std::uint64_t e = offset + static_cast<std::uint64_t>(i);
        if (e / 4 != block) {
          block = e / 4;
          words = philox::block_words(seed, block);
        }
        mp[i] = (words.v[e % 4] >> 8) >= threshold ? keep : T(0);
      }
    }
  });
}

}  // namespace convkit::cpu
