#pragma once
// The sim runtime's entry points: running a grid, and the calls that the
// built-ins in sync.h make into the scheduler. Kernel authors do not use this
// header directly; they include cuda_compat.h and call launch(). Tests and tools
// may use run_grid() and dynamic_shared_bytes().
#include <cstddef>
#include <cstdint>

#include "convkit/sim/vector_types.h"

namespace convkit::sim {

// Runs `body(closure)` once per CUDA thread of the grid. Blocks are spread over
// the OpenMP threads; the threads of a block are fibers on one OS thread.
// Returns when every block has finished. Throws convkit::Error for a bad
// configuration, for a deadlock or divergent barrier detected in a block, and for
// an exception escaping a kernel thread (rethrown with the block and thread that
// threw it); the remaining blocks are then skipped.
struct GridLaunch {
  const void* kernel = nullptr;  // the __global__ function, named in check reports
  dim3 grid;
  dim3 block;
  std::size_t dynamic_shared_bytes = 0;
  void (*body)(const void* closure) = nullptr;
  const void* closure = nullptr;
};
void run_grid(const GridLaunch& launch);

// The running block's dynamic shared memory: an exact-size heap buffer, 16-byte
// aligned, filled with 0xFF bytes (a NaN for float, -1 for integers) at the start
// of every block, so reading before writing shows up. Being heap memory of the
// exact size, AddressSanitizer reports any overrun. Only valid inside a kernel.
void* dynamic_shared_memory();
std::size_t dynamic_shared_bytes();

// Device memory (cudaMalloc/cudaFree for sim): host memory a kernel can use.
// While a sim check (check.h) or the profile (profile.h) is on, an allocation
// is exact-sized between guard zones; otherwise it is rounded up to 256 bytes. Throws when out of memory.
void* global_allocate(std::size_t nbytes);
void global_free(void* p);

// Limits that run_grid enforces, the same as current NVIDIA GPUs.
inline constexpr unsigned kMaxThreadsPerBlock = 1024;
inline constexpr unsigned kMaxBlockDimZ = 64;
inline constexpr unsigned kMaxGridDimX = 2147483647u;
inline constexpr unsigned kMaxGridDimYZ = 65535;
inline constexpr std::size_t kMaxDynamicSharedBytes = 227 * 1024;  // sm_90 with opt-in
// Above this a GPU refuses the launch unless the kernel opted in first
// (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize),
// which convkit::allow_dynamic_shared calls), and so does sim.
inline constexpr std::size_t kDefaultDynamicSharedBytes = 48 * 1024;

// The sim counterpart of that attribute: `kernel` may take up to `bytes` of
// dynamic shared memory from now on. Throws above kMaxDynamicSharedBytes.
void set_max_dynamic_shared_bytes(const void* kernel, std::size_t bytes);

namespace detail {

// __syncthreads and its predicate forms. Returns the count, and or or of the
// predicates of all threads, depending on the kind (0 for plain).
enum class BarrierKind { plain, count, all, any };
int block_barrier(BarrierKind kind, int predicate, const char* file, int line);

// Every warp-wide built-in. The lanes named in `mask` meet; the last one to
// arrive computes each lane's result. `value` carries the lane's operand (up to
// 8 bytes), `arg` the source lane, delta or lane mask of a shuffle, `width` the
// shuffle segment width.
enum class WarpOpKind {
  sync,
  shfl_idx,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  any,
  all,
  match_any,
  match_all,
  reduce_add,
  reduce_min_signed,
  reduce_max_signed,
  reduce_min_unsigned,
  reduce_max_unsigned,
  reduce_and,
  reduce_or,
  reduce_xor,
  // mma.sync: `value` points at the lane's MmaLane (mma.h), `arg` is the MmaShape.
  mma,
  // wgmma (wgmma.h): `value` points at the lane's WgmmaLane for the issue;
  // `arg` is the wait's count of groups left pending.
  wgmma_fence,
  wgmma,
  wgmma_commit,
  wgmma_wait,
};
std::uint64_t warp_op(WarpOpKind kind, unsigned mask, std::uint64_t value, int arg, int width,
                      const char* file, int line);

// The lanes that __activemask() may claim: just the calling lane (see sync.h).
unsigned active_mask();

// __trap(): ends the launch with an error naming the call site.
[[noreturn]] void trap(const char* file, int line);

// The built-in name of a warp operation, for messages ("__shfl_xor_sync").
const char* warp_op_name(WarpOpKind kind);

}  // namespace detail
}  // namespace convkit::sim
