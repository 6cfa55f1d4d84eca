// mma.sync on sim against the PTX ISA: the fragment layouts, revealed by
// one-hot operands (which register of which lane holds which element), the
// whole product against a float64 reference, and the tf32/bf16 rounding
// against references that work on the exact values rather than on bits.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "convkit/sim/mma.h"
#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::MmaKind;
using sim_test_kernels::MmaRegisters;

struct Coord {
  int row, col;
};

// The PTX ISA tables, written out element by element (group = lane / 4,
// tig = lane % 4). Element e of a lane: tf32 A has 4 (one per register), bf16
// A has 8 (two per register, low half first); likewise B has 2 or 4.
Coord a_coord(MmaKind kind, int lane, int e) {
  const int g = lane / 4, t = lane % 4;
  if (kind == MmaKind::tf32_m16n8k8) {
    static const Coord table[4] = {{0, 0}, {8, 0}, {0, 4}, {8, 4}};
    return {g + table[e].row, t + table[e].col};
  }
  static const Coord table[8] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}};
  return {g + table[e].row, 2 * t + table[e].col};
}
Coord b_coord(MmaKind kind, int lane, int e) {  // {k, n}
  const int g = lane / 4, t = lane % 4;
  if (kind == MmaKind::tf32_m16n8k8) return {t + 4 * e, g};
  static const int k_of[4] = {0, 1, 8, 9};
  return {2 * t + k_of[e], g};
}
Coord cd_coord(int lane, int i) { return {lane / 4 + (i >= 2 ? 8 : 0), 2 * (lane % 4) + (i & 1)}; }

int k_of(MmaKind kind) { return kind == MmaKind::tf32_m16n8k8 ? 8 : 16; }
int a_elements(MmaKind kind) { return kind == MmaKind::tf32_m16n8k8 ? 4 : 8; }
int b_elements(MmaKind kind) { return kind == MmaKind::tf32_m16n8k8 ? 2 : 4; }

// Values used here are small integers, exact in tf32 and bf16 alike.
std::uint32_t bf16_bits(float x) { return std::bit_cast<std::uint32_t>(x) >> 16; }

void set_a(MmaKind kind, MmaRegisters& r, int e, float x) {
  if (kind == MmaKind::tf32_m16n8k8) {
    r.a[e] = std::bit_cast<std::uint32_t>(x);
  } else {
    const int shift = (e % 2) * 16;
    r.a[e / 2] = (r.a[e / 2] & ~(0xffffu << shift)) | (bf16_bits(x) << shift);
  }
}
void set_b(MmaKind kind, MmaRegisters& r, int e, float x) {
  if (kind == MmaKind::tf32_m16n8k8) {
    r.b[e] = std::bit_cast<std::uint32_t>(x);
  } else {
    const int shift = (e % 2) * 16;
    r.b[e / 2] = (r.b[e / 2] & ~(0xffffu << shift)) | (bf16_bits(x) << shift);
  }
}

// Distributes matrices A (16 x K), B (K x 8), C (16 x 8) over one warp's registers.
std::vector<MmaRegisters> fragments(MmaKind kind, const std::vector<float>& A, const std::vector<float>& B,
                                    const std::vector<float>& C) {
  const int K = k_of(kind);
  std::vector<MmaRegisters> regs(32);
  for (int lane = 0; lane < 32; ++lane) {
    MmaRegisters& r = regs[lane];
    r = {};
    for (int e = 0; e < a_elements(kind); ++e) {
      const Coord p = a_coord(kind, lane, e);
      set_a(kind, r, e, A[p.row * K + p.col]);
    }
    for (int e = 0; e < b_elements(kind); ++e) {
      const Coord p = b_coord(kind, lane, e);
      set_b(kind, r, e, B[p.row * 8 + p.col]);
    }
    for (int i = 0; i < 4; ++i) {
      const Coord p = cd_coord(lane, i);
      r.c[i] = C[p.row * 8 + p.col];
    }
  }
  return regs;
}

// Runs the mma on `warps` copies of the fragments and returns warp w's D as a
// 16 x 8 matrix gathered with the C/D layout.
std::vector<float> run(MmaKind kind, const std::vector<MmaRegisters>& regs, unsigned warps = 1, unsigned w = 0) {
  sim_test::DeviceBuffer<MmaRegisters> in(32 * warps);
  sim_test::DeviceBuffer<float> d(32 * 4 * warps);
  for (unsigned i = 0; i < 32 * warps; ++i) in[i] = regs[i % 32];
  sim_test_kernels::mma(kind, warps, in.get(), d.get());
  std::vector<float> D(16 * 8, -1.0f);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const Coord p = cd_coord(lane, i);
      D[p.row * 8 + p.col] = d[(w * 32 + lane) * 4 + i];
    }
  return D;
}

std::vector<float> reference(MmaKind kind, const std::vector<float>& A, const std::vector<float>& B,
                             const std::vector<float>& C) {
  const int K = k_of(kind);
  std::vector<float> D(16 * 8);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double acc = C[m * 8 + n];
      for (int k = 0; k < K; ++k) acc += static_cast<double>(A[m * K + k]) * B[k * 8 + n];
      D[m * 8 + n] = static_cast<float>(acc);
    }
  return D;
}

