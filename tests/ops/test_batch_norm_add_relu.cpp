// batch_norm_add_relu against the three ops it fuses, relu(batch_norm(x) + r):
// values, the gradients of x, the residual, weight and bias, and the running
// statistics, in both modes, on odd shapes (one channel, batch 1, odd H and W,
// [N, C]); the in-place and the copying backward; gradcheck; bad arguments.
// The float64 reference and the kernel versions are the op table's
// (op_table_layers.cpp).
#include <algorithm>

#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::grad_ok;
using testing::opts;
using testing::random_tensor;

class BatchNormAddRelu : public ::testing::TestWithParam<Device> {};

struct Outcome {
  Tensor y, gx, gr, gw, gb, rm, rv;
};

// One forward and backward of the fused op or of the composition, from fresh
// leaves and copies of the running statistics. The backward seeds with g
// through a product, so that the op's backward receives a gradient of its own
// (the in-place path), or, with `seed_directly`, g itself (the copying path).
Outcome run_once(bool fused, bool seed_directly, const Tensor& x0, const Tensor& r0, const Tensor& w0, const Tensor& b0,
        const Tensor& rm0, const Tensor& rv0, bool training, const Tensor& g) {
  Outcome o;
  const Tensor x = x0.clone().requires_grad_(true), r = r0.clone().requires_grad_(true),
               w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
  o.rm = rm0.clone();
  o.rv = rv0.clone();
  o.y = fused ? batch_norm_add_relu(x, r, o.rm, o.rv, w, b, training, 0.1, 1e-3)
              : relu(batch_norm(x, o.rm, o.rv, w, b, training, 0.1, 1e-3) + r);
  if (seed_directly) {
    o.y.backward(g);
  } else {
    (o.y * g).sum().backward();
  }
  o.gx = x.grad();
  o.gr = r.grad();
  o.gw = w.grad();
  o.gb = b.grad();
  return o;
}

TEST_P(BatchNormAddRelu, MatchesTheUnfusedCompositionOnOddShapes) {
  std::mt19937_64 rng(testing::kSeed + 230);
  // {2, 2, 47, 53}: planes of 2491 values, across the 2048-value blocks of the cpu's masked reduction.
  const std::vector<Shape> shapes = {{2, 3, 5, 7}, {3, 1, 3, 3}, {1, 4, 3, 5}, {1, 1, 7, 1}, {5, 3}, {2, 2, 33},
                                     {2, 2, 47, 53}};
  for (DType dt : {DType::float32, DType::float64}) {
    const TensorOptions o = opts(dt, GetParam());
    // float32: the statistics are summed in different orders by the two paths
    // only through the gradient's rounding; the forward is the same arithmetic.
    const double tol = dt == DType::float32 ? 2e-5 : 1e-12;
    for (const Shape& s : shapes)
      for (bool training : {true, false})
        for (bool seed_directly : {false, true}) {
          SCOPED_TRACE(::testing::Message() << s << " " << dt << " training " << training << " seed directly "
                                            << seed_directly);
          const std::int64_t C = s[1];
          const Tensor x = random_tensor(s, rng, o, -2, 2), r = random_tensor(s, rng, o, -1, 1),
                       g = random_tensor(s, rng, o);
          const Tensor w = random_tensor({C}, rng, o, 0.5, 1.5), b = random_tensor({C}, rng, o, -0.5, 0.5);
          const Tensor rm = random_tensor({C}, rng, o), rv = random_tensor({C}, rng, o, 0.5, 2);
          const std::vector<double> g_before = g.to_vector<double>();
          const Outcome f = run_once(true, seed_directly, x, r, w, b, rm, rv, training, g);
          const Outcome u = run_once(false, seed_directly, x, r, w, b, rm, rv, training, g);
          EXPECT_TRUE(all_close(f.y, u.y.to_vector<double>(), tol, tol)) << "output";
          EXPECT_TRUE(all_close(f.gx, u.gx.to_vector<double>(), tol, tol)) << "grad x";
          EXPECT_TRUE(all_close(f.gr, u.gr.to_vector<double>(), tol, tol)) << "grad residual";
          EXPECT_TRUE(all_close(f.gw, u.gw.to_vector<double>(), tol, tol)) << "grad weight";
          EXPECT_TRUE(all_close(f.gb, u.gb.to_vector<double>(), tol, tol)) << "grad bias";
          EXPECT_TRUE(all_close(f.rm, u.rm.to_vector<double>(), tol, tol)) << "running mean";
          EXPECT_TRUE(all_close(f.rv, u.rv.to_vector<double>(), tol, tol)) << "running var";
          if (training) {
            EXPECT_FALSE(all_close(f.rm, rm.to_vector<double>(), 0, 0)) << "running mean not updated";
          }
          EXPECT_TRUE(all_close(g, g_before, 0, 0)) << "the caller's gradient was overwritten";
          const std::vector<double> y = f.y.to_vector<double>();
          EXPECT_TRUE(std::any_of(y.begin(), y.end(), [](double v) { return v == 0; })) << "the ReLU cut nothing";
          EXPECT_TRUE(std::any_of(y.begin(), y.end(), [](double v) { return v > 0; })) << "the ReLU cut everything";
        }
  }
}

