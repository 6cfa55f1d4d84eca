#pragma once
// How sim kernels count their multiply-adds for the performance model
// (profile.h). The emulator sees memory accesses but not arithmetic, so the
// kernels say where they do it: dev::fma (kernels/device_math.cuh) calls
// count_fmas(1). While no profile runs this is one relaxed load and a branch
// that is never taken; the count itself goes out of line.
#include <atomic>
#include <cstdint>

namespace convkit::sim::detail {

// True while profiling is on (profile.cpp keeps it).
extern std::atomic<bool> counting_arithmetic;
// Adds to the running block's count; nothing outside a kernel.
void add_fmas(std::uint64_t n);

inline void count_fmas(std::uint64_t n) {
  if (__builtin_expect(counting_arithmetic.load(std::memory_order_relaxed), false)) add_fmas(n);
}

}  // namespace convkit::sim::detail
