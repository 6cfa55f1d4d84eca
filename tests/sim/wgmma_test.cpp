// wgmma.mma_async on sim against the PTX ISA: the descriptor's fields, the
// K-major shared-memory layouts (written here in CuTe's swizzle form and from
// the ISA's own examples, independently of src/sim/wgmma.cpp), the
// accumulator layout (CUTLASS's CLayout_64xN), the products against float64,
// tf32 truncation, and when the work happens: at the wait that retires it,
// on operands that must not change in between.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "convkit/core/error.h"
#include "convkit/sim/check.h"
#include "convkit/sim/mma.h"
#include "convkit/sim/wgmma.h"
#include "kernels/test_kernels.h"
#include "kernels/warpgroup_mma.cuh"
#include "sim_test_util.h"

namespace {

namespace sim = convkit::sim;
namespace dev = convkit::CK_GPU_NS::dev;
using sim_test_kernels::WgmmaCall;
using sim_test_kernels::WgmmaMode;

// The layouts as CuTe writes them: Swizzle<B,4,3> applied to the byte
// address, x ^ ((x & (((1 << B) - 1) << 7)) >> 3), over rows of 16 << B bytes
// (B = 3, 2, 1 for 128, 64, 32 bytes); no swizzle: 8x16-byte core matrices.
std::uint32_t canonical_address(dev::WgmmaSwizzle s, std::uint32_t start, std::uint32_t lbo, std::uint32_t sbo,
                                int r, int kb) {
  const auto ur = static_cast<std::uint32_t>(r), ukb = static_cast<std::uint32_t>(kb);
  if (s == dev::WgmmaSwizzle::none) return start + ur / 8 * sbo + ukb / 16 * lbo + ur % 8 * 16 + ukb % 16;
  const std::uint32_t bits = s == dev::WgmmaSwizzle::bytes128 ? 3 : s == dev::WgmmaSwizzle::bytes64 ? 2 : 1;
  const std::uint32_t x = start + ur / 8 * sbo + ur % 8 * (16u << bits) + ukb;
  return x ^ ((x & (((1u << bits) - 1) << 7)) >> 3);
}

// CUTLASS's CLayout_64xN, ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512)): thread t
// and value v to m + 64 n.
std::pair<int, int> accumulator_coord(int t, int v) {
  const int index = (t % 4) * 128 + (t / 4 % 8) * 1 + (t / 32) * 16 + (v % 2) * 64 + (v / 2 % 2) * 8 + (v / 4) * 512;
  return {index % 64, index / 64};
}

TEST(SimWgmma, DescriptorFieldsRoundTrip) {
  const std::uint64_t d = dev::wgmma_descriptor(0x2a460, 256, 1024, dev::WgmmaSwizzle::bytes64);
  EXPECT_EQ(d & 0x3fff, 0x2a460u >> 4);
  EXPECT_EQ((d >> 16) & 0x3fff, 16u);
  EXPECT_EQ((d >> 32) & 0x3fff, 64u);
  EXPECT_EQ(d >> 62, 2u);
  const sim::WgmmaDescriptor f = sim::decode_wgmma_descriptor(d);
  EXPECT_EQ(f.start, 0x2a460u);
  EXPECT_EQ(f.leading, 256u);
  EXPECT_EQ(f.stride, 1024u);
  EXPECT_EQ(f.base_offset, 0u);
  EXPECT_EQ(f.swizzle, sim::WgmmaSwizzle::bytes64);
}

TEST(SimWgmma, KMajorAddressesFollowThePtxLayouts) {
  for (auto s : {dev::WgmmaSwizzle::none, dev::WgmmaSwizzle::bytes32, dev::WgmmaSwizzle::bytes64,
                 dev::WgmmaSwizzle::bytes128}) {
    const std::uint32_t start = 3 * 1024 + (s == dev::WgmmaSwizzle::none ? 48 : 32), lbo = 256, sbo = 1024;
    const sim::WgmmaDescriptor d = sim::decode_wgmma_descriptor(dev::wgmma_descriptor(start, lbo, sbo, s));
    for (int r = 0; r < 64; ++r)
      for (int kb = 0; kb < 32; ++kb)
        ASSERT_EQ(sim::wgmma_kmajor_address(d, r, kb), canonical_address(s, start, lbo, sbo, r, kb))
            << "swizzle " << static_cast<int>(s) << " row " << r << " byte " << kb;
  }
  // The 128-byte swizzle as the PTX ISA tabulates it: 16-byte unit c of row r
  // of a 1024-byte atom sits at unit c ^ (r % 8).
  const sim::WgmmaDescriptor sw128 =
      sim::decode_wgmma_descriptor(dev::wgmma_descriptor(2048, 16, 1024, dev::WgmmaSwizzle::bytes128));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 2; ++c)
      EXPECT_EQ(sim::wgmma_kmajor_address(sw128, r, 16 * c),
                2048u + r / 8 * 1024u + r % 8 * 128u + static_cast<std::uint32_t>((c ^ (r % 8)) * 16));
  // The PTX ISA's no-swizzle tf32 example, ((8,2),(4,4)):((4,32),(1,64)) in
  // elements: SBO 128 bytes, LBO 256.
  const sim::WgmmaDescriptor plain =
      sim::decode_wgmma_descriptor(dev::wgmma_descriptor(0, 256, 128, dev::WgmmaSwizzle::none));
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 8; ++k)
      EXPECT_EQ(sim::wgmma_kmajor_address(plain, r, 4 * k),
                4u * static_cast<std::uint32_t>(r % 8 * 4 + r / 8 * 32 + k % 4 + k / 4 * 64));
}

