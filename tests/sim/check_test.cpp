// The sim checks (convkit/sim/check.h) on kernels with one planted bug each
// (kernels/planted_bugs.cu): each bug is reported by the right check, at the
// line marked `// BUG: name`, and the correct variant of each kernel runs clean.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "convkit/sim/check.h"
#include "convkit/sim/runtime.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using convkit::sim::Checks;
using convkit::sim::ScopedChecks;
using sim_test::DeviceBuffer;

// "tests/sim/kernels/planted_bugs.cu:NN" for the line marked `// BUG: name`.
std::string bug_site(const std::string& name) {
  std::ifstream source(SIM_TEST_KERNEL_DIR "/planted_bugs.cu");
  std::string text;
  for (int line = 1; std::getline(source, text); ++line) {
    if (text.find("// BUG: " + name) != std::string::npos) return "tests/sim/kernels/planted_bugs.cu:" + std::to_string(line);
  }
  ADD_FAILURE() << "no line marked // BUG: " << name;
  return "?";
}

Checks only(bool Checks::*which) {
  Checks c;
  c.*which = true;
  return c;
}

bool forward() { return std::string(::testing::TestWithParam<const char*>::GetParam()) == "forward"; }

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "expected \"" << part << "\" in:\n" << text;
}

class SimCheck : public sim_test::WithSchedule {
 protected:
  void SetUp() override {
    if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
    (void)convkit::sim::take_check_warnings();
  }
};

TEST_P(SimCheck, MemcheckStopsAStaticSharedOverrunAtItsLine) {
  const ScopedChecks checks(only(&Checks::memcheck));
  DeviceBuffer<float> out(32);
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_static_shared_overrun(out.get()); });
  expect_contains(message, "sim memcheck: kernel ");
  expect_contains(message, "static_shared_overrun");
  expect_contains(message, "thread (31,0,0) reads 4 bytes");
  expect_contains(message, "offset 128 of the 128-byte __shared__ array declared at tests/sim/kernels/planted_bugs.cu:");
  expect_contains(message, "(4 bytes past its end)");
  expect_contains(message, "at " + bug_site("static-overrun"));
}

TEST_P(SimCheck, MemcheckStopsADynamicSharedOverrunAtItsLine) {
  const ScopedChecks checks(only(&Checks::memcheck));
  DeviceBuffer<float> out(32);
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_dynamic_shared_overrun(out.get()); });
  expect_contains(message, "sim memcheck: kernel ");
  expect_contains(message, "thread (31,0,0) writes 4 bytes");
  expect_contains(message, "offset 128 of the block's 128 bytes of dynamic shared memory (4 bytes past its end)");
  expect_contains(message, "at " + bug_site("dynamic-overrun"));
}

TEST_P(SimCheck, MemcheckStopsAGlobalOverrunByOneElement) {
  const ScopedChecks checks(only(&Checks::memcheck));
  constexpr int n = 100;  // 400 bytes: the guard starts right after, not at 512
  DeviceBuffer<float> out(n);
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_global_overrun(out.get(), n); });
  expect_contains(message, "block (3,0,0), thread (4,0,0) writes 4 bytes");
  expect_contains(message, "offset 400 of the 400-byte device allocation");
  expect_contains(message, "(4 bytes past its end)");
  expect_contains(message, "at " + bug_site("global-overrun"));
}

TEST_P(SimCheck, MemcheckStopsALocalArrayOverrun) {
  const ScopedChecks checks(only(&Checks::memcheck));
  DeviceBuffer<int> pick(32);
  DeviceBuffer<float> out(32);
  for (int t = 0; t < 32; ++t) pick[t] = t % 4;
  sim_test_kernels::planted_local_overrun(pick.get(), out.get());  // in bounds: clean
  EXPECT_EQ(out[31], 31.0f * 3);
  pick[5] = 4;
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_local_overrun(pick.get(), out.get()); });
  expect_contains(message, "thread (5,0,0) reads 4 bytes");
  expect_contains(message, "past a local array");
  expect_contains(message, "at " + bug_site("local-overrun"));
}

TEST_P(SimCheck, RacecheckReportsALostUpdateThatSimGetsRight) {
  DeviceBuffer<int> out(1);
  sim_test_kernels::planted_lost_update(out.get(), 64, false);  // no check: the bug hides
  EXPECT_EQ(out[0], 64);

  const ScopedChecks checks(only(&Checks::racecheck));
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_lost_update(out.get(), 64, false); });
  expect_contains(message, "sim racecheck: ");
  expect_contains(message, "lost_update");
  expect_contains(message, "-after-write hazard");
  expect_contains(message, "writes at " + bug_site("lost-update"));
  expect_contains(message, "wrote at " + bug_site("lost-update"));
  // Atomics are exempt.
  sim_test_kernels::planted_lost_update(out.get(), 64, true);
  EXPECT_EQ(out[0], 64);
}

TEST_P(SimCheck, RacecheckReportsAReadAfterWriteWithoutABarrier) {
  DeviceBuffer<int> out(32);
  const ScopedChecks checks(only(&Checks::racecheck));
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_neighbour_exchange(out.get(), false); });
  if (forward()) {
    // Each thread reads what its neighbour wrote just before it ran.
    expect_contains(message, "read-after-write hazard");
    expect_contains(message, "reads at " + bug_site("raw-read") + ", thread");
    expect_contains(message, "wrote at " + bug_site("raw-write"));
  } else {
    // Another order may read first: the same race, seen from its other end.
    expect_contains(message, "sim racecheck: ");
    expect_contains(message, bug_site("raw-read"));
    expect_contains(message, bug_site("raw-write"));
  }
  sim_test_kernels::planted_neighbour_exchange(out.get(), true);
  for (int t = 1; t < 32; ++t) EXPECT_EQ(out[t], t - 1);
}

