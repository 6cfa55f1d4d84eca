#pragma once
// cp.async, the asynchronous global-to-shared copy of sm_80+, in the three
// PTX instructions a multi-stage pipeline needs:
//
//   cp_async<Bytes>(smem, gmem, src_bytes)  cp.async.ca.shared.global, 4, 8 or
//       16 bytes; cp_async_cg(...) is the .cg form (16 bytes, bypasses L1).
//       src_bytes < Bytes copies src_bytes and zero-fills the rest (0: all
//       zeros, gmem is not read): how a tile's ragged edge becomes zeros
//       without a branch around the copy.
//   cp_async16_or_zeros(smem, gmem, copy)  16 bytes, or 16 zeros when !copy
//       (gmem is not read): the ignore-src predicate form. Where a copy is
//       always whole or nothing, it spares what src_bytes costs: ptxas
//       adjusts the source address by the byte count at every copy (about
//       six instructions on sm_90, gemm_tensor_core.cu v5).
//   cp_async_commit()   cp.async.commit_group: closes this thread's open group.
//   cp_async_wait<N>()  cp.async.wait_group N: returns when at most the N
//       newest committed groups of this thread are unfinished.
//
// The bytes a copy writes are visible to the issuing thread after the wait
// that retires its group, and to the other threads of the block only after a
// __syncthreads that follows that wait. Under nvcc (sm_80 and newer) these
// are the real instructions as inline PTX; for older targets, a synchronous
// copy (the waits are then no-ops). Under sim (convkit/sim/async_copy.h) a
// copy is queued and lands at the wait that retires it, never earlier, so a
// missing wait reads stale shared memory and a missing barrier is a race that
// racecheck reports. Both pointers must be aligned to the copy size.
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#if defined(CONVKIT_SIM_KERNEL)
#include "convkit/sim/async_copy.h"
#endif

namespace convkit::CK_GPU_NS::dev {

namespace async_detail {

// An unsigned type of exactly B bytes that g++ moves as one B-byte access, so
// that the sim profile sees one 16-byte access where nvcc issues one.
template <int B>
struct Word;
template <>
struct Word<4> {
  using type = std::uint32_t;
};
template <>
struct Word<8> {
  using type = std::uint64_t;
};
template <>
struct Word<16> {
#if defined(CONVKIT_SIM_KERNEL)
  using type = unsigned __attribute__((vector_size(16)));
#else
  using type = uint4;
#endif
};

template <int Bytes>
__device__ __forceinline__ void copy_now(void* smem, const void* gmem, int src_bytes) {
  using W = typename Word<Bytes>::type;
  if (src_bytes >= Bytes) {
    *static_cast<W*>(smem) = *static_cast<const W*>(gmem);
    return;
  }
  if (src_bytes <= 0) {
    *static_cast<W*>(smem) = W{};
    return;
  }
  for (int i = 0; i < Bytes; ++i)
    static_cast<unsigned char*>(smem)[i] = i < src_bytes ? static_cast<const unsigned char*>(gmem)[i] : 0;
}

#if defined(CONVKIT_SIM_KERNEL)
template <int Bytes>
__device__ __forceinline__ void issue(void* smem, const void* gmem, int src_bytes, const char* file, int line) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  ::convkit::sim::detail::AsyncCopy c;
  c.dst = smem;
  c.bytes = Bytes;
  copy_now<Bytes>(c.data, gmem, src_bytes);  // the read is issued here
  ::convkit::sim::detail::async_copy_issue(c, file, line);
}

template <int Bytes>
__device__ __forceinline__ void land(const ::convkit::sim::detail::AsyncCopy& c) {
  using W = typename Word<Bytes>::type;
  *static_cast<W*>(c.dst) = *reinterpret_cast<const W*>(c.data);
}
#endif

}  // namespace async_detail

#if defined(CONVKIT_SIM_KERNEL)

template <int Bytes>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem, int src_bytes,
                                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  async_detail::issue<Bytes>(smem, gmem, src_bytes, file, line);
}
__device__ __forceinline__ void cp_async_cg(void* smem, const void* gmem, int src_bytes,
                                            const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  async_detail::issue<16>(smem, gmem, src_bytes, file, line);
}
__device__ __forceinline__ void cp_async16_or_zeros(void* smem, const void* gmem, bool copy,
                                                    const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  async_detail::issue<16>(smem, gmem, copy ? 16 : 0, file, line);
}
__device__ __forceinline__ void cp_async_commit(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::convkit::sim::detail::async_copy_commit(file, line);
}
template <int N>
__device__ __forceinline__ void cp_async_wait(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  std::size_t count = 0;
  const ::convkit::sim::detail::AsyncCopy* done = ::convkit::sim::detail::async_copy_retire(N, &count, file, line);
  // Each size lands through its own store, so the profile groups the lanes'
  // stores of one size into warp requests as it would the hardware's.
  for (std::size_t i = 0; i < count; ++i) {
    if (done[i].bytes == 16) async_detail::land<16>(done[i]);
    else if (done[i].bytes == 8) async_detail::land<8>(done[i]);
    else async_detail::land<4>(done[i]);
  }
}

#else  // nvcc

template <int Bytes>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem, int src_bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem), "n"(Bytes), "r"(src_bytes)
               : "memory");
#else
  async_detail::copy_now<Bytes>(smem, gmem, src_bytes);
#endif
}
__device__ __forceinline__ void cp_async_cg(void* smem, const void* gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
#else
  async_detail::copy_now<16>(smem, gmem, src_bytes);
#endif
}
__device__ __forceinline__ void cp_async16_or_zeros(void* smem, const void* gmem, bool copy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile(
      "{\n .reg .pred ignore;\n setp.eq.u32 ignore, %2, 0;\n"
      " cp.async.ca.shared.global [%0], [%1], 16, ignore;\n}\n" ::"r"(s),
      "l"(gmem), "r"(static_cast<unsigned>(copy))
      : "memory");
#else
  async_detail::copy_now<16>(smem, gmem, copy ? 16 : 0);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

#endif

}  // namespace convkit::CK_GPU_NS::dev
