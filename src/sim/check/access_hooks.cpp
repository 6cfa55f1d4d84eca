// The entry points that instrumented kernels call (GCC's kernel-address
// instrumentation, cmake/ConvkitSimCheck.cmake), and the one atomics.h calls.
//
// The compiler inlines the common case: it reads the shadow byte of the
// address and goes on when it is zero. Only a non-zero byte it cannot clear
// calls __asan_report_*, which here means "judge this access" rather than
// "report an error": the block's checker decides (block_checker.h). With
// -fsanitize-recover the access then happens as written; when it must not, the
// checker stops the CUDA thread first. Sizes other than 1, 2, 4, 8 and 16
// bytes (and builds that prefer calls) come through __asan_{load,store}*.
//
// These functions must not throw: the compiler calls them as nothrow.
#include <cstddef>
#include <cstdint>

#include "convkit/sim/atomics.h"
#include "sim/block_scheduler.h"
#include "sim/check/shadow.h"

#if defined(CONVKIT_SIM_SHADOW_OFFSET)

namespace convkit::sim::detail {
namespace {

bool shadow_clear(std::uintptr_t address, std::size_t size) {
  for (std::uintptr_t g = address / kGranule; g <= (address + size - 1) / kGranule; ++g) {
    if (*reinterpret_cast<const unsigned char*>(CONVKIT_SIM_SHADOW_OFFSET + g) != 0) return false;
  }
  return true;
}

void judge(std::uintptr_t address, std::size_t size, AccessKind kind, const void* pc) {
  BlockScheduler* scheduler = BlockScheduler::running();
  // Host code in a kernel file, or a launch without checks: nothing to judge.
  if (scheduler == nullptr || size == 0) return;
  scheduler->check_access(address, size, kind, pc);
}

}  // namespace

void atomic_access(const void* address, std::size_t size, const void* pc) {
  judge(reinterpret_cast<std::uintptr_t>(address), size, AccessKind::atomic, pc);
}

}  // namespace convkit::sim::detail

using convkit::sim::detail::AccessKind;
using convkit::sim::detail::judge;
using convkit::sim::detail::shadow_clear;

#define CK_SIM_ACCESS_HOOKS(size)                                                          \
  extern "C" void __asan_report_load##size##_noabort(std::uintptr_t a) {                   \
    judge(a, size, AccessKind::read, __builtin_return_address(0));                         \
  }                                                                                        \
  extern "C" void __asan_report_store##size##_noabort(std::uintptr_t a) {                  \
    judge(a, size, AccessKind::write, __builtin_return_address(0));                        \
  }                                                                                        \
  extern "C" void __asan_load##size##_noabort(std::uintptr_t a) {                          \
    if (!shadow_clear(a, size)) judge(a, size, AccessKind::read, __builtin_return_address(0)); \
  }                                                                                        \
  extern "C" void __asan_store##size##_noabort(std::uintptr_t a) {                         \
    if (!shadow_clear(a, size)) judge(a, size, AccessKind::write, __builtin_return_address(0)); \
  }
CK_SIM_ACCESS_HOOKS(1)
CK_SIM_ACCESS_HOOKS(2)
CK_SIM_ACCESS_HOOKS(4)
CK_SIM_ACCESS_HOOKS(8)
CK_SIM_ACCESS_HOOKS(16)
#undef CK_SIM_ACCESS_HOOKS

extern "C" void __asan_report_load_n_noabort(std::uintptr_t a, std::size_t n) {
  judge(a, n, AccessKind::read, __builtin_return_address(0));
}
extern "C" void __asan_report_store_n_noabort(std::uintptr_t a, std::size_t n) {
  judge(a, n, AccessKind::write, __builtin_return_address(0));
}
extern "C" void __asan_loadN_noabort(std::uintptr_t a, std::size_t n) {
  if (n != 0 && !shadow_clear(a, n)) judge(a, n, AccessKind::read, __builtin_return_address(0));
}
extern "C" void __asan_storeN_noabort(std::uintptr_t a, std::size_t n) {
  if (n != 0 && !shadow_clear(a, n)) judge(a, n, AccessKind::write, __builtin_return_address(0));
}
// Emitted before calls that do not return; ASan uses it to unpoison the stack,
// and sim puts nothing on stacks.
extern "C" void __asan_handle_no_return() {}

#endif