struct Problem {
  WgmmaCall call;
  std::vector<unsigned char> image;
  std::vector<float> A, B, C;  // 64 x K, N x K (K-major, as stored), 64 x N
  int K = 8;
};

// Places A and B (small integers, exact in tf32 and bf16) in an image with
// the given layout; A at byte a_at, B at b_at of shared memory; the image is
// copied to shared byte `base`.
Problem make_problem(bool bf16, int n, dev::WgmmaSwizzle s, std::uint32_t base, std::uint32_t a_at,
                     std::uint32_t b_at, std::uint32_t lbo, std::uint32_t sbo, std::uint32_t image_bytes,
                     unsigned seed) {
  Problem p;
  p.K = bf16 ? 16 : 8;
  p.call.bf16 = bf16, p.call.n = n, p.call.offset = base, p.call.image_bytes = image_bytes;
  p.call.desc_a = dev::wgmma_descriptor(a_at, lbo, sbo, s);
  p.call.desc_b = dev::wgmma_descriptor(b_at, lbo, sbo, s);
  p.image.assign(image_bytes, 0xff);  // a NaN wherever nothing was placed
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-8, 8);
  p.A.resize(static_cast<std::size_t>(64 * p.K));
  p.B.resize(static_cast<std::size_t>(n * p.K));
  p.C.resize(static_cast<std::size_t>(64 * n));
  const auto put = [&](std::uint32_t start, int r, int k, float v) {
    const std::uint32_t at = canonical_address(s, start, lbo, sbo, r, k * (bf16 ? 2 : 4)) - base;
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    if (bf16) {
      const auto half = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(&p.image[at], &half, 2);
    } else {
      std::memcpy(&p.image[at], &bits, 4);
    }
  };
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < p.K; ++k) put(a_at, r, k, p.A[static_cast<std::size_t>(r * p.K + k)] = static_cast<float>(small(rng)));
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < p.K; ++k) put(b_at, r, k, p.B[static_cast<std::size_t>(r * p.K + k)] = static_cast<float>(small(rng)));
  for (float& c : p.C) c = static_cast<float>(small(rng));
  return p;
}

// Runs the call; returns D as 64 x n, gathered with CUTLASS's layout (and D2).
std::vector<float> run(const Problem& p, std::vector<float>* d2 = nullptr) {
  const int n = p.call.n, count = n / 2;
  sim_test::DeviceBuffer<unsigned char> image(p.image.size());
  std::memcpy(image.get(), p.image.data(), p.image.size());
  sim_test::DeviceBuffer<float> c(static_cast<std::size_t>(128 * count)), d(static_cast<std::size_t>(128 * count)),
      second(static_cast<std::size_t>(128 * count));
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < count; ++v) {
      const auto [m, col] = accumulator_coord(t, v);
      c[static_cast<std::size_t>(t * count + v)] = p.C[static_cast<std::size_t>(m * n + col)];
    }
  WgmmaCall call = p.call;
  call.image = image.get();
  sim_test_kernels::wgmma(call, c.get(), d.get(), second.get());
  std::vector<float> D(static_cast<std::size_t>(64 * n), -1.0f);
  if (d2) d2->assign(D.size(), -1.0f);
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < count; ++v) {
      const auto [m, col] = accumulator_coord(t, v);
      D[static_cast<std::size_t>(m * n + col)] = d[static_cast<std::size_t>(t * count + v)];
      if (d2) (*d2)[static_cast<std::size_t>(m * n + col)] = second[static_cast<std::size_t>(t * count + v)];
    }
  return D;
}

