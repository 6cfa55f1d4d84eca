// __syncthreads and its predicate forms, and the block-level mistakes the sim
// reports as convkit::Error instead of hanging: divergent barriers, a warp
// built-in waiting on lanes parked at a barrier, __trap, launches from kernels.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::Dim;
using sim_test_kernels::SourceLines;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class Barrier : public sim_test::WithSchedule {};

TEST_P(Barrier, PredicateFormsCountAndOrOverThreadsThatHaveNotExited) {
  const Dim grid{4};
  const Dim block{8, 4, 3};  // 96 threads: three warps
  const unsigned per_block = block.x * block.y * block.z;
  const unsigned n = grid.x * per_block;
  std::mt19937 rng(sim_test::kSeed);
  std::vector<int> exits(n), preds(n);
  for (unsigned i = 0; i < n; ++i) {
    exits[i] = rng() % 8 == 0;
    const unsigned b = i / per_block;
    preds[i] = b == 0 ? 0 : b == 1 ? 1 : static_cast<int>(rng() % 2);  // all false, all true, mixed
  }
  // Block 3: one thread stays, the rest exit.
  for (unsigned i = 3 * per_block; i < n; ++i) exits[i] = i != 3 * per_block + 50;

  std::vector<int> counts(n, -1), ands(n, -1), ors(n, -1);
  sim_test_kernels::barrier_predicates(grid, block, exits.data(), preds.data(), counts.data(),
                                       ands.data(), ors.data());
  for (unsigned b = 0; b < grid.x; ++b) {
    int count = 0, live = 0;
    for (unsigned i = b * per_block; i < (b + 1) * per_block; ++i) {
      if (exits[i]) continue;
      ++live;
      count += preds[i] != 0;
    }
    for (unsigned i = b * per_block; i < (b + 1) * per_block; ++i) {
      if (exits[i]) continue;
      EXPECT_EQ(counts[i], count) << "block " << b << ", thread " << i;
      EXPECT_EQ(ands[i] != 0, count == live) << "block " << b << ", thread " << i;
      EXPECT_EQ(ors[i] != 0, count > 0) << "block " << b << ", thread " << i;
    }
  }
}

TEST_P(Barrier, DivergentBarrierIsReportedWithBothLines) {
  SourceLines lines;
  const std::string message =
      sim_test::error_message([&] { sim_test_kernels::divergent_barrier(&lines); });
  ASSERT_GT(lines.first, 0);
  ASSERT_GT(lines.second, 0);
  EXPECT_TRUE(contains(message, "divergent barrier")) << message;
  EXPECT_TRUE(contains(message, "barriers.cu:" + std::to_string(lines.first))) << message;
  EXPECT_TRUE(contains(message, "barriers.cu:" + std::to_string(lines.second))) << message;
}

TEST_P(Barrier, WarpOpWaitingOnLanesAtABarrierIsADeadlock) {
  SourceLines lines;
  const std::string message =
      sim_test::error_message([&] { sim_test_kernels::shuffle_waits_for_barrier(&lines); });
  EXPECT_TRUE(contains(message, "deadlock")) << message;
  EXPECT_TRUE(contains(message, "__syncthreads at ")) << message;
  EXPECT_TRUE(contains(message, "barriers.cu:" + std::to_string(lines.first))) << message;
  EXPECT_TRUE(contains(message, "__shfl_sync")) << message;
  EXPECT_TRUE(contains(message, "barriers.cu:" + std::to_string(lines.second))) << message;
}

INSTANTIATE_TEST_SUITE_P(sim, Barrier, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

class KernelErrors : public sim_test::WithSchedule {};

TEST_P(KernelErrors, TrapNamesTheBlockAndThread) {
  const std::string message = sim_test::error_message(sim_test_kernels::trap_in_one_thread);
  EXPECT_TRUE(contains(message, "block (1,0,0)")) << message;
  EXPECT_TRUE(contains(message, "thread (3,0,0)")) << message;
  EXPECT_TRUE(contains(message, "__trap() called at ")) << message;
}

TEST_P(KernelErrors, LaunchFromAKernelIsRefused) {
  const std::string message = sim_test::error_message(sim_test_kernels::launch_from_kernel);
  EXPECT_TRUE(contains(message, "dynamic parallelism")) << message;
}

TEST_P(KernelErrors, BuiltinOutsideAKernelIsRefused) {
  const std::string message = sim_test::error_message(sim_test_kernels::syncthreads_outside_kernel);
  EXPECT_TRUE(contains(message, "outside a kernel")) << message;
}

// A failed block leaves fibers parked mid-kernel; they must be recycled so the
// next launches run normally.
TEST_P(KernelErrors, LaunchesAfterAFailureWork) {
  for (int round = 0; round < 3; ++round) {
    SourceLines lines;
    sim_test::error_message([&] { sim_test_kernels::shuffle_waits_for_barrier(&lines); });
    sim_test::error_message([&] { sim_test_kernels::divergent_barrier(&lines); });
    std::vector<int> exits(96, 0), preds(96, 1), counts(96), ands(96), ors(96);
    sim_test_kernels::barrier_predicates(Dim{1}, Dim{96}, exits.data(), preds.data(), counts.data(),
                                         ands.data(), ors.data());
    for (int c : counts) EXPECT_EQ(c, 96);
  }
}

INSTANTIATE_TEST_SUITE_P(sim, KernelErrors, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
