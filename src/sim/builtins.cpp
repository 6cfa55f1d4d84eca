// The functions behind the kernel built-ins (runtime.h): each finds the block
// running on this OS thread and hands the call to its scheduler.
#include "convkit/core/error.h"
#include "convkit/sim/runtime.h"
#include "convkit/sim/shared_array.h"
#include "sim/block_scheduler.h"

namespace convkit::sim {
namespace {

detail::BlockScheduler& running_block(const char* builtin) {
  detail::BlockScheduler* scheduler = detail::BlockScheduler::running();
  CK_CHECK(scheduler != nullptr, builtin,
           " called outside a kernel: built-ins work only in code run by launch()");
  return *scheduler;
}

}  // namespace

void* dynamic_shared_memory() {
  return running_block("dynamic shared memory (CK_DYNAMIC_SHARED)").dynamic_shared_memory();
}

std::size_t dynamic_shared_bytes() {
  return running_block("dynamic_shared_bytes").dynamic_shared_bytes();
}

namespace detail {

void* shared_array_storage(std::size_t bytes, const char* file, int line) {
  return running_block("a __shared__ SharedArray").shared_array_storage(bytes, file, line);
}

int block_barrier(BarrierKind kind, int predicate, const char* file, int line) {
  return running_block("__syncthreads").block_barrier(kind, predicate, SourceSite{file, line});
}

std::uint64_t warp_op(WarpOpKind kind, unsigned mask, std::uint64_t value, int arg, int width,
                      const char* file, int line) {
  return running_block(warp_op_name(kind))
      .warp_op(kind, mask, value, arg, width, SourceSite{file, line});
}

unsigned active_mask() { return running_block("__activemask").active_mask(); }

void trap(const char* file, int line) { CK_FAIL("__trap() called at ", file, ":", line); }

}  // namespace detail
}  // namespace convkit::sim