// Without weight, bias or running statistics, and with a residual that needs
// no gradient (the block's input under no_grad, say).
TEST_P(BatchNormAddRelu, OptionalArgumentsAndAResidualWithoutGradient) {
  std::mt19937_64 rng(testing::kSeed + 231);
  const TensorOptions o = opts(DType::float64, GetParam());
  const Tensor x = random_tensor({3, 2, 4, 3}, rng, TensorOptions(o).requires_grad()),
               r = random_tensor({3, 2, 4, 3}, rng, o);
  const Tensor y = batch_norm_add_relu(x, r, Tensor(), Tensor(), Tensor(), Tensor(), true);
  EXPECT_TRUE(all_close(y, relu(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true) + r).to_vector<double>(),
                        1e-12, 1e-12));
  EXPECT_TRUE(grad_ok([&](const auto& in) {
    return batch_norm_add_relu(in[0], r, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3);
  }, {x}));
}

TEST_P(BatchNormAddRelu, GradientsPassGradcheckInBothModes) {
  std::mt19937_64 rng(testing::kSeed + 232);
  const TensorOptions o = TensorOptions(opts(DType::float64, GetParam())).requires_grad();
  const Tensor x = random_tensor({2, 3, 3, 2}, rng, o), r = random_tensor({2, 3, 3, 2}, rng, o, -0.5, 0.5);
  const Tensor w = random_tensor({3}, rng, o, 0.5, 1.5), b = random_tensor({3}, rng, o);
  for (bool training : {true, false}) {
    const Tensor rm = random_tensor({3}, rng, opts(DType::float64, GetParam())),
                 rv = random_tensor({3}, rng, opts(DType::float64, GetParam()), 0.5, 2);
    EXPECT_TRUE(grad_ok([&](const auto& in) {
      return batch_norm_add_relu(in[0], in[1], rm.clone(), rv.clone(), in[2], in[3], training, 0.1, 1e-3);
    }, {x, r, w, b})) << "training " << training;
  }
}

TEST_P(BatchNormAddRelu, BadArgumentsAreClearErrors) {
  using testing::throws_with;
  const Device d = GetParam();
  const Tensor x = zeros({4, 3, 2, 2}, d), c3 = ones({3}, d);
  EXPECT_TRUE(throws_with([&] { batch_norm_add_relu(x, Tensor(), c3, c3, c3, c3, true); }, {"residual", "undefined"}));
  EXPECT_TRUE(throws_with([&] { batch_norm_add_relu(x, zeros({4, 3, 2, 1}, d), c3, c3, c3, c3, true); },
                          {"batch_norm_add_relu", "residual", "[4, 3, 2, 2]", "[4, 3, 2, 1]"}));
  EXPECT_TRUE(throws_with(
      [&] { batch_norm_add_relu(x, zeros({4, 3, 2, 2}, TensorOptions(DType::float64).device(d)), c3, c3, c3, c3, true); },
      {"residual", "float64", "float32"}));
  if (d != kCPU) {
    EXPECT_TRUE(throws_with([&] { batch_norm_add_relu(x, zeros({4, 3, 2, 2}), c3, c3, c3, c3, true); },
                            {"residual", "cpu"}));
  }
  EXPECT_TRUE(throws_with([&] { batch_norm_add_relu(x, x, c3, c3, ones({4}, d), c3, true); }, {"weight", "[4]"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, BatchNormAddRelu, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

}  // namespace
}  // namespace convkit
