// cp.async under sim (convkit/sim/async_copy.h, kernels/async_copy.cuh): the
// copies land at the wait that retires their group, zero-filled past
// src-size, and leaving out the wait or the barrier after it shows up as
// wrong data, an initcheck report or a racecheck report.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convkit/sim/check.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test::DeviceBuffer;
using sim_test_kernels::AsyncCopyMode;

constexpr int kElements = 512;

class AsyncCopy : public sim_test::WithSchedule {
 protected:
  AsyncCopy() : src_(kElements), out_(kElements) {
    for (int i = 0; i < kElements; ++i) src_[i] = static_cast<float>(i + 1);
  }
  // Runs the kernel and counts the elements of out that differ from src
  // zero-filled at n_valid, over [begin, end).
  int wrong(int n_valid, AsyncCopyMode mode, bool poison = false) {
    for (int i = 0; i < kElements; ++i) out_[i] = -1;
    sim_test_kernels::async_copy(src_.get(), n_valid, out_.get(), mode, poison);
    int bad = 0;
    for (int i = 0; i < kElements; ++i) bad += out_[i] != (i < n_valid ? src_[i] : 0.0f);
    return bad;
  }
  DeviceBuffer<float> src_, out_;
};

TEST_P(AsyncCopy, CopiesLandAtTheWaitAndZeroFillPastSrcSize) {
  EXPECT_EQ(wrong(kElements, AsyncCopyMode::correct), 0);
  EXPECT_EQ(wrong(kElements, AsyncCopyMode::correct, true), 0);
  // Ragged ends inside a 16-byte copy (3 of 4 valid) and inside group 1.
  for (int n_valid : {0, 3, 101, 256 + 1, 256 + 2, 256 + 3, 510}) {
    EXPECT_EQ(wrong(n_valid, AsyncCopyMode::correct), 0) << "n_valid " << n_valid;
  }
}

TEST_P(AsyncCopy, AMissingWaitLeavesTheDataOut) {
  // The reads find the stale -7s: not one copy landed.
  EXPECT_EQ(wrong(kElements, AsyncCopyMode::no_wait, true), kElements);
  // Without them, initcheck sees a read of shared memory nothing wrote.
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built without the sim checks (-DCONVKIT_SIM_CHECKS=OFF, or under ASan)";
  const convkit::sim::ScopedChecks checks(convkit::sim::Checks::parse("initcheck"));
  const std::string message = sim_test::error_message([&] { wrong(kElements, AsyncCopyMode::no_wait); });
  EXPECT_NE(message.find("sim initcheck"), std::string::npos) << message;
  EXPECT_NE(message.find("that no thread of the block has written"), std::string::npos) << message;
}

TEST_P(AsyncCopy, WaitGroupOneLeavesOnlyTheNewestGroupInFlight) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built without the sim checks (-DCONVKIT_SIM_CHECKS=OFF, or under ASan)";
  const convkit::sim::ScopedChecks checks(convkit::sim::Checks::parse("initcheck"));
  const std::string message =
      sim_test::error_message([&] { wrong(kElements, AsyncCopyMode::wait_keeps_newest); });
  // Row 0 (bytes 0..1023) landed; the first read of row 1 finds it unwritten.
  EXPECT_NE(message.find("sim initcheck"), std::string::npos) << message;
  const std::size_t at = message.find("(offset ");
  ASSERT_NE(at, std::string::npos) << message;
  EXPECT_GE(std::stoi(message.substr(at + 8)), 1024) << message;
  // Stale data stays in row 1 only.
  EXPECT_EQ(wrong(kElements, AsyncCopyMode::wait_keeps_newest, true), kElements / 2);
}

TEST_P(AsyncCopy, AMissingBarrierIsARaceThatRacecheckReports) {
  if (!convkit::sim::checks_available()) GTEST_SKIP() << "built without the sim checks (-DCONVKIT_SIM_CHECKS=OFF, or under ASan)";
  const convkit::sim::ScopedChecks checks(convkit::sim::Checks::parse("racecheck"));
  const std::string message = sim_test::error_message([&] { wrong(kElements, AsyncCopyMode::no_barrier); });
  EXPECT_NE(message.find("sim racecheck"), std::string::npos) << message;
  EXPECT_NE(message.find("hazard"), std::string::npos) << message;
  EXPECT_EQ(wrong(kElements, AsyncCopyMode::correct), 0);  // and the correct kernel is clean
}

TEST_P(AsyncCopy, AMisalignedDestinationNamesTheProblem) {
  const std::string message = sim_test::error_message([&] { sim_test_kernels::async_copy_misaligned(src_.get()); });
  EXPECT_NE(message.find("not aligned to the copy size (16 bytes)"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(sim, AsyncCopy, ::testing::ValuesIn(sim_test::kSchedules), sim_test::schedule_test_name);

}  // namespace
