// What the op table (op_table_layers.cpp) cannot say about matmul: products
// large enough for the cpu to split between threads, the shape error, and
// the opt-in TF32 precision of the GPU path.
#include <bit>
#include <cstdlib>

#include "convkit/backend/precision.h"
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

// allow_tf32 is off unless asked for, and off means strict float32: the same
// bits as before the setting existed (products that tf32 would round differ).
// On a GPU backend, on means tf32 operands within their error bound; the cpu
// backend ignores it.
TEST_P(Matmul, AllowTf32IsOptInAndOffIsStrictFloat32) {
  if (std::getenv("CONVKIT_ALLOW_TF32") == nullptr) {
    EXPECT_FALSE(allow_tf32());
  }
  const ScopedAllowTf32 strict(false);
  const TensorOptions o = TensorOptions().dtype(DType::float32).device(GetParam());
  std::mt19937_64 rng(testing::kSeed + 21);
  const Tensor a = random_tensor({37, 70}, rng, o), b = random_tensor({70, 29}, rng, o);
  const std::vector<float> off = matmul(a, b).to_vector<float>();
  // 1 + 2^-20 has no tf32 form: strict float32 keeps it.
  const Tensor x = full({1, 1}, 1.0 + 0x1p-20, o), y = full({1, 1}, 3.0, o);
  EXPECT_EQ(matmul(x, y).to_vector<float>()[0], 3.0f * (1.0f + 0x1p-20f));
  std::vector<float> on;
  {
    const ScopedAllowTf32 tf32(true);
    EXPECT_TRUE(allow_tf32());
    on = matmul(a, b).to_vector<float>();
    const float xy = matmul(x, y).to_vector<float>()[0];
    EXPECT_EQ(xy, (GetParam().type == DeviceType::cpu) ? 3.0f * (1.0f + 0x1p-20f) : 3.0f);
  }
  EXPECT_FALSE(allow_tf32());
  const std::vector<float> off_again = matmul(a, b).to_vector<float>();
  for (std::size_t i = 0; i < off.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(off[i]), std::bit_cast<std::uint32_t>(off_again[i])) << i;
  EXPECT_TRUE(all_close(matmul(a, b), ref_matmul(a, b), 1e-5, 1e-5));
  const std::vector<double> want = ref_matmul(a, b);
  bool any_differs = false;
  for (std::size_t i = 0; i < on.size(); ++i) {
    EXPECT_NEAR(on[i], want[i], 70 * 0x1p-10) << i;  // K * 2u * max|a||b| (values in [-1, 1))
    any_differs = any_differs || on[i] != off[i];
  }
  EXPECT_EQ(any_differs, !(GetParam().type == DeviceType::cpu));
}

INSTANTIATE_TEST_SUITE_P(Devices, Matmul, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
