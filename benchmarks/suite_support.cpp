#include "suite_support.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "convkit/backend/backend.h"
#include "convkit/core/error.h"
#include "convkit/core/host_info.h"
#include "convkit/version.h"

#ifdef CONVKIT_BENCH_CUDA_EVENTS
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#endif

namespace convkit::bench {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Flags::Flags(int argc, char** argv, std::map<std::string, std::string> known) : known_(std::move(known)) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    CK_CHECK(arg.rfind("--", 0) == 0, "unexpected argument '", arg, "' (flags are --name=value; --help lists them)");
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    CK_CHECK(known_.count(name), "unknown flag '--", name, "' (--help lists this suite's flags)");
    values_[name] = eq == std::string::npos ? "true" : arg.substr(eq + 1);
  }
}

bool Flags::has(const std::string& name) const { return values_.count(name) != 0; }

std::string Flags::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

double Flags::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name, "");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  CK_CHECK(!text.empty() && end == text.c_str() + text.size(), "--", name, " needs a number, got '", text, "'");
  return v;
}

std::int64_t Flags::get_int(const std::string& name, std::int64_t fallback) const {
  if (!has(name)) return fallback;
  const std::string text = get(name, "");
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  CK_CHECK(!text.empty() && end == text.c_str() + text.size(), "--", name, " needs an integer, got '", text, "'");
  return v;
}

std::vector<std::string> Flags::get_list(const std::string& name, const std::vector<std::string>& fallback) const {
  return has(name) ? split_commas(get(name, "")) : fallback;
}

void Flags::print_help_if_requested(int argc, char** argv, const std::map<std::string, std::string>& known,
                                    const char* summary) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg != "--help" && arg != "-h") continue;
    std::printf("%s: %s\n\nits flags:\n", argv[0], summary);
    for (const auto& [name, help] : known) std::printf("  --%-17s %s\n", name.c_str(), help.c_str());
    std::printf("\nand Google Benchmark's:\n");
    return;
  }
}

void add_machine_context() {
  benchmark::AddCustomContext("cpu_model", cpu_model());
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    char text[64];
    std::snprintf(text, sizeof text, "%.2f %.2f %.2f", load[0], load[1], load[2]);
    benchmark::AddCustomContext("load_average_at_start", text);
  }
  benchmark::AddCustomContext("convkit_version", CONVKIT_VERSION_STRING);
  benchmark::AddCustomContext("compiler", compiler_version());
  benchmark::AddCustomContext("compiled_isa", compiled_isa());
  for (const BackendInfo& info : list_backends())
    benchmark::AddCustomContext("device_" + info.name,
                                std::string(info.usable ? "usable: " : "not usable: ") + info.detail);
}

std::vector<Device> usable_devices(const std::vector<std::string>& names) {
  std::vector<std::string> wanted = names;
  if (wanted.empty()) {
    wanted.push_back("cpu");
    for (const BackendInfo& info : list_backends())
      if (info.usable && info.name.rfind("cuda", 0) == 0) wanted.push_back(info.name);
  }
  std::vector<Device> devices;
  for (const std::string& name : wanted) {
    const Device device = Device::parse(name);
    try {
      backend_for(device);
      devices.push_back(device);
    } catch (const Error& e) {
      std::fprintf(stderr, "skipping device %s: %s\n", name.c_str(), e.what());
      benchmark::AddCustomContext("skipped_device_" + name, e.what());
    }
  }
  return devices;
}

int rotation_count(std::size_t bytes_per_copy, std::size_t rotate_bytes) {
  if (bytes_per_copy == 0) return 1;
  const std::size_t copies = (rotate_bytes + bytes_per_copy - 1) / bytes_per_copy;
  return static_cast<int>(std::clamp<std::size_t>(copies, 1, 16));
}

#ifdef CONVKIT_BENCH_CUDA_EVENTS
namespace {
void cuda_check(cudaError_t status, const char* what) {
  CK_CHECK(status == cudaSuccess, "benchmarks: ", what, ": ", cudaGetErrorString(status));
}
}  // namespace

bool GpuEventTimer::available() { return true; }
GpuEventTimer::GpuEventTimer() {
  cudaEvent_t a = nullptr, b = nullptr;
  cuda_check(cudaEventCreate(&a), "cudaEventCreate");
  cuda_check(cudaEventCreate(&b), "cudaEventCreate");
  start_ = a;
  stop_ = b;
}
GpuEventTimer::~GpuEventTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
void GpuEventTimer::start() {
  cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(start_), nullptr), "cudaEventRecord");
}
double GpuEventTimer::stop_seconds() {
  cuda_check(cudaEventRecord(static_cast<cudaEvent_t>(stop_), nullptr), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)), "cudaEventSynchronize");
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)),
             "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

CudaProfilerRange::CudaProfilerRange(Device device) : active_(device.type == DeviceType::cuda) {
  if (active_) cuda_check(cudaProfilerStart(), "cudaProfilerStart");
}
CudaProfilerRange::~CudaProfilerRange() {
  if (!active_) return;
  // A destructor must not throw: a failure here only loses the range's end.
  cudaDeviceSynchronize();
  cudaProfilerStop();
}
#else
CudaProfilerRange::CudaProfilerRange(Device device) { (void)device; }
CudaProfilerRange::~CudaProfilerRange() = default;
bool GpuEventTimer::available() { return false; }
GpuEventTimer::GpuEventTimer() { CK_FAIL("benchmark timer: CUDA events need a build with the cuda backend"); }
GpuEventTimer::~GpuEventTimer() = default;
void GpuEventTimer::start() {}
double GpuEventTimer::stop_seconds() { return 0; }
#endif

int run_benchmarks() {
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace convkit::bench
