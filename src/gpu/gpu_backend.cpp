// GpuBackend: identity, device memory and the tensor -> kernel-argument helpers.
#include "gpu/gpu_backend.h"

#include <omp.h>

#include "gpu/device_memory.h"
#include "gpu/target_check.h"

#if defined(__CUDACC__)
#include "gpu/cuda_probe.h"
#else
#include "sim/check/shadow.h"
#endif

namespace convkit::CK_GPU_NS {

#if defined(__CUDACC__)
DeviceType GpuBackend::type() const { return DeviceType::cuda; }
std::vector<BackendInfo> GpuBackend::devices() const { return gpu::cuda_probe().devices; }
#else
DeviceType GpuBackend::type() const { return DeviceType::sim; }
std::vector<BackendInfo> GpuBackend::devices() const {
  if (const char* why = sim::detail::shadow_unusable_reason()) return {{"sim", false, why}};
  return {{"sim", true,
           "CUDA kernels from kernels/*.cu run on the CPU emulator (blocks on " +
               std::to_string(omp_get_max_threads()) + " OpenMP threads, CUDA threads as fibers)"}};
}
#endif

void* GpuBackend::allocate(std::size_t nbytes) { return device_allocate(nbytes); }
void GpuBackend::deallocate(void* ptr, std::size_t nbytes) { device_free(ptr, nbytes); }
void GpuBackend::copy_from_host(void* dst, const void* src, std::size_t nbytes) {
  copy_host_to_device(dst, src, nbytes);
}
// Copies to the host and synchronisation are where a bad class target that a
// loss kernel recorded on the device surfaces (gpu/target_check.h).
void GpuBackend::copy_to_host(void* dst, const void* src, std::size_t nbytes) {
  copy_device_to_host(dst, src, nbytes);
  check_recorded_targets();
}
void GpuBackend::synchronize() {
  device_synchronize();
  check_recorded_targets();
}

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

namespace {
// The sim build registers at start-up; the cuda build, which lives in the
// plugin libconvkit_cuda.so, registers when the core opens the plugin.
#if defined(__CUDACC__)
const BackendRegistrar registrar(DeviceType::cuda, make_backend);
#else
const BackendRegistrar registrar(DeviceType::sim, make_backend);
#endif
}  // namespace

}  // namespace convkit::CK_GPU_NS