TEST_P(SimCheck, RacecheckReportsAWarpSynchronousSumWithoutSyncwarp) {
  DeviceBuffer<int> in(32), out(1);
  std::iota(in.get(), in.get() + 32, 1);
  const ScopedChecks checks(only(&Checks::racecheck));
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_warp_sum(in.get(), out.get(), false); });
  expect_contains(message, "sim racecheck: ");
  expect_contains(message, "hazard at ");
  expect_contains(message, "at " + bug_site("warp-sync") + ", thread");
  expect_contains(message, "with no barrier or warp synchronisation between them");
  sim_test_kernels::planted_warp_sum(in.get(), out.get(), true);
  EXPECT_EQ(out[0], 32 * 33 / 2);
}

TEST_P(SimCheck, InitcheckStopsAReadOfUnwrittenSharedMemory) {
  DeviceBuffer<float> out(64);
  const ScopedChecks checks(only(&Checks::initcheck));
  const std::string message = sim_test::error_message([&] { sim_test_kernels::planted_uninitialised_read(out.get(), false); });
  expect_contains(message, "sim initcheck: kernel ");
  expect_contains(message, "reads 4 bytes");
  expect_contains(message, "of the 256-byte __shared__ array declared at tests/sim/kernels/planted_bugs.cu:");
  expect_contains(message, "that no thread of the block has written, at " + bug_site("uninitialised"));
  sim_test_kernels::planted_uninitialised_read(out.get(), true);
  EXPECT_EQ(out[63], 1.0f);
}

TEST_P(SimCheck, RacesBetweenBlocksAreReportedAndTheLaunchGoesOn) {
  const ScopedChecks checks(only(&Checks::racecheck));
  DeviceBuffer<int> out(1);
  sim_test_kernels::planted_blocks_share_a_word(out.get(), 4, false);  // does not throw
  const std::vector<std::string> warnings = convkit::sim::take_check_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  expect_contains(warnings[0], "between blocks");
  expect_contains(warnings[0], "write-after-write hazard");
  expect_contains(warnings[0], "writes at " + bug_site("cross-block"));
  expect_contains(warnings[0], "in another block of the same launch");

  sim_test_kernels::planted_blocks_share_a_word(out.get(), 4, true);
  EXPECT_TRUE(convkit::sim::take_check_warnings().empty());
  EXPECT_EQ(out[0], 3);
}

TEST_P(SimCheck, CorrectKernelsRunCleanUnderAllChecks) {
  const ScopedChecks checks(Checks::all());
  DeviceBuffer<int> out(64), in(32);
  sim_test_kernels::planted_lost_update(out.get(), 256, true);
  EXPECT_EQ(out[0], 256);
  sim_test_kernels::planted_neighbour_exchange(out.get(), true);
  sim_test_kernels::planted_warp_sum(in.get(), out.get(), true);
  DeviceBuffer<float> f(64);
  sim_test_kernels::planted_uninitialised_read(f.get(), true);
  constexpr int m = 37, n = 29, k = 45;  // odd sizes: partial tiles
  DeviceBuffer<float> a(m * k), b(k * n), c(m * n);
  sim_test_kernels::sgemm_tiled(sim_test_kernels::SgemmBarriers::both, a.get(), b.get(), c.get(), m, n, k);
  EXPECT_TRUE(convkit::sim::take_check_warnings().empty());
}

TEST_P(SimCheck, SgemmWithoutItsBarriersIsReportedWhateverTheAnswer) {
  const ScopedChecks checks(only(&Checks::racecheck));
  constexpr int m = 32, n = 32, k = 32;
  DeviceBuffer<float> a(m * k), b(k * n), c(m * n);
  for (auto barriers : {sim_test_kernels::SgemmBarriers::no_sync_after_load,
                        sim_test_kernels::SgemmBarriers::no_sync_after_use}) {
    const std::string message = sim_test::error_message(
        [&] { sim_test_kernels::sgemm_tiled(barriers, a.get(), b.get(), c.get(), m, n, k); });
    expect_contains(message, "sim racecheck: ");
    expect_contains(message, "sgemm.cu:");
  }
}

INSTANTIATE_TEST_SUITE_P(sim, SimCheck, ::testing::ValuesIn(sim_test::kSchedules), sim_test::schedule_test_name);

TEST(SimCheckSettings, ParseAndPrint) {
  EXPECT_EQ(Checks::parse("memcheck,initcheck"), (Checks{true, false, true}));
  EXPECT_EQ(Checks::parse("all"), Checks::all());
  EXPECT_EQ(Checks::parse(""), Checks{});
  EXPECT_EQ(Checks::parse("none"), Checks{});
  EXPECT_EQ(Checks::all().str(), "memcheck,racecheck,initcheck");
  EXPECT_EQ(Checks{}.str(), "none");
  const std::string message = sim_test::error_message([] { (void)Checks::parse("memcheck,leakcheck"); });
  expect_contains(message, "'leakcheck' not understood");
}

}  // namespace
