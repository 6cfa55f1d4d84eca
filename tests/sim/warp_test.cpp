// Warp built-ins against a reference model written from the CUDA programming
// guide's wording: full and partial warps, every shuffle mode and width,
// out-of-range source lanes, divergent groups with different masks, votes,
// matches and reductions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::Dim;
using sim_test_kernels::ShuffleKind;
using sim_test_kernels::ShuffleLane;
using sim_test_kernels::VoteKind;
using sim_test_kernels::VoteLane;

constexpr int kPoison = -1;  // what a read of a lane that takes no part returns under sim

unsigned thread_count(Dim d) { return d.x * d.y * d.z; }

// Non-negative remainder, as "srcLane modulo width" means for negative lanes.
int modulo(int a, int b) { return ((a % b) + b) % b; }

// The value lane `i` receives, from the guide:
//  __shfl_sync: lane srcLane modulo width of the caller's width-wide section.
//  __shfl_up_sync: caller - delta; the lowest delta lanes of a section keep their own.
//  __shfl_down_sync: caller + delta; the highest delta lanes of a section keep their own.
//  __shfl_xor_sync: caller ^ laneMask; a later section cannot be read (own value).
// A source lane that is not in the caller's group reads as kPoison.
int expected_shuffle(const std::vector<ShuffleLane>& lanes, unsigned i) {
  const ShuffleLane& me = lanes[i];
  const int lane = static_cast<int>(i % 32);
  const int w = me.width;
  const int section = lane / w * w;
  int source = lane;
  switch (me.kind) {
    case ShuffleKind::idx: source = section + modulo(me.arg, w); break;
    case ShuffleKind::up: source = lane - section >= me.arg ? lane - me.arg : lane; break;
    case ShuffleKind::down: source = lane - section + me.arg < w ? lane + me.arg : lane; break;
    case ShuffleKind::xor_: {
      const int partner = lane ^ me.arg;
      source = partner / w <= lane / w ? partner : lane;
      break;
    }
  }
  const unsigned source_index = i / 32 * 32 + static_cast<unsigned>(source);
  const bool takes_part = source_index < lanes.size() && ((me.mask >> source) & 1u) &&
                          lanes[source_index].mask == me.mask;
  return takes_part ? lanes[source_index].value : kPoison;
}

void expect_shuffles(Dim block, const std::vector<ShuffleLane>& lanes) {
  ASSERT_EQ(lanes.size(), thread_count(block));
  std::vector<int> got(lanes.size(), 12345);
  sim_test_kernels::shuffle(block, lanes.data(), got.data());
  for (unsigned i = 0; i < lanes.size(); ++i) {
    EXPECT_EQ(got[i], expected_shuffle(lanes, i))
        << "thread " << i << " (lane " << i % 32 << "), mask 0x" << std::hex << lanes[i].mask
        << std::dec << ", kind " << static_cast<int>(lanes[i].kind) << ", arg " << lanes[i].arg
        << ", width " << lanes[i].width;
  }
}

// Every thread with the full mask and operands from `arg_of(lane)`.
std::vector<ShuffleLane> uniform_lanes(unsigned n, ShuffleKind kind, int width,
                                       const std::function<int(unsigned)>& arg_of) {
  std::vector<ShuffleLane> lanes(n);
  for (unsigned i = 0; i < n; ++i) {
    lanes[i] = ShuffleLane{0xffffffffu, kind, arg_of(i % 32), width, static_cast<int>(1000 + i)};
  }
  return lanes;
}

class Shuffle : public sim_test::WithSchedule {};

TEST_P(Shuffle, FullWarpsEveryModeAndWidth) {
  const Dim block{64};
  for (int width : {1, 2, 4, 8, 16, 32}) {
    SCOPED_TRACE(testing::Message() << "width " << width);
    // Source lanes from -5 to 39: in range, negative and past the section.
    expect_shuffles(block, uniform_lanes(64, ShuffleKind::idx, width, [](unsigned l) {
                      return static_cast<int>(l * 7 + 3) % 45 - 5;
                    }));
    // Deltas from 0 to 8, some larger than small widths.
    expect_shuffles(block, uniform_lanes(64, ShuffleKind::up, width,
                                         [](unsigned l) { return static_cast<int>(l % 9); }));
    expect_shuffles(block, uniform_lanes(64, ShuffleKind::down, width,
                                         [](unsigned l) { return static_cast<int>(l % 9); }));
    // Lane masks over all 5 bits, so partners fall in earlier and later sections.
    expect_shuffles(block, uniform_lanes(64, ShuffleKind::xor_, width,
                                         [](unsigned l) { return static_cast<int>(l * 5 % 32); }));
  }
}

TEST_P(Shuffle, UniformDeltasLikeAReduction) {
  for (int delta : {1, 2, 4, 8, 16, 31}) {
    SCOPED_TRACE(testing::Message() << "delta " << delta);
    expect_shuffles(Dim{32},
                    uniform_lanes(32, ShuffleKind::down, 32, [=](unsigned) { return delta; }));
    expect_shuffles(Dim{32},
                    uniform_lanes(32, ShuffleKind::up, 32, [=](unsigned) { return delta; }));
    expect_shuffles(Dim{32},
                    uniform_lanes(32, ShuffleKind::xor_, 32, [=](unsigned) { return delta; }));
  }
}