std::vector<float> reference(const Problem& p, bool scale_d, int times = 1) {
  const int n = p.call.n;
  std::vector<float> D(p.C);
  for (int t = 0; t < times; ++t)
    for (int m = 0; m < 64; ++m)
      for (int col = 0; col < n; ++col) {
        double acc = scale_d ? D[static_cast<std::size_t>(m * n + col)] : 0.0;
        for (int k = 0; k < p.K; ++k)
          acc += static_cast<double>(p.A[static_cast<std::size_t>(m * p.K + k)]) * p.B[static_cast<std::size_t>(col * p.K + k)];
        D[static_cast<std::size_t>(m * n + col)] = static_cast<float>(acc);
      }
  return D;
}

// tf32 in the 128-byte swizzle, as kernels stage it: rows of 128 bytes in
// 1024-byte atoms, the descriptor 32 bytes into the row (k-slice 1); bf16
// without swizzle, in 8x16-byte core matrices, and in the 64-byte swizzle;
// every N the kernels may use.
TEST(SimWgmma, ProductsMatchFloat64InTheAccumulatorLayout) {
  for (bool scale_d : {true, false}) {
    for (int n : {8, 128, 256}) {
      Problem p = make_problem(false, n, dev::WgmmaSwizzle::bytes128, 1024, 1024 + 32, 1024 + 64 * 128 + 32, 16,
                               1024, static_cast<std::uint32_t>((64 + n) * 128), static_cast<unsigned>(n));
      p.call.scale_d = scale_d;
      EXPECT_EQ(run(p), reference(p, scale_d)) << "tf32 n=" << n << " scale_d=" << scale_d;
    }
    Problem p = make_problem(true, 64, dev::WgmmaSwizzle::none, 0, 0, 64 * 32, 128, 256, (64 + 64) * 32, 3);
    p.call.scale_d = scale_d;
    EXPECT_EQ(run(p), reference(p, scale_d)) << "bf16 scale_d=" << scale_d;
    // bf16 as gemm_tensor_core v7 stages it: rows of 64 bytes in the 64-byte
    // swizzle, 8-row atoms of 512 bytes, the k16 slice 32 bytes into the row.
    Problem q = make_problem(true, 128, dev::WgmmaSwizzle::bytes64, 1024, 1024 + 32, 1024 + 64 * 64 + 32, 16, 512,
                             (64 + 128) * 64, 4);
    q.call.scale_d = scale_d;
    EXPECT_EQ(run(q), reference(q, scale_d)) << "bf16, 64-byte swizzle, scale_d=" << scale_d;
  }
}

// Descriptors hold shared addresses, which start at
// sim::dynamic_shared_address(): moved to 528, the image that sat at byte
// 1024 of dynamic shared memory (shared address 1024) sits at byte 496 for
// the same descriptors, and the same products come out. Below the start is
// an error; so is an address no GPU would give.
TEST(SimWgmma, DescriptorsAddressSharedMemoryFromWhereItStarts) {
  Problem p = make_problem(false, 128, dev::WgmmaSwizzle::bytes128, 1024, 1024 + 32, 1024 + 64 * 128 + 32, 16, 1024,
                           (64 + 128) * 128, 8);
  const std::vector<float> expected = reference(p, true);
  {
    const sim::ScopedDynamicSharedAddress moved(528);
    p.call.offset = 1024 - 528;
    EXPECT_EQ(run(p), expected);
    const sim::ScopedDynamicSharedAddress past(2048);
    p.call.offset = 0;
    const std::string why = sim_test::error_message([&] { run(p); });
    EXPECT_NE(why.find("before the block's dynamic shared memory (shared bytes 2048 on)"), std::string::npos) << why;
  }
  EXPECT_EQ(sim::dynamic_shared_address(), 0u);
  EXPECT_NE(sim_test::error_message([] { sim::set_dynamic_shared_address(8); }).find("multiple of 16"),
            std::string::npos);
}

TEST(SimWgmma, Tf32OperandsAreTruncatedTo19Bits) {
  Problem p = make_problem(false, 8, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 8) * 128, 1);
  // A(0, 0) = 1 + 2^-11 + 2^-20: tf32 keeps 10 fraction bits, so the tensor
  // core reads 1 (truncation; rounding to nearest would give 1 + 2^-10).
  const float x = 1.0f + 0x1p-11f + 0x1p-20f;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  std::memcpy(&p.image[sim::wgmma_kmajor_address(sim::decode_wgmma_descriptor(p.call.desc_a), 0, 0)], &bits, 4);
  p.A[0] = 1.0f;
  EXPECT_EQ(run(p), reference(p, true));
}

