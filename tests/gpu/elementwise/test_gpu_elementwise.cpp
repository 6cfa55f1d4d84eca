// The elementwise family on sim (kernels/elementwise.cu): v2's 16-byte packs
// and broadcast-scalar path against the v1 twin, bit for bit, and against the
// cpu, on every tail length of a pack, odd offsets (misaligned views, which
// run v1), strided views, broadcast scalars and rows, and in-place updates.
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "gpu/gpu_testing.h"
#include "kernels/elementwise.cuh"

namespace convkit {
namespace {

const std::int64_t kLengths[] = {1, 2, 3, 4, 5, 7, 8, 17, 1023, 4097};

// The operand layouts of one test: the tensors on sim and the same on cpu.
struct Operands {
  Tensor a, b;
};

// `a` of n elements, and `b` as a full tensor, a broadcast scalar, a view one
// element into a larger buffer (misaligned), or a strided view.
std::vector<Operands> layouts(std::int64_t n, DType dt, Device d, std::mt19937_64& rng) {
  const TensorOptions o = TensorOptions().dtype(dt).device(d);
  const Tensor a = testing::random_tensor({n}, rng, o, 0.5, 2.0);
  const Tensor wide = testing::random_tensor({2 * n + 1}, rng, o, 0.5, 2.0);
  return {{a, testing::random_tensor({n}, rng, o, 0.5, 2.0)},
          {a, full({1}, 1.75, o).expand({n})},
          {full({1}, -0.5, o).expand({n}), a},
          {wide.narrow(0, 1, n), a},
          {a, wide.slice(0, 0, 2 * n, 2)}};
}

std::vector<double> run_binary(BinaryOp op, const Operands& x, int version) {
  testing::ScopedKernelVersion v("elementwise", version);
  Tensor out = Tensor::empty(x.a.shape(), TensorOptions().dtype(x.a.dtype()).device(x.a.device()));
  backend_for(x.a.device()).binary(op, x.a, x.b, out);
  return out.to_vector<double>();
}

std::vector<double> run_unary(UnaryOp op, const Tensor& x, int version, double a = 0.25) {
  testing::ScopedKernelVersion v("elementwise", version);
  Tensor out = Tensor::empty(x.shape(), TensorOptions().dtype(x.dtype()).device(x.device()));
  backend_for(x.device()).unary(op, x, out, a, 0);
  return out.to_vector<double>();
}

TEST(GpuElementwise, V2MatchesV1BitForBitAndTheCpu) {
  gpu_sim::register_elementwise_kernels();
  std::mt19937_64 rng(testing::kSeed + 900);
  for (DType dt : {DType::float32, DType::float64})
    for (std::int64_t n : kLengths) {
      std::size_t layout = 0;
      for (const Operands& x : layouts(n, dt, kSim, rng)) {
        const Operands cpu{x.a.to(kCPU), x.b.to(kCPU)};
        for (BinaryOp op : {BinaryOp::add, BinaryOp::mul, BinaryOp::div, BinaryOp::maximum, BinaryOp::relu_grad}) {
          const auto v2 = run_binary(op, x, 2);
          EXPECT_EQ(v2, run_binary(op, x, 1)) << "n " << n << " layout " << layout << " " << dt;
          EXPECT_TRUE(testing::all_close(v2, run_binary(op, cpu, 1), 1e-6, 1e-6)) << "n " << n << " layout " << layout;
        }
        for (UnaryOp op : {UnaryOp::exp, UnaryOp::sigmoid, UnaryOp::relu, UnaryOp::add_scalar}) {
          const auto v2 = run_unary(op, x.a, 2);
          EXPECT_EQ(v2, run_unary(op, x.a, 1)) << "n " << n << " layout " << layout << " " << dt;
          EXPECT_TRUE(testing::all_close(v2, run_unary(op, cpu.a, 1), 1e-6, 1e-6));
        }
        ++layout;
      }
    }
}

TEST(GpuElementwise, InPlaceUpdatesMatchAcrossVersions) {
  gpu_sim::register_elementwise_kernels();
  std::mt19937_64 rng(testing::kSeed + 901);
  for (std::int64_t n : kLengths) {
    const Tensor start = testing::random_tensor({n}, rng, TensorOptions().device(kSim), -1, 1);
    const Tensor other = testing::random_tensor({n}, rng, TensorOptions().device(kSim), -1, 1);
    std::vector<std::vector<float>> results;
    for (int version : {1, 2}) {
      testing::ScopedKernelVersion v("elementwise", version);
      Tensor x = start.clone();
      x.add_(other).mul_(3.0).relu_();  // out == x: v2 must not assume the operands are disjoint
      results.push_back(x.to_vector<float>());
    }
    EXPECT_EQ(results[0], results[1]) << "n " << n;
  }
}

std::vector<std::string> kernels_run(const std::function<void()>& f) {
  sim::ScopedProfile profile;
  f();
  std::vector<std::string> names;
  for (const auto& k : profile.take()) names.push_back(k.kernel.substr(0, k.kernel.find('<')));
  return names;
}

TEST(GpuElementwise, V2RunsWhereItCanAndV1Elsewhere) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  gpu_sim::register_elementwise_kernels();
  std::mt19937_64 rng(testing::kSeed + 902);
  const std::vector<Operands> x = layouts(1001, DType::float32, kSim, rng);
  using Names = std::vector<std::string>;
  EXPECT_EQ(kernels_run([&] { (void)run_binary(BinaryOp::add, x[0], 2); }), Names{"binary_v2_packs"});
  EXPECT_EQ(kernels_run([&] { (void)run_binary(BinaryOp::add, x[1], 2); }), Names{"binary_v2_packs"}) << "scalar";
  EXPECT_EQ(kernels_run([&] { (void)run_binary(BinaryOp::add, x[3], 2); }), Names{"binary_kernel"}) << "misaligned";
  EXPECT_EQ(kernels_run([&] { (void)run_binary(BinaryOp::add, x[4], 2); }), Names{"binary_kernel"}) << "strided";
  EXPECT_EQ(kernels_run([&] { (void)run_binary(BinaryOp::add, x[0], 1); }), Names{"binary_kernel"}) << "v1";
  EXPECT_EQ(kernels_run([&] { (void)run_unary(UnaryOp::exp, x[0].a, 2); }), Names{"unary_v2_packs"});
  EXPECT_EQ(kernels_run([&] { (void)run_unary(UnaryOp::exp, x[3].a, 2); }), Names{"unary_kernel"});
}

// One add and one scaled add of 2^20 floats per version, for the profile in
// docs/gpu/elementwise.md (CONVKIT_SIM_PROFILE=1, --gtest_filter=*ProfileRun*).
TEST(GpuElementwise, ProfileRun) {
  gpu_sim::register_elementwise_kernels();
  std::mt19937_64 rng(testing::kSeed + 903);
  const TensorOptions o = TensorOptions().device(kSim);
  const Operands x{testing::random_tensor({1 << 20}, rng, o, -1, 1), testing::random_tensor({1 << 20}, rng, o, -1, 1)};
  const Operands scaled{x.a, full({1}, 0.5, o).expand({1 << 20})};
  for (int version : {1, 2}) {
    EXPECT_EQ(run_binary(BinaryOp::add, x, version).size(), std::size_t{1} << 20);
    EXPECT_EQ(run_binary(BinaryOp::mul, scaled, version).size(), std::size_t{1} << 20);
  }
}

}  // namespace
}  // namespace convkit