// blockDim not a multiple of 32: the last warp is short, and its missing lanes
// count as exited. Reads of lanes that exist must be exact; reads of missing
// lanes are undefined in CUDA and poisoned here.
TEST_P(Shuffle, PartialWarps) {
  for (Dim block : {Dim{40}, Dim{5, 3, 3}, Dim{7}, Dim{33}}) {
    SCOPED_TRACE(testing::Message() << "block " << block.x << "x" << block.y << "x" << block.z);
    const unsigned n = thread_count(block);
    for (int width : {4, 32}) {
      expect_shuffles(block, uniform_lanes(n, ShuffleKind::idx, width, [](unsigned l) {
                        return static_cast<int>(l * 3 % 11);
                      }));
      expect_shuffles(block,
                      uniform_lanes(n, ShuffleKind::down, width, [](unsigned) { return 1; }));
      expect_shuffles(block, uniform_lanes(n, ShuffleKind::up, width, [](unsigned) { return 2; }));
      expect_shuffles(block,
                      uniform_lanes(n, ShuffleKind::xor_, width, [](unsigned) { return 1; }));
    }
  }
}

TEST_P(Shuffle, ReadingALaneThatTakesNoPartIsPoisoned) {
  // 8 threads: lanes 8-31 do not exist; lane 0 reads lane 16.
  std::vector<ShuffleLane> lanes(8);
  for (unsigned i = 0; i < 8; ++i) lanes[i] = {0xffffffffu, ShuffleKind::down, 16, 32, 7};
  std::vector<int> got(8);
  sim_test_kernels::shuffle(Dim{8}, lanes.data(), got.data());
  for (int v : got) EXPECT_EQ(v, kPoison);
}

// Lanes of one warp in several groups at once, each with its own mask, mode
// and width, as after divergent branches.
TEST_P(Shuffle, DivergentGroupsWithDifferentMasks) {
  std::vector<ShuffleLane> lanes(64);
  for (unsigned i = 0; i < 64; ++i) {
    const unsigned lane = i % 32;
    ShuffleLane& l = lanes[i];
    l.value = static_cast<int>(100 * i);
    if (i < 32) {
      // Warp 0: even lanes xor among themselves, odd lanes shuffle down.
      if (lane % 2 == 0) {
        l = {0x55555555u, ShuffleKind::xor_, 2, 32, l.value};
      } else {
        l = {0xAAAAAAAAu, ShuffleKind::down, 2, 32, l.value};
      }
    } else if (lane < 10) {  // warp 1: three uneven groups
      l = {0x000003FFu, ShuffleKind::idx, static_cast<int>(lane) + 3, 16, l.value};
    } else if (lane < 21) {
      l = {0x001FFC00u, ShuffleKind::up, 1, 8, l.value};
    } else {
      l = {0xFFE00000u, ShuffleKind::xor_, 4, 16, l.value};
    }
  }
  expect_shuffles(Dim{64}, lanes);
}

