#include "gpu/cuda_probe.h"

#include <cuda_runtime_api.h>

#include <cstdio>

namespace convkit::gpu {

namespace {

std::string error_text(const char* call, cudaError_t err) {
  return std::string(call) + " returned " + std::to_string(static_cast<int>(err)) + " (" +
         cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")";
}

// "13.0" from the driver's 13000.
std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string gib_text(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return buf;
}

CudaProbe run_probe() {
  CudaProbe p;
  int count = 0;
  // Without a driver every runtime call fails with a sticky error and
  // cudaGetDeviceCount leaves `count` unwritten, hence the initialisation.
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    const std::string why = err == cudaSuccess ? "no CUDA device: cudaGetDeviceCount found none"
                            : err == cudaErrorInsufficientDriver
                                ? "no usable CUDA driver (libcuda.so.1 is missing or older than the runtime): " +
                                      error_text("cudaGetDeviceCount", err)
                            : err == cudaErrorNoDevice ? "no CUDA device: " + error_text("cudaGetDeviceCount", err)
                                                       : "CUDA cannot start: " + error_text("cudaGetDeviceCount", err);
    p.devices.push_back({"cuda", false, why});
    return p;
  }
  int driver = 0;
  cudaDriverGetVersion(&driver);
  for (int i = 0; i < count; ++i) {
    const std::string name = "cuda:" + std::to_string(i);
    cudaDeviceProp prop{};
    const cudaError_t perr = cudaGetDeviceProperties(&prop, i);
    if (perr != cudaSuccess) {
      p.devices.push_back({name, false, error_text("cudaGetDeviceProperties", perr)});
      continue;
    }
    std::string detail = std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) +
                         " SMs, " + gib_text(prop.totalGlobalMem) + ", sm_" + std::to_string(prop.major) +
                         std::to_string(prop.minor) + ", driver " + version_text(driver);
    const bool usable = i == 0;
    if (!usable) detail += " (present, but convkit runs kernels on cuda:0 only)";
    p.devices.push_back({name, usable, detail});
  }
  return p;
}

}  // namespace

const CudaProbe& cuda_probe() {
  static const CudaProbe probe = run_probe();
  return probe;
}

}  // namespace convkit::gpu
