// run_grid: checks a launch configuration the way a GPU would, then spreads the
// blocks over OpenMP threads. Each OS thread runs whole blocks, one after
// another, with its own BlockScheduler and fiber pool; blocks on different OS
// threads really run at the same time, which is why atomics must be atomic.
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "convkit/core/error.h"
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/runtime.h"
#include "convkit/sim/schedule.h"
#include "sim/block_scheduler.h"
#include "sim/check/finding.h"
#include "sim/check/launch_checks.h"
#include "sim/check/regions.h"
#include "sim/profile/profile_store.h"

namespace convkit::sim {
namespace {

// Each kernel's dynamic shared memory opt-in (set_max_dynamic_shared_bytes).
struct SharedOptIns {
  std::mutex mutex;
  std::unordered_map<const void*, std::size_t> bytes;
};
SharedOptIns& shared_opt_ins() {
  static SharedOptIns opt_ins;
  return opt_ins;
}

std::size_t dynamic_shared_limit(const void* kernel) {
  SharedOptIns& o = shared_opt_ins();
  const std::lock_guard<std::mutex> lock(o.mutex);
  const auto it = o.bytes.find(kernel);
  return it == o.bytes.end() || it->second < kDefaultDynamicSharedBytes ? kDefaultDynamicSharedBytes : it->second;
}

void check_configuration(const GridLaunch& launch) {
  const dim3 g = launch.grid;
  const dim3 b = launch.block;
  const auto describe = [&] {
    return convkit::detail::concat("grid (", g.x, ",", g.y, ",", g.z, "), block (", b.x, ",", b.y,
                                   ",", b.z, "), ", launch.dynamic_shared_bytes,
                                   " B dynamic shared memory");
  };
  CK_CHECK(launch.body != nullptr, "sim launch without a kernel");
  CK_CHECK(g.x > 0 && g.y > 0 && g.z > 0 && b.x > 0 && b.y > 0 && b.z > 0,
           "sim launch with an empty grid or block: ", describe());
  CK_CHECK(g.x <= kMaxGridDimX && g.y <= kMaxGridDimYZ && g.z <= kMaxGridDimYZ,
           "sim launch: grid too large (at most ", kMaxGridDimX, " x ", kMaxGridDimYZ, " x ",
           kMaxGridDimYZ, "): ", describe());
  const std::uint64_t threads = std::uint64_t{b.x} * b.y * b.z;
  CK_CHECK(threads <= kMaxThreadsPerBlock && b.z <= kMaxBlockDimZ,
           "sim launch: block too large (at most ", kMaxThreadsPerBlock,
           " threads and blockDim.z <= ", kMaxBlockDimZ, "): ", describe());
  CK_CHECK(launch.dynamic_shared_bytes <= kMaxDynamicSharedBytes,
           "sim launch: too much dynamic shared memory (at most ", kMaxDynamicSharedBytes,
           " B): ", describe());
  const std::size_t limit = dynamic_shared_limit(launch.kernel);
  CK_CHECK(launch.dynamic_shared_bytes <= limit, "sim launch: too much dynamic shared memory for this kernel (",
           limit, " B; above ", kDefaultDynamicSharedBytes,
           " B a kernel must opt in first with convkit::allow_dynamic_shared): ", describe());
}

uint3 block_coordinates(std::uint64_t linear, const dim3& grid) {
  return uint3{static_cast<unsigned>(linear % grid.x),
               static_cast<unsigned>(linear / grid.x % grid.y),
               static_cast<unsigned>(linear / (std::uint64_t{grid.x} * grid.y))};
}

}  // namespace

void set_max_dynamic_shared_bytes(const void* kernel, std::size_t bytes) {
  CK_CHECK(bytes <= kMaxDynamicSharedBytes, "allow_dynamic_shared: ", bytes,
           " B of dynamic shared memory is more than a GPU offers (at most ", kMaxDynamicSharedBytes, " B)");
  SharedOptIns& o = shared_opt_ins();
  const std::lock_guard<std::mutex> lock(o.mutex);
  o.bytes[kernel] = bytes;
}

void run_grid(const GridLaunch& launch) {
  CK_CHECK(detail::BlockScheduler::running() == nullptr,
           "launch() called from inside a kernel: dynamic parallelism is not supported by sim");
  check_configuration(launch);
  // Read once, so every block of this launch uses the same schedule even if
  // another thread changes it meanwhile.
  const Schedule schedule = current_schedule();
  const std::uint64_t block_count = std::uint64_t{launch.grid.x} * launch.grid.y * launch.grid.z;
  const Checks checks = current_checks();
  // The performance model sees accesses through the checks' machinery.
  const bool profiled = profiling();
  KernelProfile profile;
  std::unique_ptr<detail::LaunchChecks> launch_checks;
  if (checks.any() || profiled) {
    launch_checks = std::make_unique<detail::LaunchChecks>(checks, launch.kernel, launch.grid, launch.block);
    if (profiled) launch_checks->set_profile(&profile);
    detail::track_global_regions(checks.racecheck || profiled);
  }

  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;

  // Under the checks (and the profile) the blocks run one after another on
  // this OS thread: the checks' state of global memory and the counters then
  // need no locking, and conflicts between blocks are found in the same order
  // every run.
#pragma omp parallel if (block_count > 1 && !launch_checks)
  {
    detail::BlockScheduler& scheduler = detail::BlockScheduler::for_this_thread();
    bool prepared = false;
    // Dynamic: on a shared machine some OS threads run slower than others.
#pragma omp for schedule(dynamic)
    for (std::uint64_t block = 0; block < block_count; ++block) {
      if (failed.load(std::memory_order_relaxed)) continue;  // a block failed: skip the rest
      try {
        if (!prepared) {
          scheduler.begin_launch(launch, schedule, launch_checks.get());
          prepared = true;
        }
        scheduler.run_block(block_coordinates(block, launch.grid));
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
  if (first_error) {
    try {
      std::rethrow_exception(first_error);
    } catch (const detail::Finding& finding) {  // a check stopped the launch
      throw Error(finding.render());
    }
  }
  if (profiled) {
    profile.launches = 1;
    detail::add_launch_profile(launch.kernel, profile);
  }
  if (launch_checks) {
    for (const std::string& warning : launch_checks->across_block_reports()) detail::add_check_warning(warning);
    const std::string races = launch_checks->in_block_report();
    if (!races.empty()) throw Error(races);
  }
}

}  // namespace convkit::sim
