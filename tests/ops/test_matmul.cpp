// What the op table (op_table_layers.cpp) cannot say about matmul: products
// large enough for the cpu to split between threads, and the shape error.
#include "support/support.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::random_tensor;

// Float64 reference for [B?, M, K] @ [B?, K, N] with broadcast batch (rank <= 3).
std::vector<double> ref_matmul(const Tensor& a, const Tensor& b) {
  const auto av = a.contiguous().to_vector<double>(), bv = b.contiguous().to_vector<double>();
  const std::int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  const std::int64_t Ba = a.dim() == 3 ? a.size(0) : 1, Bb = b.dim() == 3 ? b.size(0) : 1;
  const std::int64_t B = std::max(Ba, Bb);
  std::vector<double> out(static_cast<std::size_t>(B * M * N));
  for (std::int64_t bi = 0; bi < B; ++bi)
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += av[static_cast<std::size_t>((Ba == 1 ? 0 : bi) * M * K + i * K + k)] *
               bv[static_cast<std::size_t>((Bb == 1 ? 0 : bi) * K * N + k * N + j)];
        out[static_cast<std::size_t>((bi * M + i) * N + j)] = s;
      }
  return out;
}

class Matmul : public ::testing::TestWithParam<Device> {};

// Products over the cpu's threading threshold (4 MFLOP) are split between
// threads by output rows or by output columns; sizes that are not multiples
// of the 16-column blocks leave a last, shorter block.
TEST_P(Matmul, LargeProductsSplitByRowsOrColumnsMatchReference) {
  std::mt19937_64 rng(testing::kSeed + 22);
  for (DType dt : {DType::float32, DType::float64}) {
    const TensorOptions o = TensorOptions().dtype(dt).device(GetParam());
    const double tol = dt == DType::float32 ? 1e-4 : 1e-11;
    const Tensor a = random_tensor({20, 300}, rng, o), b = random_tensor({300, 401}, rng, o);  // by columns
    EXPECT_TRUE(all_close(matmul(a, b), ref_matmul(a, b), tol, tol)) << dt;
    const Tensor c = random_tensor({333, 50}, rng, o), d = random_tensor({50, 130}, rng, o);  // by rows
    EXPECT_TRUE(all_close(matmul(c, d), ref_matmul(c, d), tol, tol)) << dt;
    // Column-major views, as the dense layer's backward passes them.
    const Tensor ct = random_tensor({50, 333}, rng, o), dt_ = random_tensor({130, 50}, rng, o);
    EXPECT_TRUE(all_close(matmul(ct.t(), dt_.t()), ref_matmul(ct.t(), dt_.t()), tol, tol)) << dt;
  }
}

TEST_P(Matmul, ShapeMismatchNamesBothShapes) {
  try {
    (void)matmul(zeros({2, 3}, GetParam()), zeros({4, 5}, GetParam()));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3] and [4, 5]"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, Matmul, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
