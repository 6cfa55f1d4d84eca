// GpuBackend: identity, device memory and the tensor -> kernel-argument helpers.
#include "gpu/gpu_backend.h"

#include <omp.h>

#include "gpu/device_memory.h"

#if defined(__CUDACC__)
#include "gpu/cuda_probe.h"
#endif

namespace convkit::CK_GPU_NS {

#if defined(__CUDACC__)
DeviceType GpuBackend::type() const { return DeviceType::cuda; }
BackendInfo GpuBackend::info() const {
  const gpu::CudaProbe& probe = gpu::cuda_probe();
  return {"cuda:0", probe.usable, probe.detail};
}
#else
DeviceType GpuBackend::type() const { return DeviceType::sim; }
BackendInfo GpuBackend::info() const {
  return {"sim", true,
          "CUDA kernels from kernels/*.cu run on the CPU emulator (blocks on " +
              std::to_string(omp_get_max_threads()) + " OpenMP threads, CUDA threads as fibers)"};
}
#endif

void* GpuBackend::allocate(std::size_t nbytes) { return device_allocate(nbytes); }
void GpuBackend::deallocate(void* ptr, std::size_t nbytes) { device_free(ptr, nbytes); }
void GpuBackend::copy_from_host(void* dst, const void* src, std::size_t nbytes) {
  copy_host_to_device(dst, src, nbytes);
}
void GpuBackend::copy_to_host(void* dst, const void* src, std::size_t nbytes) {
  copy_device_to_host(dst, src, nbytes);
}
void GpuBackend::synchronize() { device_synchronize(); }

StridedView strided_view(const Tensor& t) {
  CK_CHECK(t.dim() <= kMaxDims, "GPU kernels take tensors of at most ", kMaxDims, " dims, got shape ", t.shape());
  StridedView v;
  v.rank = static_cast<int>(t.dim());
  v.contiguous = t.is_contiguous();
  for (int d = 0; d < v.rank; ++d) {
    v.size[d] = t.size(d);
    v.stride[d] = t.stride(d);
  }
  return v;
}

Backend* make_backend() {
  static GpuBackend backend;
  return &backend;
}

}  // namespace convkit::CK_GPU_NS
