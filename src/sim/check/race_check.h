#pragma once
// racecheck's rule for one word: which earlier accesses conflict with this one.
//
// Two accesses of a block conflict when they come from different threads, at
// least one writes, and nothing orders them:
//   - a barrier orders everything before it against everything after it. Each
//     block run counts its barrier intervals ("epochs"), so an access of an
//     earlier epoch never conflicts.
//   - within one warp, __syncwarp and every *_sync built-in order the lanes
//     taking part. Each thread keeps a vector clock over the 32 lanes of its
//     warp; a built-in advances each taking-part lane's own entry, then gives
//     them all the entry-wise maximum. Lane j has seen lane i's access made at
//     i's clock c exactly when j's entry for i is above c.
// Nothing else orders threads: the order in which sim happens to run them, the
// reason a racy kernel often gives the right answer here, does not count.
//
// Each word keeps its last write and recent reads by two threads, so a write
// after many reads is checked against two of them: some conflicts of a word
// can go unreported, never a false one.
#include <cstdint>
#include <vector>

#include "sim/check/regions.h"

namespace convkit::sim::detail {

enum class Hazard : std::uint8_t { read_after_write, write_after_read, write_after_write };

struct RaceContext {
  std::uint32_t block = 0;               // serial of the running block run
  std::uint32_t epoch = 0;               // its current barrier interval
  std::uint32_t launch_first_block = 0;  // serial of the launch's first block run
  std::uint16_t thread = 0;              // linear index of the accessing thread
  std::uint32_t clock = 0;                // its own clock when it made the access
  const std::uint32_t* clocks = nullptr;  // its vector clock, 32 lanes
  const void* pc = nullptr;
  std::uint16_t proxy_fences = 0;          // its count of fence.proxy.async
};

struct Conflict {
  Hazard hazard;
  bool across_blocks;
  Access earlier;
};

// Checks the access against the word's history and records it. `global`:
// accesses of other blocks of the same launch count too (they are unordered).
void check_race(WordState& word, const RaceContext& now, bool write, bool global,
                std::vector<Conflict>& conflicts);

}  // namespace convkit::sim::detail
