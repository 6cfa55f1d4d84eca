#pragma once
// wgmma, the warpgroup tensor-core instruction of sm_90a (Hopper), as device
// functions spelled the same under nvcc (inline PTX) and under sim
// (convkit/sim/wgmma.h, which holds the layouts and the emulation's rules):
//
//   dev::wgmma_descriptor(addr, lbo, sbo, swizzle)  the 64-bit shared-memory
//       matrix descriptor of an operand: its start address, leading and
//       stride byte offsets (multiples of 16), and swizzle mode
//   dev::shared_address(p)        p's shared-memory address (what a
//       descriptor holds; under sim sim::dynamic_shared_address() plus the
//       offset into dynamic shared memory)
//   dev::wgmma_fence()            wgmma.fence.sync.aligned: before the first
//       wgmma, and after the accumulators were written by other instructions
//   dev::wgmma_m64n128k8_tf32(d, desc_a, desc_b, accumulate)
//       wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32: d (64 floats
//       per thread) = A (64x8, K-major) * B (8x128, K-major) + (accumulate ? d : 0)
//   dev::wgmma_m64n128k16_bf16(d, desc_a, desc_b, accumulate)
//       wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16, both operands
//       K-major (no transpose): the same with A 64x16 and B 16x128 in bf16
//   dev::wgmma_commit()           wgmma.commit_group.sync.aligned
//   dev::wgmma_wait<N>()          wgmma.wait_group.sync.aligned N
//   dev::wgmma_fence_operands<N>(d)  no instruction: keeps the compiler from
//       moving other uses of the N accumulators across it; the kernels put it
//       around each stage's wgmma (before the fence, after the commit) and
//       between the last wait and the code that reads the accumulators, as
//       CUTLASS does
//   dev::fence_proxy_async()      fence.proxy.async.shared::cta: makes this
//       thread's ordinary shared-memory writes visible to wgmma's operand
//       reads (the async proxy), before the barrier that publishes them
//   dev::wgmma_tf32_stage(d, a_rows, b_rows)  a stage of 32 k in tf32 from
//       128-byte swizzled rows: four m64n128k8, fenced and committed
//
// All but the descriptor, the address and the proxy fence are
// warpgroup-collective: the 128 threads of the warpgroup call them together.
// Under nvcc they exist only when compiling for sm_90a
// (__CUDA_ARCH_FEAT_SM90_ALL); elsewhere they trap, and a kernel that uses
// them must not be launched (convkit::device_runs_wgmma says where it may).
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#if defined(CONVKIT_SIM_KERNEL)
#include "convkit/sim/wgmma.h"
#endif

#if !defined(CONVKIT_SIM_KERNEL) && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CK_WGMMA_PTX 1
#endif

namespace convkit::CK_GPU_NS::dev {

// The descriptor's swizzle (layout type), bits 62..63.
enum class WgmmaSwizzle : std::uint64_t { none = 0, bytes128 = 1, bytes64 = 2, bytes32 = 3 };

// Fields in bytes; each is stored >> 4 in 14 bits (addresses below 256 KB).
__host__ __device__ constexpr std::uint64_t wgmma_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                             std::uint32_t stride_bytes, WgmmaSwizzle swizzle) {
  return static_cast<std::uint64_t>((address >> 4) & 0x3fffu) |
         static_cast<std::uint64_t>((leading_bytes >> 4) & 0x3fffu) << 16 |
         static_cast<std::uint64_t>((stride_bytes >> 4) & 0x3fffu) << 32 |
         static_cast<std::uint64_t>(swizzle) << 62;
}

// The descriptor of a K-major operand stored as rows of 128 bytes in the
// 128-byte swizzle (16-byte unit c of row x at unit c ^ (x % 8)), starting
// `address` bytes into shared memory: 8-row atoms 1024 bytes apart (SBO),
// the leading offset unused by this swizzle (16). A k-slice that starts b
// bytes into the rows starts its descriptor at address + b; the hardware
// applies the swizzle to the address, so the rows' first byte sits on a
// multiple of 1024 bytes of shared address (wgmma_aligned).
__host__ __device__ constexpr std::uint64_t swizzle128_descriptor(std::uint32_t address) {
  return wgmma_descriptor(address, 16, 1024, WgmmaSwizzle::bytes128);
}

#if defined(CONVKIT_SIM_KERNEL)

