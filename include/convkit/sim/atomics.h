#pragma once
// CUDA's atomic functions for the sim backend.
//
// Blocks really do run at the same time on different OS threads, so these must
// be real atomics: they map onto the GCC __atomic builtins with sequentially
// consistent ordering (at least as strong as CUDA's relaxed device-scope
// atomics). Float and double addition have no hardware fetch-add on x86, so
// they loop on compare-and-swap of the bit pattern. Each returns the old value,
// as in CUDA.
#include <bit>
#include <cstddef>
#include <cstdint>

// Under the sim checks (convkit/sim/check.h) atomics are bounds-checked but
// exempt from racecheck, so they keep out of the compiler's instrumentation
// (CK_SIM_UNCHECKED) and report themselves (note_atomic), from a function of
// their own so that the return address is the kernel's line.
#if defined(CONVKIT_SIM_SHADOW_OFFSET)
#define CK_SIM_UNCHECKED __attribute__((no_sanitize_address))
#define CK_SIM_ATOMIC __attribute__((no_sanitize_address, noinline))
#else
#define CK_SIM_UNCHECKED
#define CK_SIM_ATOMIC
#endif

namespace convkit::sim::detail {

inline constexpr int kOrder = __ATOMIC_SEQ_CST;

#if defined(CONVKIT_SIM_SHADOW_OFFSET)
void atomic_access(const void* address, std::size_t size, const void* pc);
#define CK_SIM_NOTE_ATOMIC(address)                                                           \
  do {                                                                                        \
    const auto bits_ = reinterpret_cast<std::uintptr_t>(address);                             \
    if (*reinterpret_cast<const unsigned char*>(CONVKIT_SIM_SHADOW_OFFSET + (bits_ >> 3)) != 0) \
      ::convkit::sim::detail::atomic_access(address, sizeof(*(address)),                      \
                                            __builtin_return_address(0));                     \
  } while (0)
#else
#define CK_SIM_NOTE_ATOMIC(address) \
  do {                              \
  } while (0)
#endif

// Replaces *address with update(old) atomically and returns old. The loop only
// repeats when another OS thread changed the value in between.
template <typename T, typename Update>
CK_SIM_UNCHECKED T atomic_update(T* address, Update update) {
  T expected = __atomic_load_n(address, kOrder);
  while (
      !__atomic_compare_exchange_n(address, &expected, update(expected), false, kOrder, kOrder)) {
  }
  return expected;
}

// Floating-point read-modify-write through the same-sized unsigned integer.
template <typename Float, typename Bits, typename Update>
CK_SIM_UNCHECKED Float atomic_update_float(Float* address, Update update) {
  Bits* bits = reinterpret_cast<Bits*>(address);
  const Bits old = atomic_update(
      bits, [&](Bits b) { return std::bit_cast<Bits>(update(std::bit_cast<Float>(b))); });
  return std::bit_cast<Float>(old);
}

// Stores `val` if *a == compare; returns the old value either way.
template <typename T>
CK_SIM_UNCHECKED T compare_and_swap(T* a, T compare, T val) {
  __atomic_compare_exchange_n(a, &compare, val, false, kOrder, kOrder);
  return compare;  // on failure the builtin wrote the current value here
}

}  // namespace convkit::sim::detail

