// Error messages of the block scheduler: where a stuck thread waits, divergent
// barriers and deadlocks. They name the kernel's own source lines, because
// every built-in records its caller's file and line.
#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/block_scheduler.h"

namespace convkit::sim::detail {
namespace {

std::string format_index(const uint3& i) {
  std::ostringstream os;
  os << "(" << i.x << "," << i.y << "," << i.z << ")";
  return os.str();
}

const char* barrier_name(BarrierKind kind) {
  switch (kind) {
    case BarrierKind::plain: return "__syncthreads";
    case BarrierKind::count: return "__syncthreads_count";
    case BarrierKind::all: return "__syncthreads_and";
    case BarrierKind::any: return "__syncthreads_or";
  }
  return "__syncthreads";
}

std::string hex(unsigned value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

// "0-15 17" for the set bits of `lanes`.
std::string lane_list(unsigned lanes) {
  std::ostringstream os;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (((lanes >> lane) & 1u) == 0) continue;
    unsigned last = lane;
    while (last + 1 < 32 && ((lanes >> (last + 1)) & 1u)) ++last;
    if (os.tellp() > 0) os << " ";
    os << lane;
    if (last > lane) os << "-" << last;
    lane = last;
  }
  return os.str();
}

}  // namespace

std::string BlockScheduler::block_name() const { return format_index(block_index_); }

std::string BlockScheduler::thread_name(const ThreadSlot& thread) const {
  return format_index(thread.index);
}

std::string BlockScheduler::describe_wait(const ThreadSlot& thread) const {
  std::ostringstream os;
  switch (thread.state) {
    case ThreadState::at_block_barrier:
      os << barrier_name(thread.barrier_kind) << " at " << thread.site.file << ":"
         << thread.site.line;
      break;
    case ThreadState::at_warp_op:
      os << warp_op_name(thread.warp_kind) << " (mask " << hex(thread.warp_mask) << ") at "
         << thread.site.file << ":" << thread.site.line;
      break;
    case ThreadState::not_started: os << "not started"; break;
    case ThreadState::running: os << "running"; break;
    case ThreadState::exited: os << "exited"; break;
  }
  return os.str();
}

std::string BlockScheduler::describe_divergent_barrier(const ThreadSlot& a,
                                                       const ThreadSlot& b) const {
  std::ostringstream os;
  os << "sim: divergent barrier in block " << block_name() << ": thread " << thread_name(a)
     << " waits in " << describe_wait(a) << " while thread " << thread_name(b) << " waits in "
     << describe_wait(b)
     << ". Every thread of a block that has not exited must reach the same __syncthreads; "
        "on a GPU this hangs or is undefined.";
  return os.str();
}

// Called when threads remain but none can run. A block barrier completes as
// soon as every live thread reaches it, so at least one thread waits in a warp
// built-in whose other lanes are elsewhere. Say, group by group, who is missing
// and where each missing lane waits.
std::string BlockScheduler::describe_deadlock() const {
  std::ostringstream os;
  os << "sim: deadlock in block " << block_name() << ": no thread can continue.";
  bool lane_at_block_barrier = false;
  for (std::size_t w = 0; w < warps_.size(); ++w) {
    for (const WarpGroup& group : warps_[w].pending) {
      const unsigned missing = group.mask & ~warps_[w].absent & ~group.arrived;
      const unsigned first_arrived = static_cast<unsigned>(__builtin_ctz(group.arrived));
      const ThreadSlot& waiter = threads_[w * 32 + first_arrived];
      os << "\n  warp " << w << ", lanes " << lane_list(group.arrived) << ": wait in "
         << describe_wait(waiter) << " for lanes " << lane_list(missing) << ", which wait in";
      // Missing lanes grouped by where they wait, in lane order.
      std::vector<std::pair<std::string, unsigned>> places;
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (((missing >> lane) & 1u) == 0) continue;
        const ThreadSlot& t = threads_[w * 32 + lane];
        lane_at_block_barrier = lane_at_block_barrier || t.state == ThreadState::at_block_barrier;
        const std::string place = describe_wait(t);
        auto it = std::find_if(places.begin(), places.end(),
                               [&](const auto& p) { return p.first == place; });
        if (it == places.end()) it = places.emplace(places.end(), place, 0u);
        it->second |= 1u << lane;
      }
      for (const auto& [place, lanes] : places) {
        os << "\n    lanes " << lane_list(lanes) << ": " << place;
      }
    }
  }
  if (lane_at_block_barrier) {
    os << "\nA warp built-in cannot complete while a lane it names waits at a block barrier, "
          "and the block barrier cannot complete while that warp built-in waits.";
  }
  return os.str();
}

}  // namespace convkit::sim::detail