TEST(SimWgmma, ProductsArePerformedAtTheWaitThatRetiresThem) {
  Problem p = make_problem(false, 128, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 128) * 128, 5);
  // Operands changed between the issue and the wait: a GPU may read either,
  // so it is an error that names the element.
  p.call.mode = WgmmaMode::zero_after_issue;
  const std::string why = sim_test::error_message([&] { run(p); });
  EXPECT_NE(why.find("changed between the issue and the wgmma.wait_group"), std::string::npos) << why;
  EXPECT_NE(why.find("A(0, k 0)"), std::string::npos) << why;
  // Two groups: wait_group 1 retires the first only.
  p.call.mode = WgmmaMode::two_groups;
  std::vector<float> second;
  const std::vector<float> first = run(p, &second);
  EXPECT_EQ(first, reference(p, true, 1));
  EXPECT_EQ(second, reference(p, true, 2));
}

// The issue's operand reads are the issuing lane's reads to the checks: read
// without a barrier after other warps wrote them is a race, in any thread
// order (sim's orders all let the writers run first here).
TEST(SimWgmma, RacecheckSeesOperandsReadWithoutABarrier) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  Problem p = make_problem(false, 8, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 8) * 128, 2);
  p.call.mode = WgmmaMode::no_barrier;
  const sim::ScopedChecks checks(sim::Checks::parse("racecheck"));
  const std::string why = sim_test::error_message([&] { run(p); });
  EXPECT_NE(why.find("read-after-write hazard"), std::string::npos) << why;
}

// A barrier publishes the image to the other threads, but wgmma reads
// through the async proxy: each writer must run fence.proxy.async first.
TEST(SimWgmma, RacecheckSeesOperandsWrittenWithoutAProxyFence) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  Problem p = make_problem(false, 8, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 8) * 128, 2);
  const sim::ScopedChecks checks(sim::Checks::parse("racecheck"));
  EXPECT_EQ(run(p), reference(p, true));  // fenced: no report
  p.call.mode = WgmmaMode::no_proxy_fence;
  const std::string why = sim_test::error_message([&] { run(p); });
  EXPECT_NE(why.find("through the async proxy"), std::string::npos) << why;
  EXPECT_NE(why.find("has run no fence.proxy.async since"), std::string::npos) << why;
  EXPECT_NE(why.find("wgmma.cu:"), std::string::npos) << why;  // the writer's line
}

// The accumulators' fence, checked with or without the checks: before the
// warp's first wgmma and after each wait (the second wgmma of two_groups,
// issued before any wait, needs none: ProductsArePerformedAtTheWaitThatRetiresThem).
TEST(SimWgmma, AWgmmaWithoutAFenceSinceTheLastWaitIsAnError) {
  Problem p = make_problem(false, 8, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 8) * 128, 3);
  p.call.mode = WgmmaMode::no_wgmma_fence;
  std::string why = sim_test::error_message([&] { run(p); });
  EXPECT_NE(why.find("follows no wgmma.fence since the warp's start"), std::string::npos) << why;
  p.call.mode = WgmmaMode::wait_then_issue;
  why = sim_test::error_message([&] { run(p); });
  EXPECT_NE(why.find("follows no wgmma.fence since the warp's last wgmma.wait_group"), std::string::npos) << why;
}

TEST(SimWgmma, MisuseIsAnErrorThatSaysWhat) {
  Problem p = make_problem(false, 8, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 8) * 128, 7);
  p.call.mode = WgmmaMode::no_wait;
  EXPECT_NE(sim_test::error_message([&] { run(p); }).find("not waited for"), std::string::npos);
  p.call.mode = WgmmaMode::plain;
  // B's rows reach past the block's shared memory.
  p.call.desc_b = dev::wgmma_descriptor(64 * 128 + 512, 16, 1024, dev::WgmmaSwizzle::bytes128);
  EXPECT_NE(sim_test::error_message([&] { run(p); }).find("past the block's dynamic shared memory"),
            std::string::npos);
  // N not a multiple of 8.
  const Problem q = make_problem(false, 12, dev::WgmmaSwizzle::bytes128, 0, 0, 64 * 128, 16, 1024, (64 + 16) * 128, 7);
  EXPECT_NE(sim_test::error_message([&] { run(q); }).find("N = 12"), std::string::npos);
}

}  // namespace
