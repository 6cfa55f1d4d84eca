// The NCCL group on cuda, one rank (a machine with one GPU): its
// collectives, and DDP's buckets reduced through it on the GPU against plain
// training. The same checks run on sim in test_ddp (device_group_checks.h).
// Without a usable GPU every test skips, saying why; scripts/gpu-check.sh
// runs them with CONVKIT_TEST_REQUIRE_NCCL=1, which turns a skip into a
// failure, so a GPU run cannot pass while testing nothing.
#include <cstdlib>

#include <convkit/dist/device_group.h>

#include "device_group_checks.h"
#include "support/support.h"

namespace convkit::testing {
namespace {

const Device kGpu{DeviceType::cuda, 0};

// "" when the NCCL group can run here, else why not.
std::string why_not_here() {
  std::string why;
  for (const BackendInfo& info : list_backends())
    if (info.name == "cuda:0" || info.name == "cuda") {
      if (!info.usable) return "cuda is not usable: " + info.detail;
    }
  if (!dist::device_group_available(kGpu, &why)) return why;
  return "";
}

class NcclGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = why_not_here();
    if (why.empty()) return;
    const char* require = std::getenv("CONVKIT_TEST_REQUIRE_NCCL");
    if (require && *require && *require != '0') FAIL() << "CONVKIT_TEST_REQUIRE_NCCL is set, but " << why;
    GTEST_SKIP() << why;
  }
};

TEST_F(NcclGroup, OneRankSumsAndBroadcastsCudaTensors) {
  auto group = dist::device_group(kGpu, dist::world());
  EXPECT_EQ(group->backend(), "nccl");
  EXPECT_EQ(group->device(), kGpu);
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(one_rank_collectives_problem(group), "");
}

TEST_F(NcclGroup, RefusesTensorsOffItsDevice) {
  auto group = dist::device_group(kGpu, dist::world());
  EXPECT_TRUE(throws_with([&] { group->allreduce_sum(ones({2}, kSim)); }, {"is on sim", "tensors on cuda:0 only"}));
  EXPECT_TRUE(throws_with([&] { group->broadcast(ones({2}, kGpu), 1); }, {"root 1 is not a rank"}));
}

TEST_F(NcclGroup, DdpBucketsThroughOneNcclRankMatchPlainTraining) {
  // Not exactly 0 as on sim: a GPU kernel that accumulates with atomics may
  // round differently from one run to the next.
  EXPECT_LT(one_rank_reducer_difference(dist::device_group(kGpu, dist::world())), 1e-5);
}

}  // namespace
}  // namespace convkit::testing
