#pragma once
// Helpers for the raw GPU kernel tests: the GPU devices to run on (sim always,
// cuda when usable) and a scoped kernel-version choice.
#include <string>
#include <utility>
#include <vector>

#include "support/support.h"

namespace convkit::testing {

// Where a raw kernel suite's buffers live. The suites that call the launchers
// in kernels/*.cuh directly are compiled twice when nvcc is available
// (tests/gpu/CMakeLists.txt): by g++, where `convkit::CK_GPU_NS` is the sim
// build (gpu_sim), and by nvcc, where it is the cuda plugin's (gpu_cuda).
#if defined(__CUDACC__)
inline Device kernel_device() { return Device(DeviceType::cuda, 0); }
#else
inline Device kernel_device() { return kSim; }
#endif
inline TensorOptions kernel_options(DType dt) { return TensorOptions().dtype(dt).device(kernel_device()); }

// sim (always) and cuda (when usable): the raw kernel tests run on every GPU
// backend, whatever CONVKIT_TEST_SIM says for the op suites.
inline std::vector<Device> gpu_devices() {
  exit_unless_cuda_when_required();
  std::vector<Device> out;
  for (const BackendInfo& info : list_backends())
    if (info.usable && info.name != "cpu") out.push_back(Device::parse(info.name));
  return out;
}

// Runs the enclosed code with `family` at `version`, then restores the default.
class ScopedKernelVersion {
 public:
  ScopedKernelVersion(std::string family, int version) : family_(std::move(family)) {
    set_kernel_version(family_, version);
  }
  ~ScopedKernelVersion() { set_kernel_version(family_, 0); }
  ScopedKernelVersion(const ScopedKernelVersion&) = delete;
  ScopedKernelVersion& operator=(const ScopedKernelVersion&) = delete;

 private:
  std::string family_;
};

}  // namespace convkit::testing