__device__ __forceinline__ std::uint32_t shared_address(const void* p, const char* file = __builtin_FILE(),
                                                        int line = __builtin_LINE()) {
  return ::convkit::sim::detail::shared_offset(p, file, line);
}
__device__ __forceinline__ void wgmma_fence(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::convkit::sim::detail::wgmma_fence(file, line);
}
__device__ __forceinline__ void wgmma_commit(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::convkit::sim::detail::wgmma_commit(file, line);
}
template <int N>
__device__ __forceinline__ void wgmma_wait(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::convkit::sim::detail::wgmma_wait(N, file, line);
}
__device__ __forceinline__ void fence_proxy_async(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::convkit::sim::detail::fence_proxy_async(file, line);
}
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float*) {}
__device__ __forceinline__ void wgmma_m64n128k8_tf32(float* d, std::uint64_t desc_a, std::uint64_t desc_b,
                                                     bool accumulate, const char* file = __builtin_FILE(),
                                                     int line = __builtin_LINE()) {
  const ::convkit::sim::WgmmaLane lane{d, desc_a, desc_b, 128, ::convkit::sim::WgmmaType::tf32, accumulate};
  ::convkit::sim::detail::wgmma_issue(lane, file, line);
}
__device__ __forceinline__ void wgmma_m64n128k16_bf16(float* d, std::uint64_t desc_a, std::uint64_t desc_b,
                                                      bool accumulate, const char* file = __builtin_FILE(),
                                                      int line = __builtin_LINE()) {
  const ::convkit::sim::WgmmaLane lane{d, desc_a, desc_b, 128, ::convkit::sim::WgmmaType::bf16, accumulate};
  ::convkit::sim::detail::wgmma_issue(lane, file, line);
}

#else

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void wgmma_fence() {
#if defined(CK_WGMMA_PTX)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(CK_WGMMA_PTX)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(CK_WGMMA_PTX)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void fence_proxy_async() {
#if defined(CK_WGMMA_PTX)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// The 64 accumulators of an m64n128 wgmma, as asm operands %0..%63 (tied in
// and out) and as their names in the instruction's register list.
#define CK_WGMMA_D_REGS "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define CK_WGMMA_D_OPERANDS(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// The wgmma asm statements tie the accumulators in and out, but nothing ties
// them to the wait: without this, nvcc may read them before it.
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float* d) {
  CK_UNROLL
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The accumulators are tied in and out ("+f"): wgmma reads them (when
// accumulating) and writes them, asynchronously; the kernel must not touch
// them until the wgmma.wait_group that retires this instruction.
__device__ __forceinline__ void wgmma_m64n128k8_tf32(float* d, std::uint64_t desc_a, std::uint64_t desc_b,
                                                     bool accumulate) {
#if defined(CK_WGMMA_PTX)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{" CK_WGMMA_D_REGS "}, %64, %65, p, 1, 1;\n"
      "}\n"
      : CK_WGMMA_D_OPERANDS(d)
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
#else
  (void)d, (void)desc_a, (void)desc_b, (void)accumulate;
  __trap();
#endif
}

__device__ __forceinline__ void wgmma_m64n128k16_bf16(float* d, std::uint64_t desc_a, std::uint64_t desc_b,
                                                      bool accumulate) {
#if defined(CK_WGMMA_PTX)
  // The last two immediates: A and B not transposed (K-major).
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{" CK_WGMMA_D_REGS "}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : CK_WGMMA_D_OPERANDS(d)
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
#else
  (void)d, (void)desc_a, (void)desc_b, (void)accumulate;
  __trap();
#endif
}

#endif

// One stage's products in tf32: the four m64n128k8 of 32 k, both operands
// rows of 128 bytes in the 128-byte swizzle starting at shared addresses
// a_rows (64 rows) and b_rows (128 rows), k-slice j 32 bytes into the rows;
// fenced around and committed as one group. Warpgroup-collective.
__device__ __forceinline__ void wgmma_tf32_stage(float* acc, std::uint32_t a_rows, std::uint32_t b_rows) {
  wgmma_fence_operands<64>(acc);
  wgmma_fence();
  CK_UNROLL
  for (int j = 0; j < 4; ++j)
    wgmma_m64n128k8_tf32(acc, swizzle128_descriptor(a_rows + 32 * j), swizzle128_descriptor(b_rows + 32 * j), true);
  wgmma_commit();
  wgmma_fence_operands<64>(acc);
}

// Dynamic shared memory from its first multiple of 1024 bytes of shared
// address, where the 128-byte swizzle's atoms must start (the swizzles work
// on address bits 4..9). A kernel asks for 1024 bytes more than it uses.
__device__ __forceinline__ unsigned char* wgmma_aligned(unsigned char* raw) {
  return raw + (1024 - shared_address(raw) % 1024) % 1024;
}

}  // namespace convkit::CK_GPU_NS::dev
