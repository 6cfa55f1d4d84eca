// Launch geometry: each (blockIdx, threadIdx) of 1-D, 2-D and 3-D launches runs
// exactly once, and bad configurations are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::Dim;

unsigned volume(Dim d) { return d.x * d.y * d.z; }

class Grid : public sim_test::WithSchedule {};

TEST_P(Grid, EveryBlockAndThreadRunsExactlyOnce) {
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

TEST_P(Grid, BadConfigurationsAreRefused) {
  const struct {
    Dim grid, block;
    const char* reason;
  } cases[] = {
      {{1}, {1025}, "block too large"},       // more than 1024 threads
      {{1}, {32, 32, 2}, "block too large"},  // 2048 threads
      {{1}, {1, 1, 65}, "block too large"},   // blockDim.z > 64
      {{0}, {32}, "empty grid or block"},    {{1}, {32, 0}, "empty grid or block"},
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

INSTANTIATE_TEST_SUITE_P(sim, Grid, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
