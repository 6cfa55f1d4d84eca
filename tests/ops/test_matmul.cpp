// What the op table (op_table_layers.cpp) cannot say about matmul: products
// large enough for the cpu to split between threads, the shape error, and
// the opt-in TF32 precision of the GPU path.
#include <bit>
#include <cstdlib>

#include "convkit/backend/precision.h"
#include "support/support.h"
#include "gpu/tensor_core_tolerance.h"

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

// float32_precision's medium level: bf16 operands on a GPU backend, within
// their error bound of float64 and apart from tf32's results; high is
// allow_tf32; the cpu backend ignores both.
TEST_P(Matmul, MediumPrecisionMultipliesBf16Operands) {
  const TensorOptions o = TensorOptions().dtype(DType::float32).device(GetParam());
  std::mt19937_64 rng(testing::kSeed + 22);
  const std::int64_t K = 70;
  const Tensor a = random_tensor({37, K}, rng, o), b = random_tensor({K, 29}, rng, o);
  const std::vector<double> want = ref_matmul(a, b);
  // 1 + 2^-10 has a tf32 form but no bf16 one (7 mantissa bits).
  const Tensor x = full({1, 1}, 1.0 + 0x1p-10, o), y = full({1, 1}, 3.0, o);
  const bool gpu = GetParam().type != DeviceType::cpu;
  std::vector<float> high, medium;
  {
    const ScopedFloat32Precision p(Float32Precision::high);
    EXPECT_TRUE(allow_tf32());
    high = matmul(a, b).to_vector<float>();
    EXPECT_EQ(matmul(x, y).to_vector<float>()[0], 3.0f * (1.0f + 0x1p-10f));
  }
  {
    const ScopedFloat32Precision p(Float32Precision::medium);
    EXPECT_TRUE(allow_tf32()) << "medium lets the tensor cores run too";
    medium = matmul(a, b).to_vector<float>();
    EXPECT_EQ(matmul(x, y).to_vector<float>()[0], gpu ? 3.0f : 3.0f * (1.0f + 0x1p-10f));
    // float64 ignores the setting.
    const Tensor x64 = full({1, 1}, 1.0 + 0x1p-30, TensorOptions(o).dtype(DType::float64));
    EXPECT_EQ(matmul(x64, x64).to_vector<double>()[0], (1.0 + 0x1p-30) * (1.0 + 0x1p-30));
  }
  bool any_differs = false;
  for (std::size_t i = 0; i < medium.size(); ++i) {
    // Operands in [-1, 1): sum |a||b| <= K.
    EXPECT_NEAR(medium[i], want[i], testing::rounded_operand_bound(K, K, testing::kBf16Unit)) << i;
    any_differs = any_differs || medium[i] != high[i];
  }
  EXPECT_EQ(any_differs, gpu);
}

TEST(Float32Precision, NamesRoundTripAndABadNameIsAnError) {
  for (Float32Precision p : {Float32Precision::highest, Float32Precision::high, Float32Precision::medium})
    EXPECT_EQ(parse_float32_precision(to_string(p)), p);
  EXPECT_TRUE(testing::throws_with([] { (void)parse_float32_precision("low"); }, {"'low'", "highest, high, medium"}));
  EXPECT_EQ(operand_unit_roundoff(Float32Precision::highest), 0.0);
  EXPECT_EQ(operand_unit_roundoff(Float32Precision::high), testing::kTf32Unit);
  EXPECT_EQ(operand_unit_roundoff(Float32Precision::medium), testing::kBf16Unit);
  const ScopedFloat32Precision outer(Float32Precision::medium);
  set_allow_tf32(false);
  EXPECT_EQ(float32_precision(), Float32Precision::highest);
  set_allow_tf32(true);
  EXPECT_EQ(float32_precision(), Float32Precision::high);
  { const ScopedAllowTf32 off(false); EXPECT_FALSE(allow_tf32()); }
  EXPECT_EQ(float32_precision(), Float32Precision::high);
}

// Run by the ctest entries test_ops.float32_precision_env* with the variables
// set (skipped in the ordinary run, where they are unset).
TEST(Float32PrecisionEnvironment, TheVariableSetsTheStartingPrecision) {
  const char* named = std::getenv("CONVKIT_FLOAT32_PRECISION");
  if (named == nullptr) GTEST_SKIP() << "CONVKIT_FLOAT32_PRECISION is unset";
  EXPECT_EQ(to_string(float32_precision()), std::string(named));
}

INSTANTIATE_TEST_SUITE_P(Devices, Matmul, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
