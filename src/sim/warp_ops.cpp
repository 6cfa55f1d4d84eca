// Warp built-ins: __syncwarp, shuffles, votes, matches and reductions.
//
// Each is a barrier over the lanes named in its mask. A lane that calls one
// joins the pending group of its warp with the same mask (or opens one) and
// parks. The group completes when every lane of the mask has arrived, lanes
// that exited or do not exist excepted; the lane that completes it computes
// every lane's result, following the rules of the PTX shfl/vote/match/redux
// instructions, and releases the group.
#include <algorithm>
#include <array>
#include <utility>

#include "convkit/core/error.h"
#include "convkit/sim/mma.h"
#include "sim/block_scheduler.h"

namespace convkit::sim::detail {
namespace {

constexpr std::uint64_t kPoison = ~std::uint64_t{0};  // all-one bytes: NaN, -1

bool is_shuffle(WarpOpKind kind) {
  return kind == WarpOpKind::shfl_idx || kind == WarpOpKind::shfl_up ||
         kind == WarpOpKind::shfl_down || kind == WarpOpKind::shfl_xor;
}

bool has_lane(unsigned lanes, unsigned lane) { return (lanes >> lane) & 1u; }

// The lane a shuffle reads, as the PTX shfl.sync instruction defines it. The
// warp is cut into segments of `width` lanes; `arg` is taken modulo 32.
//   idx:  lane (arg mod width) of the caller's own segment.
//   up:   lane - arg, unless that falls below the segment: then the caller's own.
//   down: lane + arg, unless that passes the segment's end: then the caller's own.
//   xor:  lane ^ arg, unless that passes the segment's end: then the caller's own
//         (a lower segment may be read; a higher one may not).
unsigned shuffle_source(WarpOpKind kind, unsigned lane, int arg, int width) {
  const unsigned b = static_cast<unsigned>(arg) & 31u;
  const unsigned w = static_cast<unsigned>(width);
  const unsigned segment_first = lane & ~(w - 1);
  const unsigned segment_last = segment_first + w - 1;
  switch (kind) {
    case WarpOpKind::shfl_idx: return segment_first | (b & (w - 1));
    case WarpOpKind::shfl_up: return lane >= segment_first + b ? lane - b : lane;
    case WarpOpKind::shfl_down: return lane + b <= segment_last ? lane + b : lane;
    case WarpOpKind::shfl_xor: return (lane ^ b) <= segment_last ? lane ^ b : lane;
    default: return lane;
  }
}

std::uint64_t combine(WarpOpKind kind, std::uint64_t a, std::uint64_t b) {
  switch (kind) {
    case WarpOpKind::reduce_add: return a + b;
    case WarpOpKind::reduce_min_signed:
      return static_cast<std::int64_t>(a) < static_cast<std::int64_t>(b) ? a : b;
    case WarpOpKind::reduce_max_signed:
      return static_cast<std::int64_t>(a) > static_cast<std::int64_t>(b) ? a : b;
    case WarpOpKind::reduce_min_unsigned: return std::min(a, b);
    case WarpOpKind::reduce_max_unsigned: return std::max(a, b);
    case WarpOpKind::reduce_and: return a & b;
    case WarpOpKind::reduce_or: return a | b;
    case WarpOpKind::reduce_xor: return a ^ b;
    default: return a;
  }
}

}  // namespace

const char* warp_op_name(WarpOpKind kind) {
  switch (kind) {
    case WarpOpKind::sync: return "__syncwarp";
    case WarpOpKind::shfl_idx: return "__shfl_sync";
    case WarpOpKind::shfl_up: return "__shfl_up_sync";
    case WarpOpKind::shfl_down: return "__shfl_down_sync";
    case WarpOpKind::shfl_xor: return "__shfl_xor_sync";
    case WarpOpKind::ballot: return "__ballot_sync";
    case WarpOpKind::any: return "__any_sync";
    case WarpOpKind::all: return "__all_sync";
    case WarpOpKind::match_any: return "__match_any_sync";
    case WarpOpKind::match_all: return "__match_all_sync";
    case WarpOpKind::reduce_add: return "__reduce_add_sync";
    case WarpOpKind::reduce_min_signed:
    case WarpOpKind::reduce_min_unsigned: return "__reduce_min_sync";
    case WarpOpKind::reduce_max_signed:
    case WarpOpKind::reduce_max_unsigned: return "__reduce_max_sync";
    case WarpOpKind::reduce_and: return "__reduce_and_sync";
    case WarpOpKind::reduce_or: return "__reduce_or_sync";
    case WarpOpKind::reduce_xor: return "__reduce_xor_sync";
    case WarpOpKind::mma: return "mma.sync";
    case WarpOpKind::wgmma_fence: return "wgmma.fence";
    case WarpOpKind::wgmma: return "wgmma.mma_async";
    case WarpOpKind::wgmma_commit: return "wgmma.commit_group";
    case WarpOpKind::wgmma_wait: return "wgmma.wait_group";
  }
  return "warp built-in";
}

std::uint64_t BlockScheduler::warp_op(WarpOpKind kind, unsigned mask, std::uint64_t operand,
                                      int arg, int width, SourceSite site) {
  ThreadSlot& thread = *running_thread_;
  const unsigned lane = thread.linear % 32;
  const unsigned warp_index = thread.linear / 32;
  // Both are undefined behaviour in CUDA; here they are errors.
  CK_CHECK(has_lane(mask, lane), warp_op_name(kind), " at ", site.file, ":", site.line,
           " with mask 0x", std::hex, mask, std::dec, ": the calling lane ", lane,
           " is not in the mask");
  CK_CHECK(!is_shuffle(kind) || (width >= 1 && width <= 32 && (width & (width - 1)) == 0),
           warp_op_name(kind), " at ", site.file, ":", site.line, ": width ", width,
           " is not a power of two from 1 to 32");

  thread.site = site;
  thread.warp_kind = kind;
  thread.warp_mask = mask;
  thread.operand = operand;
  thread.arg = arg;
  thread.width = width;
  WarpGroup& group = join_warp_group(warps_[warp_index], lane, thread);
  group.arrived |= 1u << lane;
  thread.state = ThreadState::at_warp_op;
  complete_ready_groups(warp_index);
  switch_to_next();
  return thread.warp_result;
}

WarpGroup& BlockScheduler::join_warp_group(WarpState& warp, unsigned lane,
                                           const ThreadSlot& thread) {
  for (WarpGroup& group : warp.pending) {
    if (group.mask != thread.warp_mask) continue;
    if (group.kind != thread.warp_kind) {
      // Lanes of one mask meeting at different built-ins: undefined in CUDA.
      const unsigned other_lane = static_cast<unsigned>(__builtin_ctz(group.arrived));
      const ThreadSlot& other = threads_[thread.linear - lane + other_lane];
      CK_FAIL("warp ", thread.linear / 32, ": lanes with mask 0x", std::hex, group.mask, std::dec,
              " meet at different built-ins: lane ", other_lane, " is in ", describe_wait(other),
              ", lane ", lane, " calls ", warp_op_name(thread.warp_kind), " at ", thread.site.file,
              ":", thread.site.line);
    }
    return group;
  }
  warp.pending.push_back(WarpGroup{thread.warp_mask, 0, thread.warp_kind});
  return warp.pending.back();
}

void BlockScheduler::complete_ready_groups(unsigned warp_index) {
  WarpState& warp = warps_[warp_index];
  for (std::size_t i = 0; i < warp.pending.size();) {
    const WarpGroup& group = warp.pending[i];
    const unsigned waited_for = group.mask & ~warp.absent;
    if ((waited_for & ~group.arrived) == 0) {
      complete_group(warp_index, i);  // removes it; look at the same index again
    } else {
      ++i;
    }
  }
}

void BlockScheduler::complete_group(unsigned warp_index, std::size_t group_index) {
  std::vector<WarpGroup>& pending = warps_[warp_index].pending;
  const WarpGroup group = pending[group_index];
  pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(group_index));

