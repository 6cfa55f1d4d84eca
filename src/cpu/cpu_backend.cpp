#include "cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/block_cache.h"
#include "cpu/cpu_isa.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown cpu";
}

// Blocks of 2 MiB and more are aligned to 2 MiB and, on Linux, marked for
// transparent huge pages, which kernels configured with THP "madvise" (as
// Debian's are) give only to memory that asks. A 4 KiB page per
// activation plane meant a TLB miss for nearly every plane the winograd
// transforms and batch norm's passes stepped to; with 2 MiB pages a
// cifar10-cnn-bn step at batch 128 ran 1.5-7% faster (docs/performance-log.md,
// step 30). Where the kernel gives no huge pages the hint does nothing.
void* aligned_allocate_or_null(std::size_t nbytes) {
  constexpr std::size_t kAlign = 64, kHugePage = std::size_t{2} << 20;
  if (nbytes > static_cast<std::size_t>(-1) - kHugePage) return nullptr;
  if (nbytes < kHugePage) return std::aligned_alloc(kAlign, (nbytes + kAlign - 1) / kAlign * kAlign);
  const std::size_t size = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p != nullptr) madvise(p, size, MADV_HUGEPAGE);  // a hint: its failure changes nothing
#endif
  return p;
}

void aligned_free(void* p) { std::free(p); }

// Blocks of 64 KiB and more (activations, their gradients, masks,
// workspaces) are kept, up to 1 GiB in all: glibc returns large blocks to
// the kernel on free, and a training step would page-fault them all in
// again every iteration. With 1 MiB as the floor, the pooled activations and
// dropout masks at batch 32 (0.5-0.9 MB) still cost 118-342 page faults per
// step (docs/performance-log.md, step 22). Under AddressSanitizer every block
// comes straight from aligned_alloc, so that a use after free or a read past
// the requested size is still caught.
// GCC defines __SANITIZE_ADDRESS__; clang only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define CONVKIT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONVKIT_ASAN 1
#endif
#endif
#if defined(CONVKIT_ASAN)
constexpr bool kCacheBlocks = false;
#else
constexpr bool kCacheBlocks = true;
#endif

BlockCache& host_blocks() {
  // Never destroyed: tensors held by other static objects may be freed after it would be.
  static BlockCache* cache =
      new BlockCache(aligned_allocate_or_null, aligned_free, std::size_t{64} << 10, std::size_t{1} << 30);
  return *cache;
}

}  // namespace

std::vector<BackendInfo> CpuBackend::devices() const {
  return {{"cpu", true,
           cpu_model() + ", " + std::to_string(omp_get_max_threads()) + " OpenMP threads, kernels " +
               describe(selected_cpu_isa())}};
}

void* CpuBackend::allocate(std::size_t nbytes) {
  void* p = kCacheBlocks ? host_blocks().allocate(nbytes) : aligned_allocate_or_null(nbytes);
  CK_CHECK(p != nullptr, "cpu: out of memory allocating ", nbytes, " bytes");
  return p;
}

void CpuBackend::deallocate(void* ptr, std::size_t nbytes) {
  if (kCacheBlocks) {
    host_blocks().free(ptr, nbytes);
  } else {
    aligned_free(ptr);
  }
}

void CpuBackend::copy_from_host(void* dst, const void* src, std::size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

void CpuBackend::copy_to_host(void* dst, const void* src, std::size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

CpuBackend& cpu_backend() {
  // Never destroyed, as the block cache: a tensor that outlives the statics
  // destroyed before it (one a process group's thread still holds at exit,
  // say) must find its allocator alive when it is freed.
  static CpuBackend* backend = new CpuBackend;
  return *backend;
}

// The registry takes the chosen ISA copy's (isa_dispatch.cpp).
Backend& backend() { return cpu_backend(); }

}  // namespace convkit::cpu::CONVKIT_ISA_NS
