// What the op table (op_table_elementwise.cpp, op_table_layers.cpp) cannot
// say about activations: torch's defaults, the gradient at the kink, errors.
#include <cmath>

#include "ops/ops_testing.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::opts;

class Activation : public ::testing::TestWithParam<Device> {};

TEST_P(Activation, LeakyReluAndEluDefaultsAreTorchs) {
  // Defaults: torch's 0.01 and 1.0.
  const Tensor x = from_vector(std::vector<double>{-2, 3}, {2}, opts(DType::float64, GetParam()));
  EXPECT_TRUE(all_close(leaky_relu(x), {-0.02, 3}, 1e-15, 0));
  EXPECT_TRUE(all_close(elu(x), {std::exp(-2.0) - 1, 3}, 1e-15, 0));
}

TEST_P(Activation, LeakyReluGradientAtZeroIsTheNegativeSide) {
  // At exactly 0 the gradient is the negative-side one, as torch.
  Tensor z = zeros({1}, opts(DType::float64, GetParam())).requires_grad_();
  leaky_relu(z, 0.25).sum().backward();
  EXPECT_DOUBLE_EQ(z.grad().item(), 0.25);
}

TEST_P(Activation, BadArgumentsAreClearErrors) {
  const Tensor x = zeros({2, 3}, GetParam());
  EXPECT_TRUE(testing::throws_with([&] { softmax(x, 2); }, {"softmax"}));
  EXPECT_TRUE(testing::throws_with([&] { log_softmax(zeros({}, GetParam()), 0); }, {"log_softmax"}));
  EXPECT_TRUE(testing::throws_with([&] { elu(zeros({2}, TensorOptions(DType::int64).device(GetParam()))); }, {"elu", "int64"}));
}

INSTANTIATE_TEST_SUITE_P(Devices, Activation, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
