// Dynamic shared memory: exact size, 16-byte alignment, poisoned with 0xFF at
// the start of every block, usable across the block.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convkit/sim/runtime.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::SharedProbe;

class DynamicShared : public sim_test::WithSchedule {};

TEST_P(DynamicShared, ExactSizePoisonedInEveryBlock) {
  // 300 B holds 75 ints (more than the 64 threads), 40 B only 10; 0 B is legal.
  for (std::size_t bytes :
       {std::size_t{300}, std::size_t{40}, std::size_t{0}, std::size_t{48 * 1024}}) {
    SCOPED_TRACE(testing::Message() << bytes << " bytes");
    constexpr unsigned kBlocks = 50;
    std::vector<SharedProbe> probes(kBlocks);
    sim_test_kernels::probe_dynamic_shared(kBlocks, 64, bytes, probes.data());
    for (unsigned b = 0; b < kBlocks; ++b) {
      EXPECT_EQ(probes[b].bytes, bytes) << "block " << b;
      EXPECT_TRUE(probes[b].poisoned) << "block " << b;
      EXPECT_TRUE(probes[b].aligned) << "block " << b;
      EXPECT_TRUE(probes[b].sum_ok) << "block " << b;
    }
  }
}

TEST_P(DynamicShared, MoreThanAGpuOffersIsRefused) {
  std::vector<SharedProbe> probes(1);
  const std::string message = sim_test::error_message([&] {
    sim_test_kernels::probe_dynamic_shared(1, 32, convkit::sim::kMaxDynamicSharedBytes + 1,
                                           probes.data(), convkit::sim::kMaxDynamicSharedBytes);
  });
  EXPECT_NE(message.find("too much dynamic shared memory"), std::string::npos) << message;
}

// Above 48 KB a kernel must opt in first, as cudaFuncSetAttribute makes it on
// a GPU; after that it gets what it asked for and no more.
TEST_P(DynamicShared, MoreThan48KbNeedsTheKernelsOptIn) {
  std::vector<SharedProbe> probes(1);
  constexpr std::size_t kBig = 100 * 1024;
  const std::string refused = sim_test::error_message([&] {
    sim_test_kernels::probe_dynamic_shared(1, 32, kBig, probes.data(), /*opt_in=*/0);
  });
  EXPECT_NE(refused.find("must opt in first"), std::string::npos) << refused;
  sim_test_kernels::probe_dynamic_shared(1, 32, kBig, probes.data(), /*opt_in=*/kBig);
  EXPECT_EQ(probes[0].bytes, kBig);
  EXPECT_TRUE(probes[0].sum_ok);
  const std::string over = sim_test::error_message([&] {
    sim_test_kernels::probe_dynamic_shared(1, 32, kBig + 16, probes.data(), /*opt_in=*/kBig);
  });
  EXPECT_NE(over.find("for this kernel (102400 B"), std::string::npos) << over;
  const std::string too_much = sim_test::error_message(
      [&] { convkit::sim::set_max_dynamic_shared_bytes(nullptr, convkit::sim::kMaxDynamicSharedBytes + 1); });
  EXPECT_NE(too_much.find("more than a GPU offers"), std::string::npos) << too_much;
}

INSTANTIATE_TEST_SUITE_P(sim, DynamicShared, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
