// conv2d at the op level: every algorithm on every device agrees with the
// float64 direct algorithm on the cpu, and every input's gradient passes
// gradcheck. The raw algorithms are tested in depth in tests/cpu_conv.
#include "support/support.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::random_tensor;

struct Case {
  Shape x, w;
  Conv2dParams p;
  bool bias;
};

std::vector<Case> cases() {
  return {
      {{1, 1, 5, 5}, {1, 1, 3, 3}, Conv2dParams(), true},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, Conv2dParams().padding(1), true},
      {{1, 2, 9, 7}, {3, 2, 3, 2}, Conv2dParams().stride(2).padding(1, 0), false},
      {{2, 4, 6, 6}, {6, 2, 3, 3}, Conv2dParams().groups(2).padding_same(), true},
      {{1, 3, 8, 9}, {2, 3, 5, 5}, Conv2dParams().padding_same(), true},
      {{3, 2, 6, 5}, {5, 2, 1, 1}, Conv2dParams(), true},
      {{1, 2, 9, 9}, {2, 2, 3, 3}, Conv2dParams().dilation(2).padding(0, 1, 2, 0), true},
      {{2, 5, 4, 11}, {1, 5, 2, 4}, Conv2dParams().stride(1, 2).padding(1, 2), true},
  };
}

class ConvOp : public ::testing::TestWithParam<Device> {};

TEST_P(ConvOp, EveryAlgorithmMatchesTheFloat64DirectResult) {
  std::mt19937_64 rng(testing::kSeed + 40);
  for (const Case& c : cases()) {
    const TensorOptions cpu64 = TensorOptions().dtype(DType::float64);
    const Tensor x = random_tensor(c.x, rng, cpu64), w = random_tensor(c.w, rng, cpu64);
    const Tensor b = c.bias ? random_tensor({c.w[0]}, rng, cpu64) : Tensor();
    const auto want = conv2d(x, w, b, Conv2dParams(c.p).algo(ConvAlgo::direct)).to_vector<double>();
    std::vector<ConvAlgo> algos{ConvAlgo::automatic};
    for (const ConvAlgoInfo& info : kConvAlgorithms) algos.push_back(info.algo);
    for (ConvAlgo algo : algos) {
      const Conv2dDesc d = make_conv2d_desc(c.x, c.w, c.p);
      if (algo != ConvAlgo::automatic && !backend_for(GetParam()).conv2d_supports(algo, d)) continue;
      for (DType dt : {DType::float32, DType::float64}) {
        const auto on = [&](const Tensor& t) { return t.defined() ? t.to(dt).to(GetParam()) : t; };
        const Tensor y = conv2d(on(x), on(w), on(b), Conv2dParams(c.p).algo(algo));
        // FFT rounds through transforms of size ~16-32: a few ulps times log2(size) more.
        const double tol = dt == DType::float64 ? 1e-10 : (algo == ConvAlgo::fft ? 2e-4 : 2e-5);
        EXPECT_TRUE(all_close(y, want, tol, tol)) << conv_algo_name(algo) << " " << dt << " " << d;
      }
    }
  }
}

TEST_P(ConvOp, GradientsOfInputWeightAndBiasPassGradcheck) {
  std::mt19937_64 rng(testing::kSeed + 41);
  for (const Case& c : cases()) {
    const TensorOptions o = TensorOptions().dtype(DType::float64).device(GetParam()).requires_grad();
    const Tensor x = random_tensor(c.x, rng, o), w = random_tensor(c.w, rng, o);
    const Tensor b = c.bias ? random_tensor({c.w[0]}, rng, o) : Tensor();
    const Conv2dDesc d = make_conv2d_desc(c.x, c.w, c.p);
    for (const ConvAlgoInfo& info : kConvAlgorithms) {
      const ConvAlgo algo = info.algo;
      if (!backend_for(GetParam()).conv2d_supports(algo, d)) continue;
      std::vector<Tensor> inputs{x, w};
      if (b.defined()) inputs.push_back(b);
      EXPECT_TRUE(testing::grad_ok([&](const std::vector<Tensor>& in) {
        return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), Conv2dParams(c.p).algo(algo));
      }, inputs)) << conv_algo_name(algo) << " " << d;
    }
  }
}

TEST_P(ConvOp, OnlyTheInputsThatNeedGradientsGetThem) {
  const TensorOptions o = TensorOptions().device(GetParam());
  const Tensor x = ones({1, 2, 4, 4}, o);  // no grad: the first layer's input
  const Tensor w = ones({3, 2, 3, 3}, TensorOptions(o).requires_grad());
  const Tensor b = zeros({3}, TensorOptions(o).requires_grad());
  sum(conv2d(x, w, b)).backward();
  EXPECT_EQ(w.grad().shape(), w.shape());
  EXPECT_EQ(sum(b.grad()).item(), 1 * 2 * 2 * 3);  // N * P * Q per channel, 3 channels
  EXPECT_FALSE(x.grad().defined());
}

TEST_P(ConvOp, SamePaddingKeepsCeilOfInputOverStride) {
  const TensorOptions o = TensorOptions().device(GetParam());
  EXPECT_EQ(conv2d(ones({1, 1, 7, 8}, o), ones({1, 1, 3, 4}, o), Tensor(), Conv2dParams().padding_same()).shape(),
            (Shape{1, 1, 7, 8}));
  EXPECT_EQ(conv2d(ones({1, 1, 7, 8}, o), ones({1, 1, 3, 3}, o), Tensor(), Conv2dParams().padding_same().stride(2)).shape(),
            (Shape{1, 1, 4, 4}));
}

TEST_P(ConvOp, BadArgumentsNameTheProblem) {
  const TensorOptions o = TensorOptions().device(GetParam());
  auto message = [](auto&& f) {
    try { f(); } catch (const Error& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { conv2d(ones({1, 3, 5, 5}, o), ones({2, 4, 3, 3}, o)); }).find("3 channels"), std::string::npos);
  EXPECT_NE(message([&] { conv2d(ones({3, 5, 5}, o), ones({2, 3, 3, 3}, o)); }).find("[N, C, H, W]"), std::string::npos);
  EXPECT_NE(message([&] { conv2d(ones({1, 3, 5, 5}, o), ones({2, 3, 3, 3}, o), ones({3}, o)); }).find("bias"), std::string::npos);
  EXPECT_NE(message([&] { conv2d(ones({1, 1, 2, 2}, o), ones({1, 1, 3, 3}, o)); }).find("conv2d"), std::string::npos);
  EXPECT_NE(message([&] {
              conv2d(ones({1, 1, 8, 8}, o), ones({1, 1, 3, 3}, o), Tensor(), Conv2dParams().stride(2).algo(ConvAlgo::fft));
            }).find("stride"), std::string::npos);
  EXPECT_NE(message([&] { conv2d(ones({1, 1, 8, 8}, o), ones({1, 1, 3, 3}, TensorOptions(o).dtype(DType::float64))); }).find("float64"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Devices, ConvOp, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
