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
#include <cstdint>

namespace convkit::sim::detail {

inline constexpr int kOrder = __ATOMIC_SEQ_CST;

// Replaces *address with update(old) atomically and returns old. The loop only
// repeats when another OS thread changed the value in between.
template <typename T, typename Update>
T atomic_update(T* address, Update update) {
  T expected = __atomic_load_n(address, kOrder);
  while (
      !__atomic_compare_exchange_n(address, &expected, update(expected), false, kOrder, kOrder)) {
  }
  return expected;
}

// Floating-point read-modify-write through the same-sized unsigned integer.
template <typename Float, typename Bits, typename Update>
Float atomic_update_float(Float* address, Update update) {
  Bits* bits = reinterpret_cast<Bits*>(address);
  const Bits old = atomic_update(
      bits, [&](Bits b) { return std::bit_cast<Bits>(update(std::bit_cast<Float>(b))); });
  return std::bit_cast<Float>(old);
}

// Stores `val` if *a == compare; returns the old value either way.
template <typename T>
T compare_and_swap(T* a, T compare, T val) {
  __atomic_compare_exchange_n(a, &compare, val, false, kOrder, kOrder);
  return compare;  // on failure the builtin wrote the current value here
}

}  // namespace convkit::sim::detail

// ---- add / sub
inline int atomicAdd(int* a, int v) {
  return __atomic_fetch_add(a, v, convkit::sim::detail::kOrder);
}
inline unsigned atomicAdd(unsigned* a, unsigned v) {
  return __atomic_fetch_add(a, v, convkit::sim::detail::kOrder);
}
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  return __atomic_fetch_add(a, v, convkit::sim::detail::kOrder);
}
inline float atomicAdd(float* a, float v) {
  return convkit::sim::detail::atomic_update_float<float, std::uint32_t>(
      a, [v](float old) { return old + v; });
}
inline double atomicAdd(double* a, double v) {
  return convkit::sim::detail::atomic_update_float<double, std::uint64_t>(
      a, [v](double old) { return old + v; });
}
inline int atomicSub(int* a, int v) {
  return __atomic_fetch_sub(a, v, convkit::sim::detail::kOrder);
}
inline unsigned atomicSub(unsigned* a, unsigned v) {
  return __atomic_fetch_sub(a, v, convkit::sim::detail::kOrder);
}

// ---- exchange / compare-and-swap
inline int atomicExch(int* a, int v) {
  return __atomic_exchange_n(a, v, convkit::sim::detail::kOrder);
}
inline unsigned atomicExch(unsigned* a, unsigned v) {
  return __atomic_exchange_n(a, v, convkit::sim::detail::kOrder);
}
inline unsigned long long atomicExch(unsigned long long* a, unsigned long long v) {
  return __atomic_exchange_n(a, v, convkit::sim::detail::kOrder);
}
inline float atomicExch(float* a, float v) {
  return std::bit_cast<float>(__atomic_exchange_n(reinterpret_cast<std::uint32_t*>(a),
                                                  std::bit_cast<std::uint32_t>(v),
                                                  convkit::sim::detail::kOrder));
}

inline int atomicCAS(int* a, int compare, int val) {
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}
inline unsigned atomicCAS(unsigned* a, unsigned compare, unsigned val) {
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long compare,
                                    unsigned long long val) {
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short compare, unsigned short val) {
  return convkit::sim::detail::compare_and_swap(a, compare, val);
}

// ---- min / max
#define CK_SIM_ATOMIC_MINMAX(type)                                                              \
  inline type atomicMin(type* a, type v) {                                                      \
    return convkit::sim::detail::atomic_update(a, [v](type old) { return v < old ? v : old; }); \
  }                                                                                             \
  inline type atomicMax(type* a, type v) {                                                      \
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
inline unsigned atomicInc(unsigned* a, unsigned limit) {
  return convkit::sim::detail::atomic_update(
      a, [limit](unsigned old) { return old >= limit ? 0u : old + 1; });
}
inline unsigned atomicDec(unsigned* a, unsigned limit) {
  return convkit::sim::detail::atomic_update(
      a, [limit](unsigned old) { return (old == 0 || old > limit) ? limit : old - 1; });
}

// ---- bitwise
#define CK_SIM_ATOMIC_BITWISE(type)                                \
  inline type atomicAnd(type* a, type v) {                         \
    return __atomic_fetch_and(a, v, convkit::sim::detail::kOrder); \
  }                                                                \
  inline type atomicOr(type* a, type v) {                          \
    return __atomic_fetch_or(a, v, convkit::sim::detail::kOrder);  \
  }                                                                \
  inline type atomicXor(type* a, type v) {                         \
    return __atomic_fetch_xor(a, v, convkit::sim::detail::kOrder); \
  }
CK_SIM_ATOMIC_BITWISE(int)
CK_SIM_ATOMIC_BITWISE(unsigned)
CK_SIM_ATOMIC_BITWISE(unsigned long long)
#undef CK_SIM_ATOMIC_BITWISE
