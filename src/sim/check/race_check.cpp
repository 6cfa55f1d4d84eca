// racecheck's per-word rule. See race_check.h.
#include "sim/check/race_check.h"

namespace convkit::sim::detail {
namespace {

bool same_interval(const Access& a, const RaceContext& now) {
  return a.block == now.block && a.epoch == now.epoch;
}

}  // namespace

void check_race(WordState& word, const RaceContext& now, bool write, bool global,
                std::vector<Conflict>& conflicts) {
  const auto consider = [&](const Access& earlier, bool earlier_writes) {
    if (earlier.block == 0 || (!write && !earlier_writes)) return;
    const Hazard hazard = !earlier_writes ? Hazard::write_after_read
                          : write         ? Hazard::write_after_write
                                          : Hazard::read_after_write;
    if (earlier.block == now.block) {
      if (earlier.epoch != now.epoch || earlier.thread == now.thread) return;
      const bool same_warp = earlier.thread / 32 == now.thread / 32;
      if (same_warp && now.clocks[earlier.thread % 32] > earlier.clock) return;
      conflicts.push_back(Conflict{hazard, false, earlier});
    } else if (global && earlier.block >= now.launch_first_block) {
      conflicts.push_back(Conflict{hazard, true, earlier});
    }
  };
  consider(word.write, true);
  consider(word.reads[0], false);
  consider(word.reads[1], false);

  const Access me{now.block, now.epoch, now.clock, now.thread, now.pc, now.proxy_fences};
  if (write) {
    word.write = me;
  } else if (!same_interval(word.reads[0], now) || word.reads[0].thread == now.thread) {
    word.reads[0] = me;
  } else {
    word.reads[1] = me;
  }
}

}  // namespace convkit::sim::detail
