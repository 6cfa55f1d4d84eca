// The F(2x2, 3x3) and F(4x4, 3x3) tile transforms
// (cpu/conv/winograd_transforms.h): each unrolled transform against its
// matrix written out, and the two identities the algorithm rests on, in
// float64 on random tiles.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cpu/conv/winograd_transforms.h"

namespace convkit::cpu::winograd {
namespace {

using Matrix = std::vector<std::vector<double>>;

// The matrices of Lavin & Gray, as printed there.
struct Matrices {
  Matrix BT, G, AT;
};
Matrices matrices(int m) {
  if (m == 2)
    return {{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
            {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
            {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  return {{{4, 0, -5, 0, 1, 0},
           {0, -4, -4, 1, 1, 0},
           {0, 4, -4, -1, 1, 0},
           {0, -2, -1, 2, 1, 0},
           {0, 2, -1, -2, 1, 0},
           {0, 4, 0, -5, 0, 1}},
          {{1.0 / 4, 0, 0},
           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
           {-1.0 / 6, 1.0 / 6, -1.0 / 6},
           {1.0 / 24, 1.0 / 12, 1.0 / 6},
           {1.0 / 24, -1.0 / 12, 1.0 / 6},
           {0, 0, 1}},
          {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
}

Matrix transposed(const Matrix& x) {
  Matrix t(x[0].size(), std::vector<double>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x[0].size(); ++j) t[j][i] = x[i][j];
  return t;
}

// L in L^T (in: n x n row-major, L: o x n) by plain matrix products: the simple twin.
std::vector<double> sandwich(const Matrix& L, const std::vector<double>& in) {
  const std::size_t o = L.size(), n = L[0].size();
  std::vector<double> out(o * o, 0.0);
  for (std::size_t i = 0; i < o; ++i)
    for (std::size_t j = 0; j < o; ++j)
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b) out[i * o + j] += L[i][a] * in[a * n + b] * L[j][b];
  return out;
}

std::vector<double> random_values(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(n);
  for (double& e : v) e = dist(rng);
  return v;
}

template <int M>
void check_against_matrices() {
  constexpr int a = F<M>::kTile;
  const Matrices mat = matrices(M);
  std::mt19937_64 rng(7 + M);
  for (int trial = 0; trial < 20; ++trial) {
    const auto d = random_values(a * a, rng), g = random_values(9, rng), m = random_values(a * a, rng),
               e = random_values(M * M, rng), w = random_values(a * a, rng);
    std::vector<double> got(a * a);
    auto expect_equal = [&](const std::vector<double>& want, const char* what) {
      for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-13) << what << " F(" << M << ") " << i;
    };
    input_transform<M>(d.data(), got.data());
    expect_equal(sandwich(mat.BT, d), "B^T D B");
    filter_transform<M>(g.data(), got.data());
    expect_equal(sandwich(mat.G, g), "G g G^T");
    output_transform<M>(m.data(), got.data());
    expect_equal(sandwich(mat.AT, m), "A^T M A");
    output_gradient_transform<M>(e.data(), got.data());
    expect_equal(sandwich(transposed(mat.AT), e), "A E A^T");
    weight_gradient_transform<M>(w.data(), got.data());
    expect_equal(sandwich(transposed(mat.G), w), "G^T W G");
  }
}

TEST(WinogradTransforms, MatchTheirMatrices) {
  check_against_matrices<2>();
  check_against_matrices<4>();
}

template <int M>
void check_identities() {
  constexpr int a = F<M>::kTile;
  std::mt19937_64 rng(8 + M);
  for (int trial = 0; trial < 20; ++trial) {
    const auto d = random_values(a * a, rng), g = random_values(9, rng), e = random_values(M * M, rng);
    std::vector<double> u(a * a), v(a * a), eh(a * a), prod(a * a);
    input_transform<M>(d.data(), v.data());
    filter_transform<M>(g.data(), u.data());
    output_gradient_transform<M>(e.data(), eh.data());
    // Y = A^T [U (.) V] A is the M x M correlation of d with g.
    for (int i = 0; i < a * a; ++i) prod[i] = u[i] * v[i];
    std::vector<double> y(M * M);
    output_transform<M>(prod.data(), y.data());
    for (int p = 0; p < M; ++p)
      for (int q = 0; q < M; ++q) {
        double want = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) want += d[(p + r) * a + q + s] * g[r * 3 + s];
        EXPECT_NEAR(y[p * M + q], want, 1e-12) << "F(" << M << ") output " << p << "," << q;
      }
    // Row 1 of A is all ones, so point (1, 1) of A E A^T is the sum of E:
    // backward-weights reads the bias gradient off it.
    double block_sum = 0;
    for (double v : e) block_sum += v;
    EXPECT_NEAR(eh[a + 1], block_sum, 1e-13) << "F(" << M << ") block sum";
    // G^T [(A E A^T) (.) V] G is the gradient of <E, Y> with respect to g.
    for (int i = 0; i < a * a; ++i) prod[i] = eh[i] * v[i];
    std::vector<double> dg(9);
    weight_gradient_transform<M>(prod.data(), dg.data());
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) {
        double want = 0;
        for (int p = 0; p < M; ++p)
          for (int q = 0; q < M; ++q) want += e[p * M + q] * d[(p + r) * a + q + s];
        EXPECT_NEAR(dg[r * 3 + s], want, 1e-12) << "F(" << M << ") weight gradient " << r << "," << s;
      }
  }
}

TEST(WinogradTransforms, ComputeTheTileCorrelationAndItsWeightGradient) {
  check_identities<2>();
  check_identities<4>();
}

}  // namespace
}  // namespace convkit::cpu::winograd
