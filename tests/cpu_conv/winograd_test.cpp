// The F(2x2, 3x3) tile transforms (cpu/conv/winograd_transforms.h): each
// unrolled transform against its matrix written out, and the two identities
// the algorithm rests on, in float64 on random tiles.
#include <gtest/gtest.h>

#include <random>

#include "cpu/conv/winograd_transforms.h"

namespace convkit::cpu::winograd {
namespace {

// The matrices of Lavin & Gray's F(2x2, 3x3), as printed there.
constexpr double kBT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kAT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

// out (O x O) = L in L^T by plain matrix products: the simple twin.
template <int O, int I>
void sandwich(const double (&L)[O][I], const double* in, double* out) {
  for (int i = 0; i < O; ++i)
    for (int j = 0; j < O; ++j) {
      double sum = 0;
      for (int a = 0; a < I; ++a)
        for (int b = 0; b < I; ++b) sum += L[i][a] * in[a * I + b] * L[j][b];
      out[i * O + j] = sum;
    }
}
// out (O x O) = L^T in L for L of I x O.
template <int I, int O>
void sandwich_transposed(const double (&L)[I][O], const double* in, double* out) {
  for (int i = 0; i < O; ++i)
    for (int j = 0; j < O; ++j) {
      double sum = 0;
      for (int a = 0; a < I; ++a)
        for (int b = 0; b < I; ++b) sum += L[a][i] * in[a * I + b] * L[b][j];
      out[i * O + j] = sum;
    }
}

template <int Size>
void fill_random(double (&v)[Size], std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1, 1);
  for (double& e : v) e = dist(rng);
}

TEST(WinogradTransforms, MatchTheirMatrices) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    double d[16], g[9], m[16], e[4], w[16];
    fill_random(d, rng), fill_random(g, rng), fill_random(m, rng), fill_random(e, rng), fill_random(w, rng);
    double got[16], want[16];
    input_transform(d, got);  // B^T D B
    sandwich(kBT, d, want);
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "input " << i;
    filter_transform(g, got);  // G g G^T
    sandwich(kG, g, want);
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "filter " << i;
    output_transform(m, got);  // A^T M A
    sandwich(kAT, m, want);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "output " << i;
    output_gradient_transform(e, got);  // A E A^T
    sandwich_transposed(kAT, e, want);
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "output gradient " << i;
    weight_gradient_transform(w, got);  // G^T W G
    sandwich_transposed(kG, w, want);
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << "weight gradient " << i;
  }
}

TEST(WinogradTransforms, ComputeTheTileCorrelationAndItsWeightGradient) {
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 20; ++trial) {
    double d[16], g[9], e[4];
    fill_random(d, rng), fill_random(g, rng), fill_random(e, rng);
    double u[16], v[16], eh[16], prod[16];
    input_transform(d, v);
    filter_transform(g, u);
    output_gradient_transform(e, eh);
    // Y = A^T [U (.) V] A is the 2x2 correlation of d with g.
    for (int i = 0; i < 16; ++i) prod[i] = u[i] * v[i];
    double y[4];
    output_transform(prod, y);
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) {
        double want = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) want += d[(p + r) * 4 + q + s] * g[r * 3 + s];
        EXPECT_NEAR(y[p * 2 + q], want, 1e-13) << p << "," << q;
      }
    // G^T [(A E A^T) (.) V] G is the gradient of <E, Y> with respect to g.
    for (int i = 0; i < 16; ++i) prod[i] = eh[i] * v[i];
    double dg[9];
    weight_gradient_transform(prod, dg);
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) {
        double want = 0;
        for (int p = 0; p < 2; ++p)
          for (int q = 0; q < 2; ++q) want += e[p * 2 + q] * d[(p + r) * 4 + q + s];
        EXPECT_NEAR(dg[r * 3 + s], want, 1e-13) << r << "," << s;
      }
  }
}

}  // namespace
}  // namespace convkit::cpu::winograd
