// conv2d at the op level, what the op table (tests/ops/op_table_conv.cpp:
// every algorithm on every device against the float64 reference, and
// gradcheck) cannot say: which inputs get gradients, 'same' padding, errors.
// The raw algorithms are tested in depth in tests/cpu/conv.
#include "support/support.h"

namespace convkit {
namespace {

class ConvOp : public ::testing::TestWithParam<Device> {};

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
