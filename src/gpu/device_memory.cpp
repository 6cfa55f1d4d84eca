#include "gpu/device_memory.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

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
// iteration. Freed blocks are kept per rounded size and reused; when
// cudaMalloc fails the cache is released and the allocation retried once.
class CachingAllocator {
 public:
  static std::size_t rounded(std::size_t n) {
    constexpr std::size_t kSmall = 512, kLarge = std::size_t{2} << 20;
    return n < (std::size_t{1} << 20) ? (n + kSmall - 1) / kSmall * kSmall : (n + kLarge - 1) / kLarge * kLarge;
  }
  void* allocate(std::size_t nbytes) {
    const std::size_t size = rounded(nbytes);
    {
      std::lock_guard lock(mutex_);
      auto& list = free_[size];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        return p;
      }
    }
    void* p = nullptr;
    if (cudaMalloc(&p, size) != cudaSuccess) {
      (void)cudaGetLastError();  // the failure is not sticky; clear it
      release_cached();
      const cudaError_t status = cudaMalloc(&p, size);
      CK_CHECK(status == cudaSuccess, "cuda: out of device memory allocating ", nbytes, " bytes: ",
               cudaGetErrorString(status));
    }
    return p;
  }
  void free(void* p, std::size_t nbytes) {
    std::lock_guard lock(mutex_);
    free_[rounded(nbytes)].push_back(p);
  }
  void release_cached() {
    std::lock_guard lock(mutex_);
    for (auto& [size, list] : free_)
      for (void* p : list) cudaFree(p);
    free_.clear();
  }

 private:
  std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;
};

CachingAllocator& allocator() {
  static CachingAllocator* a = new CachingAllocator;  // never destroyed: frees after the driver unloads crash
  return *a;
}

}  // namespace

void* device_allocate(std::size_t nbytes) { return allocator().allocate(nbytes); }
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

void* device_allocate(std::size_t nbytes) {
  constexpr std::size_t kAlign = 256;  // cudaMalloc's alignment, so vector loads behave alike
  void* p = std::aligned_alloc(kAlign, (nbytes + kAlign - 1) / kAlign * kAlign);
  CK_CHECK(p != nullptr, "sim: out of memory allocating ", nbytes, " bytes");
  return p;
}
void device_free(void* ptr, std::size_t) { std::free(ptr); }
void copy_host_to_device(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void copy_device_to_host(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void copy_device_to_device(void* dst, const void* src, std::size_t n) { if (n) std::memcpy(dst, src, n); }
void device_synchronize() {}  // launches return when their grid has finished

#endif

}  // namespace convkit::CK_GPU_NS
