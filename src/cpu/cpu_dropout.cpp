// Dropout mask from the Philox stream (philox_lanes.h). A uniform
// u = (word >> 8) / 2^24 is at least p exactly when the integer (word >> 8)
// is at least ceil(p * 2^24) (p * 2^24 is exact in double), so the test is
// done on integers.
#include <cmath>
#include <cstdint>

#include "cpu/cpu_backend.h"
#include "cpu/philox_lanes.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

void CpuBackend::dropout_mask(const Tensor& out, std::uint64_t seed, std::uint64_t offset,
                              double p) {
  // p in [0, 1]; p = 1 gives 2^24, above every (word >> 8), so nothing is kept.
  const auto threshold = static_cast<std::uint32_t>(std::ceil(p * 16777216.0));  // 2^24
  dispatch_floating(out.dtype(), "dropout_mask", [&]<typename T>() {
    T* mp = out.data<T>();
    // p = 1 keeps nothing; 0, not inf, so that keep * 0 below stays 0.
    const T keep = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    for_each_philox_group(seed, offset, static_cast<std::uint64_t>(out.numel()), 16384,
                          [&](const std::uint32_t* words, std::uint64_t first, std::uint64_t begin, std::uint64_t end) {
                            // Multiplying by the 0/1 test instead of branching: the outcome is a coin flip.
                            for (std::uint64_t e = begin; e < end; ++e)
                              mp[e - offset] = keep * static_cast<T>((words[e - first] >> 8) >= threshold);
                          });
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
