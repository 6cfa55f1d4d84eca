#include "support/support.h"

namespace convkit {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution.
TEST(Philox, MatchesPublishedKnownAnswers) {
  auto r = philox::philox4x32_10({{0, 0, 0, 0}}, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = philox::philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, ~0ull);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = philox::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0x299f31d0a4093822ull);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(Philox, SeedReproducesAndOffsetsAdvance) {
  manual_seed(7);
  const auto a = rand({1000}).to_vector<float>();
  const auto b = rand({1000}).to_vector<float>();
  manual_seed(7);
  EXPECT_EQ(rand({1000}).to_vector<float>(), a);
  EXPECT_NE(a, b);
  // Element i depends only on (seed, offset, i): a draw is the same stream sliced.
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(a[static_cast<std::size_t>(i)], philox::uniform(7, 0, static_cast<std::uint64_t>(i)));
}

TEST(Philox, UniformAndNormalHaveTheRightMoments) {
  manual_seed(11);
  const auto u = rand({200000}).to_vector<double>();
  const auto n = randn({200000}).to_vector<double>();
  double su = 0, sn = 0, sn2 = 0, umin = 1, umax = 0;
  for (double x : u) { su += x; umin = std::min(umin, x); umax = std::max(umax, x); }
  for (double x : n) { sn += x; sn2 += x * x; }
  EXPECT_NEAR(su / 200000, 0.5, 0.005);
  EXPECT_GE(umin, 0.0);
  EXPECT_LT(umax, 1.0);
  EXPECT_NEAR(sn / 200000, 0.0, 0.01);
  EXPECT_NEAR(sn2 / 200000, 1.0, 0.02);
}

// The cpu backend draws kPhiloxLanes blocks at a time (src/cpu/philox_lanes.h)
// and in parallel above 65,536 elements; every element must still be the
// per-element definition's, at offsets inside a block and at the ends of
// the groups, in float and double.
TEST(Philox, CpuStreamsAreThePerElementDefinition) {
  Backend& cpu = backend_for(kCPU);
  for (const DType dtype : {DType::float32, DType::float64}) {
    for (const std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{62}, std::uint64_t{1} << 33}) {
      for (const std::int64_t n : {std::int64_t{1}, std::int64_t{67}, std::int64_t{70001}}) {
        const Tensor u = empty({n}, TensorOptions().dtype(dtype)), g = empty({n}, TensorOptions().dtype(dtype));
        cpu.uniform(u, 99, offset, -2.0, 3.0);
        cpu.normal(g, 99, offset, 0.5, 2.0);
        const auto uv = u.to_vector<double>(), gv = g.to_vector<double>();
        std::int64_t wrong = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const auto e = static_cast<std::uint64_t>(i);
          const double want_u = -2.0 + 5.0 * philox::uniform(99, offset, e);
          const double want_g = 0.5 + 2.0 * philox::normal(99, offset, e);
          const bool same = dtype == DType::float64
                                ? uv[static_cast<std::size_t>(i)] == want_u && gv[static_cast<std::size_t>(i)] == want_g
                                : uv[static_cast<std::size_t>(i)] == static_cast<double>(static_cast<float>(want_u)) &&
                                      gv[static_cast<std::size_t>(i)] == static_cast<double>(static_cast<float>(want_g));
          wrong += same ? 0 : 1;
        }
        EXPECT_EQ(wrong, 0) << dtype_name(dtype) << " offset " << offset << " n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace convkit
