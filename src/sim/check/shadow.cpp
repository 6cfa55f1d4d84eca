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

// Priority 101, the earliest a program may use: instrumented code reads the
// shadow from its first access on, including in static constructors.
__attribute__((constructor(101))) void map_shadow() {
  void* p = mmap(reinterpret_cast<void*>(kShadowOffset), kShadowBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == reinterpret_cast<void*>(kShadowOffset)) return;
  // Nothing can run without it: every kernel access reads it.
  std::fprintf(stderr,
               "convkit sim: cannot reserve the checks' shadow memory at %p (%s). Rebuild with "
               "-DCONVKIT_SIM_CHECKS=OFF to run without the sim checks.\n",
               reinterpret_cast<void*>(kShadowOffset), std::strerror(errno));
  std::abort();
}

}  // namespace

bool shadow_available() { return true; }

unsigned char shadow_byte(std::uintptr_t address) { return *shadow_of(address); }

void shadow_fill(std::uintptr_t begin, std::size_t bytes, unsigned char value) {
  if (bytes == 0) return;
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
  if (bytes > whole) *shadow_of(begin + whole) = static_cast<unsigned char>(bytes - whole);
}

#else  // built without the instrumentation: nothing reads a shadow

bool shadow_available() { return false; }
unsigned char shadow_byte(std::uintptr_t) { return 0; }
void shadow_fill(std::uintptr_t, std::size_t, unsigned char) {}
void shadow_mark_body(std::uintptr_t, std::size_t, bool) {}

#endif

}  // namespace convkit::sim::detail