class Mma : public sim_test::WithSchedule {};

const MmaKind kKinds[] = {MmaKind::tf32_m16n8k8, MmaKind::bf16_m16n8k16};

// One A element set to 1 at a time, B[k][n] = 1 + k * 8 + n: D is zero but for
// row `row` of A's element, which is B's row k = A's column. So every element
// of every lane's A registers is located, and D's layout with it.
TEST_P(Mma, OneHotARevealsTheALayout) {
  for (MmaKind kind : kKinds) {
    const int K = k_of(kind);
    std::vector<float> B(K * 8), C(16 * 8, 0.0f);
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < 8; ++n) B[k * 8 + n] = static_cast<float>(1 + k * 8 + n);
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < a_elements(kind); ++e) {
        std::vector<MmaRegisters> regs = fragments(kind, std::vector<float>(16 * K, 0.0f), B, C);
        set_a(kind, regs[lane], e, 1.0f);
        const std::vector<float> D = run(kind, regs);
        const Coord p = a_coord(kind, lane, e);
        for (int m = 0; m < 16; ++m)
          for (int n = 0; n < 8; ++n)
            ASSERT_EQ(D[m * 8 + n], m == p.row ? B[p.col * 8 + n] : 0.0f)
                << "kind " << static_cast<int>(kind) << " lane " << lane << " element " << e << " D(" << m << ","
                << n << ")";
      }
  }
}

// One B element set to 1, A[m][k] = 1 + m * K + k: only column n of D is
// non-zero, and it holds A's column k.
TEST_P(Mma, OneHotBRevealsTheBLayout) {
  for (MmaKind kind : kKinds) {
    const int K = k_of(kind);
    std::vector<float> A(16 * K), C(16 * 8, 0.0f);
    for (int m = 0; m < 16; ++m)
      for (int k = 0; k < K; ++k) A[m * K + k] = static_cast<float>(1 + m * K + k);
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < b_elements(kind); ++e) {
        std::vector<MmaRegisters> regs = fragments(kind, A, std::vector<float>(K * 8, 0.0f), C);
        set_b(kind, regs[lane], e, 1.0f);
        const std::vector<float> D = run(kind, regs);
        const Coord p = b_coord(kind, lane, e);
        for (int m = 0; m < 16; ++m)
          for (int n = 0; n < 8; ++n)
            ASSERT_EQ(D[m * 8 + n], n == p.col ? A[m * K + p.row] : 0.0f)
                << "kind " << static_cast<int>(kind) << " lane " << lane << " element " << e;
      }
  }
}

// A = 0: D must be C register for register (D's layout is C's).
TEST_P(Mma, ZeroProductPassesCThrough) {
  for (MmaKind kind : kKinds) {
    std::vector<MmaRegisters> regs(32);
    for (int lane = 0; lane < 32; ++lane) {
      regs[lane] = {};
      for (int i = 0; i < 4; ++i) regs[lane].c[i] = static_cast<float>(lane * 4 + i) + 0.25f;
      regs[lane].b[0] = regs[lane].b[1] = std::bit_cast<std::uint32_t>(1.0f);
    }
    sim_test::DeviceBuffer<MmaRegisters> in(32);
    sim_test::DeviceBuffer<float> d(128);
    for (int i = 0; i < 32; ++i) in[i] = regs[i];
    sim_test_kernels::mma(kind, 1, in.get(), d.get());
    for (int i = 0; i < 128; ++i) ASSERT_EQ(d[i], static_cast<float>(i) + 0.25f);
  }
}

// The identity as A gives D = B + C; integers keep everything exact.
TEST_P(Mma, IdentityAndRandomIntegerProductsAreExact) {
  std::mt19937 rng(sim_test::kSeed);
  std::uniform_int_distribution<int> small(-8, 8);
  for (MmaKind kind : kKinds) {
    const int K = k_of(kind);
    std::vector<float> I(16 * K, 0.0f), A(16 * K), B(K * 8), C(16 * 8);
    for (int m = 0; m < 16 && m < K; ++m) I[m * K + m] = 1.0f;
    for (float& x : A) x = static_cast<float>(small(rng));
    for (float& x : B) x = static_cast<float>(small(rng));
    for (float& x : C) x = static_cast<float>(small(rng));
    EXPECT_EQ(run(kind, fragments(kind, I, B, C)), reference(kind, I, B, C));
    // Three warps in the block: each warp's mma is its own.
    EXPECT_EQ(run(kind, fragments(kind, A, B, C), 3, 2), reference(kind, A, B, C));
  }
}

