#pragma once
// How sim kernels count their multiply-adds for the performance model
// (profile.h). The emulator sees memory accesses but not arithmetic, so the
// kernels say where they do it: dev::fma (kernels/device_math.cuh) calls
// count_fmas(1). While no profile runs this is a test of a flag and a branch
// that is never taken; the count itself is a cold call, out of line.
//
// The flag is a plain bool, not an atomic: g++ may then keep its value in a
// register between the kernel's calls, where an atomic load is made at every
// multiply-add. It only changes between launches (set_profiling). Measured
// choices are in docs/sim.md ("What the profile costs").
#include <cstdint>

namespace convkit::sim::detail {

// True while profiling is on (profile.cpp keeps it).
extern bool counting_arithmetic;
// Adds to the running block's count; nothing outside a kernel.
[[gnu::cold]] void add_fmas(std::uint64_t n);

inline void count_fmas(std::uint64_t n) {
  if (__builtin_expect(counting_arithmetic, false)) add_fmas(n);
}

}  // namespace convkit::sim::detail
