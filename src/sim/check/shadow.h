#pragma once
// Shadow memory for the sim checks: one byte per 8-byte granule of the address
// space, at CONVKIT_SIM_SHADOW_OFFSET + address / 8, read by the instrumented
// kernels before every access (GCC's kernel-address instrumentation; see
// cmake/ConvkitSimCheck.cmake).
//
//   0          nothing to check: the kernel goes on without a call.
//   1..7       only the first n bytes of the granule are in bounds (the tail
//              of an exact-sized allocation); the compiled check calls the
//              checker only for an access past them.
//   kTracked   in bounds, but racecheck or initcheck must see every access.
//   kGuard     a guard zone: any access is out of bounds.
//   0xF1-0xF3  the redzones that instrumented kernels put around their local
//              arrays on entry and take away on return (GCC's asan-stack).
// Any non-zero value the compiled check cannot clear calls the checker
// (access_hooks.cpp), which then decides with the exact bounds of the region.
#include <cstddef>
#include <cstdint>

namespace convkit::sim::detail {

inline constexpr std::size_t kGranule = 8;
inline constexpr unsigned char kShadowTracked = 0xE1;
inline constexpr unsigned char kShadowGuard = 0xEA;

inline bool is_stack_redzone(unsigned char shadow) { return shadow >= 0xF1 && shadow <= 0xF3; }

// Whether this build has shadow memory (the kernels were instrumented) and
// it is mapped.
bool shadow_available();
// Why the sim kernels cannot run in this process: they are instrumented but
// the shadow could not be reserved. nullptr when they can.
const char* shadow_unusable_reason();

// The shadow byte of the granule holding `address` (0 without shadow memory).
unsigned char shadow_byte(std::uintptr_t address);
// Sets the shadow of the granules that [begin, begin + bytes) touches.
void shadow_fill(std::uintptr_t begin, std::size_t bytes, unsigned char value);
// Marks [begin, begin + bytes) in bounds; `begin` is granule-aligned. Untracked
// memory gets zeros and, for a partial last granule, its count of valid bytes.
void shadow_mark_body(std::uintptr_t begin, std::size_t bytes, bool tracked);

}  // namespace convkit::sim::detail
