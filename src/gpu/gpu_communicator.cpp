// GpuBackend's device communicator: the one part of the backend whose two
// builds call different libraries. The cuda plugin's is NCCL
// (gpu/nccl_communicator.cpp, compiled into the plugin alone); sim's
// emulates NCCL's calls between thread-ranks (gpu/sim_communicator.cpp,
// compiled into libconvkit alone).
#include "gpu/gpu_backend.h"

#if defined(__CUDACC__)
#include "gpu/nccl_communicator.h"
#else
#include "gpu/sim_communicator.h"
#endif

namespace convkit::CK_GPU_NS {

#if defined(__CUDACC__)

CommunicatorSupport GpuBackend::communicator_support() const { return gpu::nccl_support(); }
CommunicatorId GpuBackend::make_communicator_id() { return gpu::make_nccl_communicator_id(); }
std::unique_ptr<DeviceCommunicator> GpuBackend::make_communicator(const CommunicatorId& id, int rank, int size,
                                                                  Device device, double timeout_seconds) {
  return gpu::make_nccl_communicator(id, rank, size, device, timeout_seconds);
}

#else

CommunicatorSupport GpuBackend::communicator_support() const {
  return {true, "sim: NCCL's calls emulated between thread-ranks of one process"};
}
CommunicatorId GpuBackend::make_communicator_id() { return gpu::make_sim_communicator_id(); }
std::unique_ptr<DeviceCommunicator> GpuBackend::make_communicator(const CommunicatorId& id, int rank, int size,
                                                                  Device device, double timeout_seconds) {
  return gpu::make_sim_communicator(id, rank, size, device, timeout_seconds);
}

#endif

}  // namespace convkit::CK_GPU_NS
