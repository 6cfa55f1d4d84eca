#pragma once
// The order in which the sim backend runs the threads of a block.
//
// Threads of a block are fibers that run one at a time until they block (at a
// barrier or a warp operation) or return. The schedule decides who goes first:
// at the start of the block, after each __syncthreads, and after each warp
// operation. Running in index order alone can hide a missing barrier (a thread
// may happen to read only values that earlier threads already wrote), so tests
// should try all three orders.
//
// The process-wide default comes from the environment variable
//   CONVKIT_SIM_SCHEDULE=forward | reverse | random:SEED
// read on first use (forward when unset). Tests set it programmatically with
// set_schedule() or ScopedSchedule.
#include <cstdint>
#include <string>
#include <string_view>

namespace convkit::sim {

enum class ScheduleOrder {
  forward,  // ascending linear thread index
  reverse,  // descending linear thread index
  random,   // a fresh permutation per block and per release, from a seed
};

struct Schedule {
  ScheduleOrder order = ScheduleOrder::forward;
  std::uint64_t seed = 0;  // used by ScheduleOrder::random only

  // Parses "forward", "reverse" or "random:SEED" (SEED a decimal integer);
  // throws convkit::Error naming the accepted forms otherwise.
  static Schedule parse(std::string_view text);
  std::string str() const;

  friend bool operator==(const Schedule&, const Schedule&) = default;
};

// The schedule used by launches from now on. Thread-safe, but a launch that is
// already running keeps the schedule it started with.
void set_schedule(const Schedule& schedule);
Schedule current_schedule();

// Sets a schedule for the lifetime of the object, then restores the previous one.
class ScopedSchedule {
 public:
  explicit ScopedSchedule(const Schedule& schedule) : previous_(current_schedule()) {
    set_schedule(schedule);
  }
  ~ScopedSchedule() { set_schedule(previous_); }
  ScopedSchedule(const ScopedSchedule&) = delete;
  ScopedSchedule& operator=(const ScopedSchedule&) = delete;

 private:
  Schedule previous_;
};

}  // namespace convkit::sim
