#pragma once
// Block barriers and warp-wide built-ins for the sim backend.
//
// Every built-in takes two hidden trailing parameters, the caller's file and
// line (filled in by __builtin_FILE/__builtin_LINE), so that a divergent barrier
// or a deadlock can be reported at the kernel's own source lines.
//
// Semantics follow the CUDA programming guide for compute capability 7.0+
// (independent thread scheduling):
//  - __syncthreads waits for every thread of the block that has not exited.
//  - A warp built-in waits for the lanes named in `mask` that have not exited;
//    lanes past the end of a partial warp count as exited. The calling lane must
//    be in its mask.
//  - A shuffle that reads a lane which is not taking part (not in the mask,
//    exited, or past the end of the warp) is undefined in CUDA; here it returns
//    all-one bytes (NaN for float, -1 for int), so that such a read shows up.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "convkit/sim/builtin_variables.h"
#include "convkit/sim/runtime.h"

namespace convkit::sim::detail {

template <typename T>
inline constexpr bool kShuffleable = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;

template <typename T>
std::uint64_t to_bits(const T& value) {
  static_assert(kShuffleable<T>,
                "warp built-ins carry trivially copyable values of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <typename T>
T from_bits(std::uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// Reductions and matches compare operands as 32- or 64-bit patterns; sign
// extension keeps min/max of signed values right.
inline std::uint64_t signed_bits(int value) {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
}

}  // namespace convkit::sim::detail

// ---- block barriers

inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using convkit::sim::detail::BarrierKind;
  convkit::sim::detail::block_barrier(BarrierKind::plain, 1, file, line);
}
// Number of threads whose predicate is non-zero.
inline int __syncthreads_count(int predicate, const char* file = __builtin_FILE(),
                               int line = __builtin_LINE()) {
  using convkit::sim::detail::BarrierKind;
  return convkit::sim::detail::block_barrier(BarrierKind::count, predicate, file, line);
}
// Non-zero when every thread's predicate is non-zero.
inline int __syncthreads_and(int predicate, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  using convkit::sim::detail::BarrierKind;
  return convkit::sim::detail::block_barrier(BarrierKind::all, predicate, file, line);
}
// Non-zero when any thread's predicate is non-zero.
inline int __syncthreads_or(int predicate, const char* file = __builtin_FILE(),
                            int line = __builtin_LINE()) {
  using convkit::sim::detail::BarrierKind;
  return convkit::sim::detail::block_barrier(BarrierKind::any, predicate, file, line);
}

// ---- warp barrier and votes

inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  using convkit::sim::detail::WarpOpKind;
  convkit::sim::detail::warp_op(WarpOpKind::sync, mask, 0, 0, 32, file, line);
}

inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  using convkit::sim::detail::WarpOpKind;
  return static_cast<unsigned>(
      convkit::sim::detail::warp_op(WarpOpKind::ballot, mask, predicate != 0, 0, 32, file, line));
}

inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  using convkit::sim::detail::WarpOpKind;
  return static_cast<int>(
      convkit::sim::detail::warp_op(WarpOpKind::any, mask, predicate != 0, 0, 32, file, line));
}

inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  using convkit::sim::detail::WarpOpKind;
  return static_cast<int>(
      convkit::sim::detail::warp_op(WarpOpKind::all, mask, predicate != 0, 0, 32, file, line));
}

// CUDA promises only that the calling lane is in __activemask(); which other
// lanes happen to run in step with it is up to the hardware. The emulator has no
// notion of lanes running in step, so it returns just the calling lane. Code
// that passes __activemask() to a shuffle therefore stays correct (it never
// waits for a lane that will not come), and code that wrongly assumes the whole
// warp is active gets a visibly different answer.
inline unsigned __activemask() { return convkit::sim::detail::active_mask(); }

// ---- shuffles. T is any trivially copyable type of at most 8 bytes.

template <typename T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace convkit::sim::detail;
  return from_bits<T>(
      warp_op(WarpOpKind::shfl_idx, mask, to_bits(var), srcLane, width, file, line));
}

template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace convkit::sim::detail;
  return from_bits<T>(
      warp_op(WarpOpKind::shfl_up, mask, to_bits(var), static_cast<int>(delta), width, file, line));
}

template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = warpSize,
                   const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace convkit::sim::detail;
  return from_bits<T>(warp_op(WarpOpKind::shfl_down, mask, to_bits(var), static_cast<int>(delta),
                              width, file, line));
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace convkit::sim::detail;
  return from_bits<T>(
      warp_op(WarpOpKind::shfl_xor, mask, to_bits(var), laneMask, width, file, line));
}

// ---- matches (sm_70+): lanes whose values are bit-for-bit equal.

template <typename T>
unsigned __match_any_sync(unsigned mask, T value, const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  using namespace convkit::sim::detail;
  return static_cast<unsigned>(
      warp_op(WarpOpKind::match_any, mask, to_bits(value), 0, 32, file, line));
}

// Returns `mask` with *pred = 1 when every taking-part lane holds the same
// value, else 0 with *pred = 0.
template <typename T>
unsigned __match_all_sync(unsigned mask, T value, int* pred, const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  using namespace convkit::sim::detail;
  const auto result = static_cast<unsigned>(
      warp_op(WarpOpKind::match_all, mask, to_bits(value), 0, 32, file, line));
  *pred = result != 0;
  return result;
}

// ---- warp reductions (sm_80+).

#define CK_SIM_WARP_REDUCE(name, type, kind, to_operand)                           \
  inline type name(unsigned mask, type value, const char* file = __builtin_FILE(), \
                   int line = __builtin_LINE()) {                                  \
    using namespace convkit::sim::detail;                                          \
    return static_cast<type>(                                                      \
        warp_op(WarpOpKind::kind, mask, to_operand(value), 0, 32, file, line));    \
  }
#define CK_SIM_UNSIGNED_OPERAND(v) static_cast<std::uint64_t>(v)
#define CK_SIM_SIGNED_OPERAND(v) signed_bits(v)
CK_SIM_WARP_REDUCE(__reduce_add_sync, unsigned, reduce_add, CK_SIM_UNSIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_add_sync, int, reduce_add, CK_SIM_SIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_min_sync, unsigned, reduce_min_unsigned, CK_SIM_UNSIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_min_sync, int, reduce_min_signed, CK_SIM_SIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_max_sync, unsigned, reduce_max_unsigned, CK_SIM_UNSIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_max_sync, int, reduce_max_signed, CK_SIM_SIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_and_sync, unsigned, reduce_and, CK_SIM_UNSIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_or_sync, unsigned, reduce_or, CK_SIM_UNSIGNED_OPERAND)
CK_SIM_WARP_REDUCE(__reduce_xor_sync, unsigned, reduce_xor, CK_SIM_UNSIGNED_OPERAND)
#undef CK_SIM_WARP_REDUCE
#undef CK_SIM_UNSIGNED_OPERAND
#undef CK_SIM_SIGNED_OPERAND
