// t[i] and t.index({...}) as libtorch spells them: values, shapes, shared
// storage, errors and gradients.
#include <cstdint>

#include "support/support.h"

namespace convkit {
namespace {

using namespace convkit::indexing;
using testing::throws_with;

Tensor iota(const Shape& shape, Device dev = kCPU) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return from_vector(v, shape, TensorOptions().device(dev).dtype(DType::float64));
}

TEST(TensorIndexing, SubscriptSelectsAlongDimZero) {
  const Tensor x = iota({3, 4});
  EXPECT_EQ(x[1].shape(), (Shape{4}));
  EXPECT_EQ(x[1].to_vector<double>(), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(x[-1].to_vector<double>(), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(x[2][3].item(), 11.0);
  EXPECT_EQ(x[0][-4].item(), 0.0);
}

TEST(TensorIndexing, OutOfRangeNamesTheDimAndItsSize) {
  const Tensor x = iota({3, 4});
  EXPECT_TRUE(throws_with([&] { (void)x[3]; }, {"index 3", "dim 0", "size 3"}));
  EXPECT_TRUE(throws_with([&] { (void)x[-4]; }, {"index -4", "dim 0", "size 3"}));
  EXPECT_TRUE(throws_with([&] { (void)x.index({Slice(), 4}); }, {"index 4", "dim 1", "size 4"}));
  EXPECT_TRUE(throws_with([&] { (void)x.index({Ellipsis, -5}); }, {"dim 1", "size 4"}));
  EXPECT_TRUE(throws_with([&] { (void)x.index({0, 0, 0}); }, {"3 indices", "[3, 4]"}));
  EXPECT_TRUE(throws_with([&] { (void)x.index({Ellipsis, Ellipsis}); }, {"Ellipsis"}));
  EXPECT_TRUE(throws_with([&] { (void)x.index({Slice(0, 2, 0)}); }, {"step", "positive"}));
  EXPECT_TRUE(throws_with([&] { (void)x[0][0][0]; }, {"0-d"}));
}

TEST(TensorIndexing, SlicesFollowPython) {
  const Tensor x = iota({4, 5});
  EXPECT_EQ(x.index({Slice(), 0}).to_vector<double>(), (std::vector<double>{0, 5, 10, 15}));
  EXPECT_EQ(x.index({Slice(1, None, 2), -1}).to_vector<double>(), (std::vector<double>{9, 19}));
  EXPECT_EQ(x.index({2, Slice(None, 2)}).to_vector<double>(), (std::vector<double>{10, 11}));
  EXPECT_EQ(x.index({-1, Slice(-2)}).to_vector<double>(), (std::vector<double>{18, 19}));
  // Bounds beyond the dim clamp, as Python's do.
  EXPECT_EQ(x.index({0, Slice(3, 100)}).to_vector<double>(), (std::vector<double>{3, 4}));
  EXPECT_EQ(x.index({0, Slice(7, 9)}).numel(), 0);
  EXPECT_EQ(x.index({Slice(), Slice(None, None, 2)}).shape(), (Shape{4, 3}));
  EXPECT_EQ(x.index({}).shape(), x.shape());
}

TEST(TensorIndexing, NoneAddsADimAndEllipsisSkipsTheRest) {
  const Tensor x = iota({2, 3, 4});
  EXPECT_EQ(x.index({None}).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.index({Slice(), None, 1}).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(x.index({Ellipsis, 1}).shape(), (Shape{2, 3}));
  EXPECT_EQ(x.index({Ellipsis, 1}).to_vector<double>(),
            (std::vector<double>{1, 5, 9, 13, 17, 21}));
  EXPECT_EQ(x.index({1, Ellipsis, 2}).to_vector<double>(), (std::vector<double>{14, 18, 22}));
  EXPECT_EQ(x.index({Ellipsis, None}).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.index({1, Ellipsis}).shape(), (Shape{3, 4}));
}

TEST(TensorIndexing, ResultsAreViewsOfTheSameStorage) {
  for (const Device dev : testing::test_devices()) {
    Tensor x = zeros({3, 4}, TensorOptions().device(dev));
    x[1].fill_(2);
    x.index({Slice(), 3}).fill_(5);
    EXPECT_TRUE(x[0].storage() == x.storage()) << dev.str();
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 0, 0, 5, 2, 2, 2, 5, 0, 0, 0, 5})) << dev.str();
  }
}

TEST(TensorIndexing, GradientsFlowBackThroughTheView) {
  const Tensor x = iota({3, 4, 5}).requires_grad_();
  EXPECT_TRUE(testing::grad_ok([](const std::vector<Tensor>& in) { return in[0][1] * in[0][-1]; }, {x}));
  EXPECT_TRUE(testing::grad_ok(
      [](const std::vector<Tensor>& in) { return in[0].index({Slice(None, None, 2), None, Ellipsis, -2}); },
      {x}));
  // Only the selected elements receive gradient.
  Tensor y = iota({2, 3}).requires_grad_();
  y.index({Slice(), 1}).sum().backward();
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 1, 0}));
}

}  // namespace
}  // namespace convkit
