// The tiled SGEMM is right, and each of its two barriers matters: leaving one
// out gives clearly wrong results under every schedule order.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/test_kernels.h"
#include "sim_test_util.h"

namespace {

using sim_test_kernels::SgemmBarriers;

struct Matrices {
  int m, n, k;
  std::vector<float> a, b;
};

Matrices random_matrices(int m, int n, int k) {
  std::mt19937_64 rng(sim_test::kSeed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Matrices x{m, n, k, std::vector<float>(static_cast<std::size_t>(m) * k),
             std::vector<float>(static_cast<std::size_t>(k) * n)};
  for (float& v : x.a) v = uniform(rng);
  for (float& v : x.b) v = uniform(rng);
  return x;
}

std::vector<double> cpu_product(const Matrices& x) {
  std::vector<double> c(static_cast<std::size_t>(x.m) * x.n, 0.0);
  for (int i = 0; i < x.m; ++i) {
    for (int j = 0; j < x.n; ++j) {
      double sum = 0.0;
      for (int p = 0; p < x.k; ++p) sum += double{x.a[i * x.k + p]} * x.b[p * x.n + j];
      c[i * x.n + j] = sum;
    }
  }
  return c;
}

// ||c - reference|| / ||reference|| in the Frobenius norm.
double relative_error(const std::vector<float>& c, const std::vector<double>& reference) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    diff += (c[i] - reference[i]) * (c[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  return std::sqrt(diff / norm);
}

double sgemm_error(SgemmBarriers barriers, int m, int n, int k) {
  const Matrices x = random_matrices(m, n, k);
  std::vector<float> c(static_cast<std::size_t>(m) * n, 0.0f);
  sim_test_kernels::sgemm_tiled(barriers, x.a.data(), x.b.data(), c.data(), m, n, k);
  return relative_error(c, cpu_product(x));
}

class Sgemm : public sim_test::WithSchedule {};

TEST_P(Sgemm, TiledKernelMatchesCpuLoop) {
  EXPECT_LT(sgemm_error(SgemmBarriers::both, 64, 64, 64), 1e-6);
  EXPECT_LT(sgemm_error(SgemmBarriers::both, 37, 53, 45), 1e-6);  // ragged edge tiles
  EXPECT_LT(sgemm_error(SgemmBarriers::both, 1, 1, 1), 1e-6);
}

TEST_P(Sgemm, WithoutBarrierAfterLoadResultsAreWrong) {
  EXPECT_GT(sgemm_error(SgemmBarriers::no_sync_after_load, 64, 64, 64), 0.1);
}

TEST_P(Sgemm, WithoutBarrierAfterUseResultsAreWrong) {
  EXPECT_GT(sgemm_error(SgemmBarriers::no_sync_after_use, 64, 64, 64), 0.1);
}

INSTANTIATE_TEST_SUITE_P(sim, Sgemm, ::testing::ValuesIn(sim_test::kSchedules),
                         sim_test::schedule_test_name);

}  // namespace
