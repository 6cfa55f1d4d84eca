// The shadow memory of the sim checks: a reservation covering the whole user
// address space, made before any instrumented code can run. See shadow.h.
#include "sim/check/shadow.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace convkit::sim::detail {

#if defined(CONVKIT_SIM_SHADOW_OFFSET)

namespace {

constexpr std::uintptr_t kShadowOffset = CONVKIT_SIM_SHADOW_OFFSET;
// x86-64 user space is 2^47 bytes, so its shadow is 2^44 (16 TiB). NORESERVE:
// only the pages that checks write take memory; reads of the rest map the
// shared zero page.
constexpr std::size_t kShadowBytes = std::size_t{1} << 44;

unsigned char* shadow_of(std::uintptr_t address) {
  return reinterpret_cast<unsigned char*>(kShadowOffset + (address >> 3));
}

// Why the shadow could not be mapped, or empty once it is.
char unusable_reason[512];

// Priority 101, the earliest a program may use: instrumented code reads the
// shadow from its first access on. When the reservation fails (an
// address-space limit, vm.overcommit_memory=2) the library still loads, for
// cpu work, and the sim backend says why it cannot run.
__attribute__((constructor(101))) void map_shadow() {
  void* p = mmap(reinterpret_cast<void*>(kShadowOffset), kShadowBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == reinterpret_cast<void*>(kShadowOffset)) return;
  const int error = errno;
  if (p != MAP_FAILED) munmap(p, kShadowBytes);  // placed elsewhere by an old kernel
  std::snprintf(unusable_reason, sizeof unusable_reason,
                "the sim kernels of this build (CONVKIT_SIM_CHECKS=ON) need 16 TiB of address space "
                "reserved at %p for the checks' shadow, and it cannot be (%s: an address-space limit, "
                "ulimit -v, or vm.overcommit_memory=2?); build with -DCONVKIT_SIM_CHECKS=OFF to run "
                "sim here",
                reinterpret_cast<void*>(kShadowOffset), std::strerror(error));
}

}  // namespace

bool shadow_available() { return unusable_reason[0] == '\0'; }
const char* shadow_unusable_reason() { return unusable_reason[0] ? unusable_reason : nullptr; }

unsigned char shadow_byte(std::uintptr_t address) { return shadow_available() ? *shadow_of(address) : 0; }

void shadow_fill(std::uintptr_t begin, std::size_t bytes, unsigned char value) {
  if (bytes == 0 || !shadow_available()) return;
  const std::uintptr_t first = begin / kGranule;
  const std::uintptr_t last = (begin + bytes - 1) / kGranule;
  std::memset(shadow_of(first * kGranule), value, last - first + 1);
}

void shadow_mark_body(std::uintptr_t begin, std::size_t bytes, bool tracked) {
  if (tracked) {
    shadow_fill(begin, bytes, kShadowTracked);
    return;
  }
  const std::size_t whole = bytes / kGranule * kGranule;
  shadow_fill(begin, whole, 0);
  if (bytes > whole && shadow_available()) *shadow_of(begin + whole) = static_cast<unsigned char>(bytes - whole);
}

#else  // built without the instrumentation: nothing reads a shadow

bool shadow_available() { return false; }
const char* shadow_unusable_reason() { return nullptr; }
unsigned char shadow_byte(std::uintptr_t) { return 0; }
void shadow_fill(std::uintptr_t, std::size_t, unsigned char) {}
void shadow_mark_body(std::uintptr_t, std::size_t, bool) {}

#endif

}  // namespace convkit::sim::detail