// tf32 operands: the low 13 bits of a register are ignored (the model's
// truncation); C is used at full f32 precision.
TEST_P(Mma, Tf32OperandsDropTheLow13Bits) {
  std::vector<float> A(16 * 8, 0.0f), B(8 * 8, 0.0f), C(16 * 8, 0.0f);
  A[0] = 1.0f;
  B[0] = 1.0f;
  C[1] = 1.0f + 0x1p-23f;  // full precision survives in C
  std::vector<MmaRegisters> regs = fragments(MmaKind::tf32_m16n8k8, A, B, C);
  // Lane 0 holds A(0,0) in a[0] and B(0,0) in b[0]: add bits below tf32's.
  regs[0].a[0] |= 0x1fffu;
  regs[0].b[0] |= 0x1000u;
  const std::vector<float> D = run(MmaKind::tf32_m16n8k8, regs);
  EXPECT_EQ(D[0], 1.0f);
  EXPECT_EQ(D[1], 1.0f + 0x1p-23f);
}

TEST_P(Mma, ALaneThatExitedIsAnError) {
  sim_test::DeviceBuffer<MmaRegisters> in(32);
  sim_test::DeviceBuffer<float> d(128);
  const std::string message =
      sim_test::error_message([&] { sim_test_kernels::mma(MmaKind::tf32_m16n8k8, 1, in.get(), d.get(), 5); });
  EXPECT_NE(message.find("needs all 32 lanes"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(sim, Mma, ::testing::ValuesIn(sim_test::kSchedules), sim_test::schedule_test_name);

// ---- rounding, against references on exact values: the two neighbours of x
// in the narrow format, the nearer one, ties broken as the mode says.
float round_reference(float x, int dropped_bits, bool ties_away) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t ulp = 1u << dropped_bits;
  const std::uint32_t low_bits = bits & ~(ulp - 1);
  const double lo = std::bit_cast<float>(low_bits);                        // toward zero
  // The neighbour away from zero: the next multiple of ulp in magnitude. Its
  // value is computed from the exponent of the truncated value, which also
  // covers the carry into the next binade (and into infinity).
  const int exponent = static_cast<int>((low_bits >> 23) & 0xffu);
  const double step = std::ldexp(1.0, (exponent == 0 ? 1 : exponent) - 127 - 23 + dropped_bits);
  const double away = (x < 0 ? -1.0 : 1.0) * (std::fabs(lo) + step);
  const double dlo = std::fabs(static_cast<double>(x) - lo), daway = std::fabs(away - static_cast<double>(x));
  double pick;
  if (dlo < daway) {
    pick = lo;
  } else if (daway < dlo) {
    pick = away;
  } else if (ties_away) {
    pick = away;
  } else {  // ties to even: the neighbour whose last kept bit is 0
    pick = ((low_bits >> dropped_bits) & 1u) == 0 ? lo : away;
  }
  return static_cast<float>(pick);  // exact, or +-inf past the largest finite value
}

std::vector<float> rounding_inputs() {
  std::vector<float> xs;
  std::mt19937 rng(sim_test::kSeed);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isfinite(x)) xs.push_back(x);
  }
  // Every pattern of the low 16 bits at a few exponents, with both signs:
  // all the ties and near-ties of both formats.
  for (std::uint32_t hi : {0x3f800000u, 0x00000000u, 0x00800000u, 0x7f7f0000u, 0x4b000000u})
    for (std::uint32_t low = 0; low < 0x10000u; ++low)
      for (std::uint32_t sign : {0u, 0x80000000u}) xs.push_back(std::bit_cast<float>(sign | hi | low));
  return xs;
}

TEST(simMmaRounding, Tf32RnaMatchesTheReference) {
  for (const float x : rounding_inputs()) {
    const float got = std::bit_cast<float>(convkit::sim::tf32_round_rna(x));
    const float want = round_reference(x, 13, /*ties_away=*/true);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
        << std::hexfloat << x << " -> " << got << ", want " << want;
  }
  EXPECT_EQ(std::bit_cast<float>(convkit::sim::tf32_round_rna(1.0f + 0x1p-11f)), 1.0f + 0x1p-10f);  // tie: away
  EXPECT_EQ(std::bit_cast<float>(convkit::sim::tf32_round_rna(-1.0f - 0x1p-11f)), -1.0f - 0x1p-10f);
  EXPECT_TRUE(std::isinf(std::bit_cast<float>(convkit::sim::tf32_round_rna(INFINITY))));
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(convkit::sim::tf32_round_rna(NAN))));
}

TEST(simMmaRounding, Bf16RneMatchesTheReference) {
  for (const float x : rounding_inputs()) {
    const float got = convkit::sim::bf16_to_float(convkit::sim::bf16_round_rne(x));
    const float want = round_reference(x, 16, /*ties_away=*/false);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
        << std::hexfloat << x << " -> " << got << ", want " << want;
  }
  EXPECT_EQ(convkit::sim::bf16_to_float(convkit::sim::bf16_round_rne(1.0f + 0x1p-8f)), 1.0f);  // tie: even
  EXPECT_EQ(convkit::sim::bf16_to_float(convkit::sim::bf16_round_rne(1.0f + 0x3p-8f)), 1.0f + 0x1p-6f);
  EXPECT_TRUE(std::isnan(convkit::sim::bf16_to_float(convkit::sim::bf16_round_rne(NAN))));
  EXPECT_EQ(convkit::sim::pack_bf16x2(1.0f, -2.0f), 0xc0003f80u);  // lo in the low half
}

}  // namespace
