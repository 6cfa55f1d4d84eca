#pragma once
// What the benchmark suites share: their own command-line flags (next to
// Google Benchmark's), the machine description in the benchmark context, the
// buffer-rotation rule, and the list of devices to run on.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "convkit/core/device.h"

namespace convkit::bench {

// --key=value flags left after benchmark::Initialize took its --benchmark_*
// ones. A flag no suite asked for is an error, so a typo never silently runs
// the default.
class Flags {
 public:
  // `known`: name -> one-line help, printed by --help.
  Flags(int argc, char** argv, std::map<std::string, std::string> known);
  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback) const;
  double get_double(const std::string& name, double fallback) const;
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  // Comma-separated values.
  std::vector<std::string> get_list(const std::string& name, const std::vector<std::string>& fallback) const;
  // Google Benchmark answers --help itself and exits, so each suite prints
  // its own flags first, before benchmark::Initialize.
  static void print_help_if_requested(int argc, char** argv, const std::map<std::string, std::string>& known,
                                      const char* summary);

 private:
  std::map<std::string, std::string> known_, values_;
};

std::vector<std::string> split_commas(const std::string& text);

// CPU model, OpenMP threads, every backend's description (GPU name, driver),
// the load average at start, the compiler and the convkit version, as
// benchmark::AddCustomContext entries.
void add_machine_context();

// The devices named by --devices (default: cpu, plus cuda when usable). A
// named device that is not usable is dropped with its reason in the context
// ("skipped_device_<name>") and on stderr.
std::vector<Device> usable_devices(const std::vector<std::string>& names);

// How many copies of a pass's operands to cycle through so that together
// they exceed `rotate_bytes`: each iteration then finds its inputs evicted
// from the caches, as a layer inside a network does. Between 1 and 16.
int rotation_count(std::size_t bytes_per_copy, std::size_t rotate_bytes);

// sim runs CUDA kernels on a CPU emulator: its times say nothing about a GPU.
inline bool timing_meaningful(Device d) { return d.type != DeviceType::sim; }
inline constexpr const char* kSimLabel = "sim: correctness smoke only, time is meaningless";

// Times work on a cuda device with CUDA events on the default stream, the
// stream every convkit kernel is launched on, so an iteration's time is the
// GPU's and not the host's launch overhead. Usable only in a build with the
// cuda backend (available() says so); elsewhere GPU work is timed with a
// device synchronize after each iteration.
class GpuEventTimer {
 public:
  static bool available();
  GpuEventTimer();  // throws Error when !available()
  ~GpuEventTimer();
  GpuEventTimer(const GpuEventTimer&) = delete;
  GpuEventTimer& operator=(const GpuEventTimer&) = delete;
  void start();
  // Waits for the work since start() and returns its GPU time.
  double stop_seconds();

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// Marks the work between construction and destruction for a profiler that
// was started with profiling off (`ncu --profile-from-start off`):
// cudaProfilerStart, then cudaProfilerStop after a device synchronize. Only
// on cuda devices of a build with the cuda backend; elsewhere (sim, cpu)
// there is no profiler to tell, and it does nothing.
class CudaProfilerRange {
 public:
  explicit CudaProfilerRange(Device device);
  ~CudaProfilerRange();
  CudaProfilerRange(const CudaProfilerRange&) = delete;
  CudaProfilerRange& operator=(const CudaProfilerRange&) = delete;

 private:
  bool active_ = false;
};

// Whether benchmarks on `device` time with GpuEventTimer (manual time).
inline bool uses_events(Device device) { return device.type == DeviceType::cuda && GpuEventTimer::available(); }

// Runs the benchmarks selected on the command line and returns the exit code.
int run_benchmarks();

}  // namespace convkit::bench
