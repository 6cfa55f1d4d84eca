// Launch geometry: each (blockIdx, threadIdx) of 1-D, 2-D and 3-D launches runs
// exactly once; bad configurations are refused; the schedule order is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "convkit/sim/schedule.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::Dim;

unsigned volume(Dim d) { return d.x * d.y * d.z; }

class GridShapes : public sim_test::WithSchedule {};

TEST_P(GridShapes, EveryBlockAndThreadRunsExactlyOnce) {
  const struct {
    Dim grid, block;
  } shapes[] = {
      {{7}, {33}},              // 1-D, partial last warp
      {{1000}, {1}},            // many one-thread blocks
      {{3, 5}, {8, 4}},         // 2-D
      {{2, 3, 4}, {4, 3, 5}},   // 3-D
      {{1, 1, 3}, {1, 2, 64}},  // deepest block z allowed
      {{2}, {1024}},            // the largest block
  };
  for (const auto& shape : shapes) {
    SCOPED_TRACE(testing::Message()
                 << "grid " << shape.grid.x << "x" << shape.grid.y << "x" << shape.grid.z
                 << ", block " << shape.block.x << "x" << shape.block.y << "x" << shape.block.z);
    std::vector<unsigned> hits(volume(shape.grid) * volume(shape.block), 0);
    int bad = 0;
    sim_test_kernels::record_indices(shape.grid, shape.block, hits.data(), &bad);
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1u), static_cast<long>(hits.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, GridShapes, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

TEST(GridLimits, BadConfigurationsAreRefused) {
  const struct {
    Dim grid, block;
    const char* reason;
  } cases[] = {
      {{1}, {1025}, "block too large"},       // more than 1024 threads
      {{1}, {32, 32, 2}, "block too large"},  // 2048 threads
      {{1}, {1, 1, 65}, "block too large"},   // blockDim.z > 64
      {{0}, {32}, "empty grid or block"},
      {{1}, {32, 0}, "empty grid or block"},
      {{1, 65536}, {1}, "grid too large"},  // gridDim.y > 65535
  };
  for (const auto& c : cases) {
    unsigned hit = 0;
    int bad = 0;
    const std::string message = sim_test::error_message(
        [&] { sim_test_kernels::record_indices(c.grid, c.block, &hit, &bad); });
    EXPECT_NE(message.find(c.reason), std::string::npos) << message;
  }
}

std::vector<unsigned> iota(unsigned n) {
  std::vector<unsigned> v(n);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

TEST(ScheduleOrder, ForwardAndReverseRunThreadsInIndexOrder) {
  constexpr unsigned n = 64;
  std::vector<unsigned> before(n), after(n);
  {
    convkit::sim::ScopedSchedule s(convkit::sim::Schedule::parse("forward"));
    sim_test_kernels::record_order(n, before.data(), after.data());
    EXPECT_EQ(before, iota(n));
    EXPECT_EQ(after, iota(n));
  }
  {
    convkit::sim::ScopedSchedule s(convkit::sim::Schedule::parse("reverse"));
    sim_test_kernels::record_order(n, before.data(), after.data());
    std::vector<unsigned> descending = iota(n);
    std::reverse(descending.begin(), descending.end());
    EXPECT_EQ(before, descending);
    EXPECT_EQ(after, descending);
  }
}

TEST(ScheduleOrder, RandomIsAPermutationThatRepeatsForASeed) {
  constexpr unsigned n = 64;
  std::vector<unsigned> before(n), after(n), again_before(n), again_after(n), other(n), unused(n);
  {
    convkit::sim::ScopedSchedule s(convkit::sim::Schedule::parse("random:7"));
    sim_test_kernels::record_order(n, before.data(), after.data());
    sim_test_kernels::record_order(n, again_before.data(), again_after.data());
  }
  {
    convkit::sim::ScopedSchedule s(convkit::sim::Schedule::parse("random:8"));
    sim_test_kernels::record_order(n, other.data(), unused.data());
  }
  EXPECT_TRUE(std::is_permutation(before.begin(), before.end(), iota(n).begin()));
  EXPECT_TRUE(std::is_permutation(after.begin(), after.end(), iota(n).begin()));
  EXPECT_NE(before, iota(n));
  EXPECT_NE(after, before);  // reshuffled at the barrier
  EXPECT_EQ(before, again_before);
  EXPECT_EQ(after, again_after);
  EXPECT_NE(before, other);
}

}  // namespace
