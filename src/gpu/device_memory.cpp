#include "gpu/device_memory.h"

#include <cstdlib>
#include <cstring>

#include "core/block_cache.h"

namespace convkit::CK_GPU_NS {

#if defined(__CUDACC__)

#define CK_CUDA_CHECK(call)                                                                  \
  do {                                                                                       \
    const cudaError_t status_ = (call);                                                      \
    CK_CHECK(status_ == cudaSuccess, #call " failed: ", cudaGetErrorName(status_), ": ",     \
             cudaGetErrorString(status_));                                                   \
  } while (0)

namespace {

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
void copy_device_to_host(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void copy_device_to_device(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void device_synchronize() {}  // launches return when their grid has finished

#endif

}  // namespace convkit::CK_GPU_NS
