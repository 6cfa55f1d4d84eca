#pragma once
// The sim checks inside the blocks that one OS thread runs: it knows the
// block's shared memory, numbers its barrier intervals, keeps the warps'
// vector clocks, and judges every access the instrumented kernel reports
// (access_hooks.cpp), passing each to the performance model when the launch is
// profiled. One per BlockScheduler; see convkit/sim/check.h for the checks
// themselves, convkit/sim/profile.h for the model.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "convkit/sim/vector_types.h"
#include "sim/check/finding.h"
#include "sim/check/launch_checks.h"
#include "sim/check/race_check.h"
#include "sim/check/regions.h"
#include "sim/profile/block_profiler.h"

namespace convkit::sim::detail {

enum class AccessKind : std::uint8_t { read, write, atomic };

class BlockChecker {
 public:
  BlockChecker() = default;
  // Frees the __shared__ arrays' storage.
  ~BlockChecker();
  BlockChecker(const BlockChecker&) = delete;
  BlockChecker& operator=(const BlockChecker&) = delete;

  // `launch` is null when no check is on and the launch is not profiled; it
  // outlives the launch's blocks.
  void begin_launch(LaunchChecks* launch, unsigned thread_count);
  bool active() const { return launch_ != nullptr; }

  // Bytes of guard zone to leave on each side of dynamic shared memory.
  std::size_t dynamic_shared_guard() const { return active() ? kSharedGuard : 0; }
  void begin_block(uint3 block_index, unsigned char* dynamic_shared, std::size_t dynamic_bytes);
  void end_block();
  void barrier_released() {
    ++epoch_;
    profiler_.barrier();
  }
  // `lanes` took part in a warp built-in; `absent` have exited or do not exist.
  void warp_synced(unsigned warp, unsigned lanes, unsigned absent);
  // `thread` ran fence.proxy.async: its shared-memory writes so far are
  // visible to wgmma's reads (racecheck).
  void proxy_fenced(unsigned thread) {
    if (!proxy_fences_.empty()) ++proxy_fences_[thread];
  }
  void warp_exited(unsigned warp) { profiler_.warp_exited(warp); }
  BlockProfiler& profiler() { return profiler_; }

  // Storage for a __shared__ array (SharedArray) met for the first time on
  // this OS thread: 64-byte aligned, zero-filled, between guard zones, kept
  // until the OS thread ends.
  void* static_shared_storage(std::size_t bytes, const char* file, int line);

  // Judges one access by `thread` (linear index); returns a report that must
  // stop the launch, or null. `async_proxy`: a read by wgmma, which must not
  // meet a write its writer has not fenced (fence.proxy.async).
  std::unique_ptr<Finding> access(std::uintptr_t address, std::size_t size, AccessKind kind,
                                  const void* pc, unsigned thread, bool async_proxy = false);

  static constexpr std::size_t kSharedGuard = 64;

 private:
  enum class Marking : std::uint8_t { none, bounds, tracked };
  Marking wanted_marking() const;
  void mark_static_shared(Marking marking);
  Region* find_region(std::uintptr_t address);
  uint3 thread_index(unsigned linear) const;
  Finding& describe_access(Finding& f, const char* check, std::uintptr_t address, std::size_t size,
                           AccessKind kind, unsigned thread);
  std::unique_ptr<Finding> check_initialised(Region& region, std::uintptr_t address, std::size_t size,
                                             const void* pc, unsigned thread);
  void mark_initialised(Region& region, std::uintptr_t address, std::size_t size);
  void check_races(Region& region, std::uintptr_t address, std::size_t size, AccessKind kind,
                   const void* pc, unsigned thread);
  std::unique_ptr<Finding> check_proxy_fenced(Region& region, std::uintptr_t address, std::size_t size,
                                              const void* pc, unsigned thread);
  RaceContext race_context(const Access& access);
  void report_conflicts(Region& region, std::uintptr_t word, const Access& access, bool write);

  LaunchChecks* launch_ = nullptr;
  BlockProfiler profiler_;
  uint3 block_index_{0, 0, 0};
  std::uint32_t serial_ = 0;  // this block run (LaunchChecks::begin_block)
  std::uint32_t epoch_ = 0;   // barrier interval, counted across all runs
  std::vector<std::array<std::uint32_t, 32>> clocks_;  // per thread, racecheck
  std::vector<std::uint16_t> proxy_fences_;             // per thread, racecheck: fence.proxy.async run
  std::vector<std::unique_ptr<Region>> static_shared_;
  Marking static_marking_ = Marking::none;
  Region dynamic_shared_;
  bool dynamic_live_ = false;
  std::vector<Conflict> conflicts_;  // scratch
  std::array<std::uint32_t, 32> no_clocks_{};  // for accesses of other blocks
};

}  // namespace convkit::sim::detail