  compute_warp_results(warp_index, group);
  // racecheck: the lanes are now ordered; the profile: the warp may have met.
  checker_.warp_synced(warp_index, group.arrived, warps_[warp_index].absent);

  // Release the lanes in schedule order: ascending lanes for forward, descending
  // for reverse, shuffled for random.
  std::array<unsigned, 32> lanes{};
  unsigned n = 0;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (has_lane(group.arrived, lane)) lanes[n++] = lane;
  }
  if (schedule_.order == ScheduleOrder::reverse) {
    std::reverse(lanes.begin(), lanes.begin() + n);
  } else if (schedule_.order == ScheduleOrder::random) {
    shuffle(lanes.data(), n);
  }
  for (unsigned i = 0; i < n; ++i) {
    ThreadSlot& t = threads_[warp_index * 32 + lanes[i]];
    t.state = ThreadState::running;
    ready_.push(&t);
  }
}

void BlockScheduler::compute_warp_results(unsigned warp_index, const WarpGroup& group) {
  ThreadSlot* lanes = &threads_[warp_index * 32];
  const unsigned present = group.arrived;  // the lanes taking part
  const auto for_each_lane = [present](auto&& f) {
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (has_lane(present, lane)) f(lane);
    }
  };

  switch (group.kind) {
    case WarpOpKind::sync: for_each_lane([&](unsigned l) { lanes[l].warp_result = 0; }); break;
    case WarpOpKind::shfl_idx:
    case WarpOpKind::shfl_up:
    case WarpOpKind::shfl_down:
    case WarpOpKind::shfl_xor:
      for_each_lane([&](unsigned l) {
        const unsigned source = shuffle_source(group.kind, l, lanes[l].arg, lanes[l].width);
        // Reading a lane that takes no part is undefined: make it visible.
        lanes[l].warp_result = has_lane(present, source) ? lanes[source].operand : kPoison;
      });
      break;
    case WarpOpKind::ballot:
    case WarpOpKind::any:
    case WarpOpKind::all: {
      unsigned ballot = 0;
      for_each_lane([&](unsigned l) { ballot |= (lanes[l].operand != 0 ? 1u : 0u) << l; });
      const std::uint64_t result = group.kind == WarpOpKind::ballot ? ballot
                                   : group.kind == WarpOpKind::any  ? (ballot != 0)
                                                                    : (ballot == present);
      for_each_lane([&](unsigned l) { lanes[l].warp_result = result; });
      break;
    }
    case WarpOpKind::match_any:
      for_each_lane([&](unsigned l) {
        unsigned same = 0;
        for_each_lane(
            [&](unsigned m) { same |= (lanes[m].operand == lanes[l].operand ? 1u : 0u) << m; });
        lanes[l].warp_result = same;
      });
      break;
    case WarpOpKind::match_all: {
      bool all_equal = true;
      const unsigned first = static_cast<unsigned>(__builtin_ctz(present));
      for_each_lane(
          [&](unsigned l) { all_equal = all_equal && lanes[l].operand == lanes[first].operand; });
      for_each_lane([&](unsigned l) { lanes[l].warp_result = all_equal ? group.mask : 0; });
      break;
    }
    case WarpOpKind::mma: {
      // mma.sync.aligned needs the whole warp: a lane that exited or was left
      // out of the mask would leave its fragment registers undefined.
      CK_CHECK(present == 0xffffffffu, "warp ", warp_index, ": mma.sync at ", lanes[__builtin_ctz(present)].site.file,
               ":", lanes[__builtin_ctz(present)].site.line, " needs all 32 lanes, but only lanes 0x", std::hex,
               present, std::dec, " take part");
      std::array<MmaLane*, 32> frags{};
      for (unsigned l = 0; l < 32; ++l) {
        CK_CHECK(lanes[l].arg == lanes[0].arg, "warp ", warp_index, ": lanes ", 0, " and ", l,
                 " run mma.sync of different shapes at ", lanes[l].site.file, ":", lanes[l].site.line);
        frags[l] = reinterpret_cast<MmaLane*>(static_cast<std::uintptr_t>(lanes[l].operand));
        lanes[l].warp_result = 0;
      }
      const auto shape = static_cast<MmaShape>(lanes[0].arg);
      mma_sync_warp(shape, frags);
      if (checker_.profiler().active())
        checker_.profiler().add_tensor_fmas(shape == MmaShape::m16n8k16_bf16,
                                            shape == MmaShape::m16n8k16_bf16 ? 16 * 8 * 16 : 16 * 8 * 8);
      break;
    }
    case WarpOpKind::wgmma_fence:
    case WarpOpKind::wgmma:
    case WarpOpKind::wgmma_commit:
    case WarpOpKind::wgmma_wait: wgmma_complete(group.kind, warp_index, lanes); break;
    default: {  // the reductions
      const unsigned first = static_cast<unsigned>(__builtin_ctz(present));
      std::uint64_t total = lanes[first].operand;
      for_each_lane([&](unsigned l) {
        if (l != first) total = combine(group.kind, total, lanes[l].operand);
      });
      for_each_lane([&](unsigned l) { lanes[l].warp_result = total; });
      break;
    }
  }
}

}  // namespace convkit::sim::detail
