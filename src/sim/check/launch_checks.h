#pragma once
// What the sim checks keep for one launch, across its blocks: the checks it
// runs with, racecheck's hazards, each reported once per pair of source lines
// however often it happens, and where the performance model counts
// (profile.h). run_grid (grid.cpp) owns it and reports at the end of the
// launch.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/vector_types.h"
#include "sim/check/finding.h"
#include "sim/check/race_check.h"

namespace convkit::sim::detail {

class LaunchChecks {
 public:
  LaunchChecks(const Checks& checks, const void* kernel, dim3 grid, dim3 block);

  const Checks& checks() const { return checks_; }
  // The launch's profile counters, or null when it is not profiled.
  KernelProfile* profile() const { return profile_; }
  void set_profile(KernelProfile* profile) { profile_ = profile; }
  const void* kernel() const { return kernel_; }
  dim3 block_dim() const { return block_; }
  std::uint32_t first_block_serial() const { return first_serial_; }

  // Numbers a block run; serials are unique in the process and rise.
  std::uint32_t begin_block(uint3 block_index);
  uint3 block_of(std::uint32_t serial);

  // Records a hazard; `describe` builds its report the first time its
  // (hazard, lines) pair is seen.
  template <typename Describe>
  void add_hazard(const Conflict& conflict, const void* pc, Describe&& describe) {
    const Key key{conflict.hazard, conflict.across_blocks, conflict.earlier.pc, pc};
    {
      const std::lock_guard lock(mutex_);
      const auto known = hazards_.find(key);
      if (known != hazards_.end()) {
        ++known->second.count;
        return;
      }
    }
    Finding report = describe();  // outside the lock: it asks block_of()
    const std::lock_guard lock(mutex_);
    auto [it, fresh] = hazards_.try_emplace(key);
    ++it->second.count;
    if (fresh) it->second.report = std::move(report);
  }

  // The hazards inside blocks, as one message ("" when none).
  std::string in_block_report();
  // The hazards between blocks, one message each.
  std::vector<std::string> across_block_reports();

 private:
  using Key = std::tuple<Hazard, bool, const void*, const void*>;
  struct Entry {
    Finding report;
    std::uint64_t count = 0;
  };
  std::vector<std::string> render(bool across_blocks);

  Checks checks_;
  KernelProfile* profile_ = nullptr;
  const void* kernel_;
  dim3 grid_, block_;
  std::uint32_t first_serial_;
  std::mutex mutex_;
  std::vector<uint3> block_of_run_;  // by serial - first_serial_
  std::map<Key, Entry> hazards_;
};

// Prints a report that does not stop the launch and keeps it for
// take_check_warnings() (checks.cpp).
void add_check_warning(const std::string& warning);

}  // namespace convkit::sim::detail
