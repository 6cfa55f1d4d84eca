#pragma once
// The sim performance model: exact counts of what each kernel does on a GPU's
// memory system, gathered while the emulator runs it, and a roofline estimate
// of its time on a named GPU (gpu_specs.h). For people without a GPU; the
// estimate is labelled as one wherever it is printed.
//
// While profiling is on, every launch runs its blocks one after another on the
// launching thread, device allocations and shared arrays report every access
// (the machinery of the sim checks, check.h), and each access is recorded per
// thread as (code address, address, size, kind). Whenever the lanes of a warp
// meet (a barrier, a warp built-in that all of them take part in, the warp's
// end), their accesses are grouped into warp requests: the k-th access of a
// lane at one code address since the last meeting joins the k-th access of
// every other lane at that address, as SIMT execution issues them.
//
// Counters, summed over launches and kept per kernel:
//   global requests and the 32-byte sectors each touches (coalescing);
//   shared requests and their bank-conflict ways (max over the 32 four-byte
//     banks of the distinct words the request touches there; lanes that read
//     one word share it as a broadcast);
//   active lanes per request: divergence, as seen on memory instructions;
//   block barriers, warp built-ins, blocks and threads;
//   FMAs: the multiply-adds that kernels spell with dev::fma (and the complex
//     multiply-adds of the FFT's channel sums, four each); nothing else of a
//     kernel's arithmetic is seen, so FLOPs are a lower bound.
//
// Turn it on for a process with CONVKIT_SIM_PROFILE=1, which prints the table
// (format_profile) to stderr at exit, for the GPU named by
// CONVKIT_SIM_PROFILE_GPU (default H100); or in code with ScopedProfile and
// take_profile(). Needs kernels built with the sim instrumentation
// (checks_available() in check.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "convkit/sim/gpu_specs.h"

namespace convkit::sim {

// Counts for one memory space and direction.
struct RequestCounts {
  std::uint64_t requests = 0;  // warp-level instructions
  std::uint64_t lanes = 0;     // active lanes, summed over requests
  std::uint64_t sectors = 0;   // global: distinct 32-byte sectors, summed over requests
  std::uint64_t bytes = 0;         // bytes the lanes asked for, summed
  std::uint64_t unique_bytes = 0;  // distinct bytes per request (a broadcast counts once), summed
  // shared: wavefronts (the request's bank-conflict ways), summed; and the
  // part of them beyond what the request's distinct words need (conflicts).
  std::uint64_t wavefronts = 0;
  std::uint64_t conflict_wavefronts = 0;
  std::uint32_t max_ways = 0;  // shared: the worst phase of any request (a wide access runs in phases)

  RequestCounts& operator+=(const RequestCounts& o);
};

struct KernelProfile {
  std::string kernel;  // demangled, without namespace and parameters
  std::uint64_t launches = 0;
  std::uint64_t blocks = 0;
  std::uint64_t threads = 0;
  std::uint64_t fmas = 0;
  // Tensor-core multiply-adds: 16*8*K per mma.sync (convkit/sim/mma.h).
  std::uint64_t tf32_fmas = 0;
  std::uint64_t bf16_fmas = 0;
  std::uint64_t barriers = 0;       // __syncthreads completions, summed over blocks
  std::uint64_t warp_builtins = 0;  // completed warp built-ins (each group once)
  RequestCounts global_load, global_store, global_atomic;
  RequestCounts shared_load, shared_store, shared_atomic;

  KernelProfile& operator+=(const KernelProfile& o);
  RequestCounts global() const;
  RequestCounts shared() const;
  // Means over requests; 0 when there are none.
  static double per_request(std::uint64_t total, std::uint64_t requests);
};

// Profiling for launches from now on; call it between launches, never while
// one runs. Throws in a build without the instrumentation.
void set_profiling(bool on);
bool profiling();

// Per kernel, summed over the launches since the last call, in the order they
// first ran; then forgets them.
std::vector<KernelProfile> take_profile();

// The roofline estimate of one kernel's time on `gpu`: the largest of its
// counted FLOPs at the FP32 peak plus its tensor-core FLOPs at the TF32 and
// BF16 peaks, its global sectors at HBM bandwidth (no
// cache: an upper bound on DRAM traffic) and its shared wavefronts at the
// shared-memory bandwidth. An estimate, not a measurement.
struct RooflineEstimate {
  double flop_seconds = 0;
  double dram_seconds = 0;
  double shared_seconds = 0;
  double seconds() const;
  const char* bound() const;  // "compute", "DRAM" or "shared"
};
RooflineEstimate estimate(const KernelProfile& profile, const GpuSpec& gpu);

// A table: one block of lines per kernel, counters then the estimate.
std::string format_profile(const std::vector<KernelProfile>& profiles, const GpuSpec& gpu);

// Profiling on for the lifetime of the object; takes what was counted before
// it, so take() sees only launches made under it.
class ScopedProfile {
 public:
  ScopedProfile();
  ~ScopedProfile();
  ScopedProfile(const ScopedProfile&) = delete;
  ScopedProfile& operator=(const ScopedProfile&) = delete;
  std::vector<KernelProfile> take() { return take_profile(); }

 private:
  bool previous_;
};

}  // namespace convkit::sim