TEST_P(Shuffle, EightByteValues) {
  const std::vector<ShuffleLane> lanes =
      uniform_lanes(48, ShuffleKind::xor_, 16, [](unsigned l) { return static_cast<int>(l % 16); });
  std::vector<double> got(48);
  sim_test_kernels::shuffle_double(Dim{48}, lanes.data(), got.data());
  for (unsigned i = 0; i < 48; ++i) {
    const int expected = expected_shuffle(lanes, i);
    if (expected == kPoison) {
      EXPECT_TRUE(std::isnan(got[i])) << "thread " << i;  // all-one bytes are a NaN
    } else {
      EXPECT_EQ(got[i], expected + 0.5) << "thread " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(sim, Shuffle, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

// ---- votes, matches, reductions

// Reference for one lane: the group is every existing lane with the same mask.
long long expected_vote(const std::vector<VoteLane>& lanes, unsigned i) {
  const VoteLane& me = lanes[i];
  const unsigned first = i / 32 * 32;
  unsigned group = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (first + l < lanes.size() && lanes[first + l].mask == me.mask && ((me.mask >> l) & 1u)) {
      group |= 1u << l;
    }
  }
  unsigned ballot = 0, same = 0;
  long long sum = 0, lowest = me.value, highest = me.value;
  for (unsigned l = 0; l < 32; ++l) {
    if (((group >> l) & 1u) == 0) continue;
    const int v = lanes[first + l].value;
    ballot |= (v != 0 ? 1u : 0u) << l;
    same |= (v == me.value ? 1u : 0u) << l;
    sum += v;
    lowest = std::min<long long>(lowest, v);
    highest = std::max<long long>(highest, v);
  }
  switch (me.kind) {
    case VoteKind::ballot: return ballot;
    case VoteKind::any: return ballot != 0;
    case VoteKind::all: return ballot == group;
    case VoteKind::match_any: return same;
    case VoteKind::reduce_add: return sum;
    case VoteKind::reduce_min: return lowest;
    case VoteKind::reduce_max: return highest;
    case VoteKind::syncwarp: return me.value;
  }
  return 0;
}

void expect_votes(Dim block, const std::vector<VoteLane>& lanes) {
  std::vector<long long> got(lanes.size());
  sim_test_kernels::vote(block, lanes.data(), got.data());
  for (unsigned i = 0; i < lanes.size(); ++i) {
    long long expected = expected_vote(lanes, i);
    if (lanes[i].kind == VoteKind::ballot || lanes[i].kind == VoteKind::match_any) {
      expected = static_cast<unsigned>(expected);  // the kernel stores unsigned bits
    }
    EXPECT_EQ(got[i], expected) << "thread " << i << ", kind " << static_cast<int>(lanes[i].kind);
  }
}

class Vote : public sim_test::WithSchedule {};

TEST_P(Vote, EveryKindOnFullAndPartialWarps) {
  const VoteKind kinds[] = {VoteKind::ballot,     VoteKind::any,        VoteKind::all,
                            VoteKind::match_any,  VoteKind::reduce_add, VoteKind::reduce_min,
                            VoteKind::reduce_max, VoteKind::syncwarp};
  for (VoteKind kind : kinds) {
    for (unsigned n : {32u, 45u, 13u}) {
      SCOPED_TRACE(testing::Message()
                   << "kind " << static_cast<int>(kind) << ", " << n << " threads");
      std::vector<VoteLane> lanes(n);
      for (unsigned i = 0; i < n; ++i) {
        lanes[i] = {0xffffffffu, kind, static_cast<int>((i * 37) % 7) - 3};
      }
      expect_votes(Dim{n}, lanes);
      for (VoteLane& l : lanes) l.value = 1;  // all true: __all_sync must say so
      expect_votes(Dim{n}, lanes);
    }
  }
}

TEST_P(Vote, DivergentGroupsWithDifferentMasksAndKinds) {
  std::vector<VoteLane> lanes(32);
  for (unsigned lane = 0; lane < 32; ++lane) {
    const int value = static_cast<int>(lane % 5 == 0 ? 0 : lane);
    if (lane < 8) {
      lanes[lane] = {0x000000FFu, VoteKind::ballot, value};
    } else if (lane < 12) {
      lanes[lane] = {0x00000F00u, VoteKind::all, value};
    } else if (lane % 2 == 0) {
      lanes[lane] = {0x55555555u & 0xFFFFF000u, VoteKind::reduce_add, value};
    } else {
      lanes[lane] = {0xAAAAAAAAu & 0xFFFFF000u, VoteKind::match_any, value % 3};
    }
  }
  expect_votes(Dim{32}, lanes);
}

INSTANTIATE_TEST_SUITE_P(sim, Vote, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

class WarpBuiltins : public sim_test::WithSchedule {};

// CUDA only promises that the caller is in __activemask(); the sim returns
// exactly that, so code never waits for a lane that is not coming.
TEST_P(WarpBuiltins, ActiveMaskIsTheCallingLane) {
  std::vector<unsigned> got(32);
  sim_test_kernels::active_masks(got.data());
  for (unsigned lane = 0; lane < 32; ++lane) EXPECT_EQ(got[lane], 1u << lane);
}

TEST_P(WarpBuiltins, WidthMustBeAPowerOfTwoUpTo32) {
  for (int width : {0, 3, 12, 64}) {
    const std::string message =
        sim_test::error_message([&] { sim_test_kernels::shuffle_with_width(width); });
    EXPECT_NE(message.find("width " + std::to_string(width)), std::string::npos) << message;
  }
  sim_test_kernels::shuffle_with_width(8);  // fine
}

TEST_P(WarpBuiltins, CallingLaneMustBeInTheMask) {
  const std::string message = sim_test::error_message(sim_test_kernels::shuffle_with_foreign_mask);
  EXPECT_NE(message.find("is not in the mask"), std::string::npos) << message;
  EXPECT_NE(message.find("warp.cu:"), std::string::npos) << message;
}

TEST_P(WarpBuiltins, SameMaskAtDifferentBuiltinsIsReported) {
  const std::string message = sim_test::error_message(sim_test_kernels::mixed_warp_builtins);
  EXPECT_NE(message.find("meet at different built-ins"), std::string::npos) << message;
  EXPECT_NE(message.find("__shfl_sync"), std::string::npos) << message;
  EXPECT_NE(message.find("__ballot_sync"), std::string::npos) << message;
}

TEST_P(WarpBuiltins, SyncwarpWithOneMaskFromTwoLinesIsOneBarrier) {
  std::vector<int> out(32, -1);
  sim_test_kernels::syncwarp_from_two_sites(out.data());
  for (unsigned lane = 1; lane < 32; lane += 2) {
    EXPECT_EQ(out[lane], static_cast<int>(10 * (lane - 1))) << "lane " << lane;
  }
}

INSTANTIATE_TEST_SUITE_P(sim, WarpBuiltins, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
