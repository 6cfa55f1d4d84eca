// The sim performance model (convkit/sim/profile.h) on kernels whose counts
// are known by hand (kernels/profile_kernels.cu): a coalesced copy, a strided
// copy, a shared-memory transpose with and without padding, 8-byte reads
// served per half-warp, a divergent
// branch, and dot products spelled with dev::fma. Every schedule must give the
// same counts: requests are formed by code address and occurrence, not by the
// order sim happens to run threads in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using convkit::sim::KernelProfile;
using convkit::sim::RequestCounts;
using convkit::sim::ScopedProfile;
using sim_test::DeviceBuffer;

class SimProfile : public sim_test::WithSchedule {
 protected:
  void SetUp() override {
    if (!convkit::sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  }
};

// The one kernel a profile holds.
KernelProfile only_kernel(const std::vector<KernelProfile>& profiles, const std::string& name) {
  EXPECT_EQ(profiles.size(), 1u);
  if (profiles.empty()) return {};
  EXPECT_NE(profiles[0].kernel.find(name), std::string::npos) << profiles[0].kernel;
  return profiles[0];
}

void expect_requests(const RequestCounts& c, std::uint64_t requests, std::uint64_t lanes, std::uint64_t sectors) {
  EXPECT_EQ(c.requests, requests);
  EXPECT_EQ(c.lanes, lanes);
  EXPECT_EQ(c.sectors, sectors);
}

TEST_P(SimProfile, CoalescedCopyTouchesFourSectorsPerWarpRequest) {
  constexpr unsigned kBlocks = 2, kThreads = 256, kN = kBlocks * kThreads;
  ScopedProfile profile;
  DeviceBuffer<float> in(kN), out(kN);
  sim_test_kernels::profile_coalesced_copy(in.get(), out.get(), kBlocks, kThreads);
  const KernelProfile p = only_kernel(profile.take(), "coalesced_copy");
  EXPECT_EQ(p.launches, 1u);
  EXPECT_EQ(p.blocks, kBlocks);
  EXPECT_EQ(p.threads, kN);
  // 16 warps, each one request of 32 lanes over 128 contiguous bytes.
  expect_requests(p.global_load, 16, kN, 16 * 4);
  expect_requests(p.global_store, 16, kN, 16 * 4);
  EXPECT_EQ(p.global_load.bytes, kN * 4u);
  EXPECT_EQ(p.global_load.unique_bytes, kN * 4u);
  EXPECT_EQ(p.shared().requests, 0u);
  EXPECT_EQ(p.barriers, 0u);
  EXPECT_EQ(p.fmas, 0u);
}

TEST_P(SimProfile, StridedCopyTouchesOneSectorPerLane) {
  constexpr unsigned kBlocks = 2, kThreads = 256, kN = kBlocks * kThreads;
  ScopedProfile profile;
  DeviceBuffer<float> in(kN * 32), out(kN);
  sim_test_kernels::profile_strided_copy(in.get(), out.get(), kBlocks, kThreads);
  const KernelProfile p = only_kernel(profile.take(), "strided_copy");
  expect_requests(p.global_load, 16, kN, 16 * 32);
  expect_requests(p.global_store, 16, kN, 16 * 4);
}

TEST_P(SimProfile, TransposeColumnReadIs32WayWithoutPaddingAndConflictFreeWithIt) {
  for (const bool padded : {false, true}) {
    SCOPED_TRACE(padded ? "padded" : "unpadded");
    ScopedProfile profile;
    DeviceBuffer<float> in(32 * 32), out(32 * 32);
    for (int i = 0; i < 32 * 32; ++i) in[i] = static_cast<float>(i);
    sim_test_kernels::profile_transpose(in.get(), out.get(), padded);
    EXPECT_EQ(out[3 * 32 + 5], in[5 * 32 + 3]);
    const KernelProfile p = only_kernel(profile.take(), "transpose");
    EXPECT_EQ(p.barriers, 1u);
    // Row writes: 32 consecutive words, one wavefront per warp.
    EXPECT_EQ(p.shared_store.requests, 32u);
    EXPECT_EQ(p.shared_store.wavefronts, 32u);
    EXPECT_EQ(p.shared_store.conflict_wavefronts, 0u);
    // Column reads: 32 words 32 (or 33) words apart.
    EXPECT_EQ(p.shared_load.requests, 32u);
    EXPECT_EQ(p.shared_load.lanes, 32u * 32u);
    EXPECT_EQ(p.shared_load.max_ways, padded ? 1u : 32u);
    EXPECT_EQ(p.shared_load.wavefronts, padded ? 32u : 32u * 32u);
    EXPECT_EQ(p.shared_load.conflict_wavefronts, padded ? 0u : 32u * 31u);
    expect_requests(p.global_load, 32, 32 * 32, 32 * 4);
  }
}

// 8-byte reads are served per half-warp: conflicts are counted within each
// half, so pitch 36 costs 2 wavefronts a half (4, where 2 would do) even
// though no bank holds more than two of the warp's 64 words.
TEST_P(SimProfile, EightByteReadsConflictWithinAHalfWarpOnly) {
  for (const int pitch : {40, 36}) {
    SCOPED_TRACE(pitch);
    ScopedProfile profile;
    DeviceBuffer<float> out(32);
    sim_test_kernels::profile_pair_reads(out.get(), pitch);
    EXPECT_EQ(out[5], static_cast<float>(2 * (1 * pitch + 2) + 1));  // lane 5: g 1, t 1
    const KernelProfile p = only_kernel(profile.take(), "pair_reads");
    EXPECT_EQ(p.shared_load.requests, 1u);
    EXPECT_EQ(p.shared_load.bytes, 256u);
    EXPECT_EQ(p.shared_load.wavefronts, pitch == 40 ? 2u : 4u);
    EXPECT_EQ(p.shared_load.conflict_wavefronts, pitch == 40 ? 0u : 2u);
    EXPECT_EQ(p.shared_load.max_ways, pitch == 40 ? 1u : 2u);
  }
}

TEST_P(SimProfile, DivergentBranchRunsHalfTheLanesPerRequest) {
  constexpr unsigned kThreads = 64;
  ScopedProfile profile;
  DeviceBuffer<float> in(kThreads), out(kThreads);
  for (unsigned i = 0; i < kThreads; ++i) in[i] = static_cast<float>(i);
  sim_test_kernels::profile_divergent_copy(in.get(), out.get(), 1, kThreads);
  EXPECT_EQ(out[6], 6.0f);
  EXPECT_EQ(out[7], 0.0f);
  const KernelProfile p = only_kernel(profile.take(), "divergent_copy");
  // One request per warp, the even lanes only, over all four sectors.
  expect_requests(p.global_load, 2, kThreads / 2, 2 * 4);
  expect_requests(p.global_store, 2, kThreads / 2, 2 * 4);
  EXPECT_DOUBLE_EQ(KernelProfile::per_request(p.global_load.lanes, p.global_load.requests), 16.0);
}

TEST_P(SimProfile, CountsTheMultiplyAddsSpelledWithDevFma) {
  constexpr unsigned kBlocks = 3, kThreads = 64;
  constexpr int kTerms = 10;
  ScopedProfile profile;
  DeviceBuffer<float> x(kTerms), y(kTerms), out(kBlocks * kThreads);
  for (int j = 0; j < kTerms; ++j) x[j] = y[j] = static_cast<float>(j);
  sim_test_kernels::profile_dot_products(x.get(), y.get(), out.get(), kTerms, kBlocks, kThreads);
  EXPECT_EQ(out[100], 285.0f);
  const KernelProfile p = only_kernel(profile.take(), "dot_products");
  EXPECT_EQ(p.fmas, std::uint64_t{kBlocks} * kThreads * kTerms);
  // Every lane reads the same word of x (and of y): one sector per request,
  // of which the 4 bytes count once.
  expect_requests(p.global_load, 6 * 2 * kTerms, 6 * 2 * kTerms * 32, 6 * 2 * kTerms);
  EXPECT_EQ(p.global_load.bytes, 6u * 2 * kTerms * 32 * 4);
  EXPECT_EQ(p.global_load.unique_bytes, 6u * 2 * kTerms * 4);
}

TEST_P(SimProfile, LaunchesOfOneKernelAddUpAndNothingIsCountedWhenOff) {
  constexpr unsigned kN = 64;
  {
    DeviceBuffer<float> in(kN), out(kN);
    sim_test_kernels::profile_coalesced_copy(in.get(), out.get(), 1, kN);  // not profiled
    ScopedProfile profile;
    EXPECT_TRUE(profile.take().empty());
  }
  ScopedProfile profile;
  DeviceBuffer<float> in(kN), out(kN);
  sim_test_kernels::profile_coalesced_copy(in.get(), out.get(), 1, kN);
  sim_test_kernels::profile_coalesced_copy(in.get(), out.get(), 1, kN);
  const KernelProfile p = only_kernel(profile.take(), "coalesced_copy");
  EXPECT_EQ(p.launches, 2u);
  expect_requests(p.global_load, 4, 2 * kN, 4 * 4);
  EXPECT_TRUE(profile.take().empty());  // taken
}

INSTANTIATE_TEST_SUITE_P(sim, SimProfile, ::testing::ValuesIn(sim_test::kSchedules), sim_test::schedule_test_name);

// The estimate: the largest of the three times, and which one it is.
class SimRoofline : public ::testing::TestWithParam<const char*> {};

TEST_P(SimRoofline, TakesTheSlowestOfComputeDramAndSharedMemory) {
  const convkit::sim::GpuSpec& h100 = convkit::sim::gpu_spec("h100");
  EXPECT_EQ(h100.name, "H100");
  KernelProfile p;
  p.fmas = 67'000'000'000'000ull / 2;          // 1 s at 67 TFLOP/s
  p.global_load.sectors = 3'350'000'000'000ull / 32 / 2;  // 0.5 s at 3.35 TB/s
  convkit::sim::RooflineEstimate e = convkit::sim::estimate(p, h100);
  EXPECT_NEAR(e.flop_seconds, 1.0, 1e-9);
  EXPECT_NEAR(e.dram_seconds, 0.5, 1e-9);
  EXPECT_EQ(e.shared_seconds, 0.0);
  EXPECT_NEAR(e.seconds(), 1.0, 1e-9);
  EXPECT_STREQ(e.bound(), "compute");
  // 132 SMs x 128 B x 1.98 GHz of shared wavefronts, two seconds' worth.
  p.shared_load.wavefronts = 2ull * 132 * 1'980'000'000ull;
  e = convkit::sim::estimate(p, h100);
  EXPECT_NEAR(e.shared_seconds, 2.0, 1e-9);
  EXPECT_STREQ(e.bound(), "shared");
  p.kernel = "k";
  const std::string table = convkit::sim::format_profile({p}, h100);
  EXPECT_NE(table.find("ESTIMATES for H100"), std::string::npos) << table;
  EXPECT_NE(table.find("shared-bound"), std::string::npos) << table;
}

TEST_P(SimRoofline, UnknownGpuNamesTheKnownOnes) {
  const std::string message = sim_test::error_message([] { (void)convkit::sim::gpu_spec("P100"); });
  EXPECT_NE(message.find("unknown GPU 'P100'"), std::string::npos) << message;
  EXPECT_NE(message.find("H100, A100, V100"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(sim, SimRoofline, ::testing::Values("model"));

}  // namespace
