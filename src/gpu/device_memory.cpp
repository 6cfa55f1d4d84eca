#include "gpu/device_memory.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "convkit/backend/kernel_launch.h"
#include "core/block_cache.h"

namespace convkit::CK_GPU_NS {

namespace {
std::atomic<std::uint64_t> g_device_to_host_copies{0};
void count_device_to_host() { g_device_to_host_copies.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

std::uint64_t device_to_host_copies() { return g_device_to_host_copies.load(std::memory_order_relaxed); }

#if defined(__CUDACC__)

#define CK_CUDA_CHECK(call)                                       \
  do {                                                            \
    const cudaError_t status_ = (call);                           \
    if (status_ != cudaSuccess) cuda_call_failed(#call, status_); \
  } while (0)

namespace {

// Errors raised inside a kernel (a bad address, a trap, an assert) are
// sticky: the context is lost and every later CUDA call fails with the same
// code. The first such error is reported with the kernel launched last on
// this thread, the likely culprit; the calls after it say that they fail
// because of it, so none of them reads as a fault of its own.
bool is_sticky(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

std::mutex g_sticky_mutex;
std::string g_sticky_first;  // the first sticky error's message; empty while none

[[noreturn]] void cuda_call_failed(const char* call, cudaError_t status) {
  const std::string what = detail::concat(call, " failed: ", cudaGetErrorName(status), ": ",
                                          cudaGetErrorString(status));
  if (!is_sticky(status)) CK_FAIL(what);
  const std::lock_guard lock(g_sticky_mutex);
  if (!g_sticky_first.empty())
    CK_FAIL(what, " (the CUDA context was lost earlier: ", g_sticky_first, ")");
  const std::string last = detail::last_launch();
  g_sticky_first = what + (last.empty() ? std::string() : "; the last kernel launched was " + last);
  CK_FAIL(g_sticky_first,
          ". A kernel fault is sticky: every later CUDA call in this process fails; restart it "
          "(compute-sanitizer finds the faulting access)");
}

// cudaMalloc and cudaFree synchronise the device and cost tens of
// microseconds, and a training step frees and reallocates the same sizes every
// iteration: every freed block is kept for reuse (core/block_cache.h).
void* cuda_allocate_or_null(std::size_t nbytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, nbytes) == cudaSuccess) return p;
  (void)cudaGetLastError();  // the failure is not sticky; clear it
  return nullptr;
}

void cuda_free(void* p) { (void)cudaFree(p); }

BlockCache& allocator() {
  // Never destroyed: frees after the driver unloads crash.
  static BlockCache* cache = new BlockCache(cuda_allocate_or_null, cuda_free, 0, static_cast<std::size_t>(-1));
  return *cache;
}

}  // namespace

void* device_allocate(std::size_t nbytes) {
  void* p = allocator().allocate(nbytes);
  CK_CHECK(p != nullptr, "cuda: out of device memory allocating ", nbytes,
           " bytes (cudaMalloc failed again after the cached blocks were freed)");
  return p;
}
void device_free(void* ptr, std::size_t nbytes) { allocator().free(ptr, nbytes); }
void copy_host_to_device(void* dst, const void* src, std::size_t n) {
  CK_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}
void copy_device_to_host(void* dst, const void* src, std::size_t n) {
  count_device_to_host();
  CK_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}
void copy_device_to_device(void* dst, const void* src, std::size_t n) {
  CK_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice));
}
void device_synchronize() { CK_CUDA_CHECK(cudaDeviceSynchronize()); }

#else  // sim

void* device_allocate(std::size_t nbytes) { return sim::global_allocate(nbytes); }
void device_free(void* ptr, std::size_t) { sim::global_free(ptr); }
void copy_host_to_device(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void copy_device_to_host(void* dst, const void* src, std::size_t n) {
  count_device_to_host();
  if (n) std::memcpy(dst, src, n);
}
void copy_device_to_device(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void device_synchronize() {}  // launches return when their grid has finished

#endif

}  // namespace convkit::CK_GPU_NS
