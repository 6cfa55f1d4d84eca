// Atomics stay exact when many blocks update the same words from several OS
// threads at once.
#include <gtest/gtest.h>
#include <omp.h>

#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

class Atomics : public sim_test::WithSchedule {};

TEST_P(Atomics, ExactAcrossConcurrentBlocks) {
  constexpr unsigned kBlocks = 256, kThreads = 128, kTotal = kBlocks * kThreads;
  for (int repeat = 0; repeat < 3; ++repeat) {
    sim_test_kernels::AtomicTotals totals;
    sim_test_kernels::atomic_totals(kBlocks, kThreads, &totals);
    EXPECT_EQ(totals.int_sum, static_cast<int>(kTotal));
    EXPECT_EQ(totals.ull_sum, kTotal);
    EXPECT_EQ(totals.float_sum, static_cast<float>(kTotal));  // exact below 2^24
    EXPECT_EQ(totals.double_sum, static_cast<double>(kTotal));
    EXPECT_EQ(totals.cas_sum, kTotal);
    EXPECT_EQ(totals.max_index, static_cast<int>(kTotal - 1));
    EXPECT_EQ(totals.min_index, 0);
    EXPECT_EQ(totals.inc_wrapped, kTotal % 10);  // atomicInc(…, 9) counts modulo 10
    for (unsigned bin = 0; bin < 16; ++bin) EXPECT_EQ(totals.histogram[bin], kTotal / 16) << bin;
  }
}

// The numbers above only prove atomicity if blocks really overlap in time.
TEST_P(Atomics, BlocksRunConcurrentlyOnSeveralOsThreads) {
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "needs OMP_NUM_THREADS >= 2";
  EXPECT_TRUE(sim_test_kernels::blocks_run_concurrently());
}

INSTANTIATE_TEST_SUITE_P(sim, Atomics, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
