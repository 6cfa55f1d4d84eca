// What the op table (op_table_layers.cpp) cannot say about reductions: the
// refusals of bad dims and empty inputs.
#include "support/support.h"

namespace convkit {
namespace {

class Reduce : public ::testing::TestWithParam<Device> {};

TEST_P(Reduce, BadDimsAreClearErrors) {
  const Tensor x = zeros({2, 3}, GetParam());
  EXPECT_THROW(sum(x, {2}), Error);
  EXPECT_THROW(sum(x, {1, -1}), Error);
  EXPECT_THROW(var(zeros({1}, GetParam())), Error);
  EXPECT_THROW(max(zeros({0}, GetParam())), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, Reduce, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