// ---- add / sub
CK_SIM_ATOMIC inline int atomicAdd(int* a, int v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_fetch_add(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline unsigned atomicAdd(unsigned* a, unsigned v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_fetch_add(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_fetch_add(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline float atomicAdd(float* a, float v) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::atomic_update_float<float, std::uint32_t>(
      a, [v](float old) { return old + v; });
}
CK_SIM_ATOMIC inline double atomicAdd(double* a, double v) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::atomic_update_float<double, std::uint64_t>(
      a, [v](double old) { return old + v; });
}
CK_SIM_ATOMIC inline int atomicSub(int* a, int v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_fetch_sub(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline unsigned atomicSub(unsigned* a, unsigned v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_fetch_sub(a, v, convkit::sim::detail::kOrder);
}

// ---- exchange / compare-and-swap
CK_SIM_ATOMIC inline int atomicExch(int* a, int v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_exchange_n(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline unsigned atomicExch(unsigned* a, unsigned v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_exchange_n(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline unsigned long long atomicExch(unsigned long long* a, unsigned long long v) {
  CK_SIM_NOTE_ATOMIC(a);
  return __atomic_exchange_n(a, v, convkit::sim::detail::kOrder);
}
CK_SIM_ATOMIC inline float atomicExch(float* a, float v) {
  CK_SIM_NOTE_ATOMIC(a);
  return std::bit_cast<float>(__atomic_exchange_n(reinterpret_cast<std::uint32_t*>(a),
                                                  std::bit_cast<std::uint32_t>(v),
                                                  convkit::sim::detail::kOrder));
}

CK_SIM_ATOMIC inline int atomicCAS(int* a, int compare, int val) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}
CK_SIM_ATOMIC inline unsigned atomicCAS(unsigned* a, unsigned compare, unsigned val) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}
CK_SIM_ATOMIC inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long compare,
                                                  unsigned long long val) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}
CK_SIM_ATOMIC inline unsigned short atomicCAS(unsigned short* a, unsigned short compare,
                                             unsigned short val) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}

// ---- min / max
#define CK_SIM_ATOMIC_MINMAX(type)                                                              \
  CK_SIM_ATOMIC inline type atomicMin(type* a, type v) {                                        \
    CK_SIM_NOTE_ATOMIC(a);                                                                      \
    return convkit::sim::detail::atomic_update(a, [v](type old) { return v < old ? v : old; }); \
  }                                                                                             \
  CK_SIM_ATOMIC inline type atomicMax(type* a, type v) {                                        \
    CK_SIM_NOTE_ATOMIC(a);                                                                      \
    return convkit::sim::detail::atomic_update(a, [v](type old) { return v > old ? v : old; }); \
  }
CK_SIM_ATOMIC_MINMAX(int)
CK_SIM_ATOMIC_MINMAX(unsigned)
CK_SIM_ATOMIC_MINMAX(long long)
CK_SIM_ATOMIC_MINMAX(unsigned long long)
#undef CK_SIM_ATOMIC_MINMAX

// ---- wrapping increment / decrement, as CUDA defines them:
//   atomicInc: old >= limit ? 0 : old + 1
//   atomicDec: (old == 0 || old > limit) ? limit : old - 1
CK_SIM_ATOMIC inline unsigned atomicInc(unsigned* a, unsigned limit) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::atomic_update(
      a, [limit](unsigned old) { return old >= limit ? 0u : old + 1; });
}
CK_SIM_ATOMIC inline unsigned atomicDec(unsigned* a, unsigned limit) {
  CK_SIM_NOTE_ATOMIC(a);
  return convkit::sim::detail::atomic_update(
      a, [limit](unsigned old) { return (old == 0 || old > limit) ? limit : old - 1; });
}

// ---- bitwise
#define CK_SIM_ATOMIC_BITWISE(type)                                \
  CK_SIM_ATOMIC inline type atomicAnd(type* a, type v) {           \
    CK_SIM_NOTE_ATOMIC(a);                                         \
    return __atomic_fetch_and(a, v, convkit::sim::detail::kOrder); \
  }                                                                \
  CK_SIM_ATOMIC inline type atomicOr(type* a, type v) {            \
    CK_SIM_NOTE_ATOMIC(a);                                         \
    return __atomic_fetch_or(a, v, convkit::sim::detail::kOrder);  \
  }                                                                \
  CK_SIM_ATOMIC inline type atomicXor(type* a, type v) {           \
    CK_SIM_NOTE_ATOMIC(a);                                         \
    return __atomic_fetch_xor(a, v, convkit::sim::detail::kOrder); \
  }
CK_SIM_ATOMIC_BITWISE(int)
CK_SIM_ATOMIC_BITWISE(unsigned)
CK_SIM_ATOMIC_BITWISE(unsigned long long)
#undef CK_SIM_ATOMIC_BITWISE
