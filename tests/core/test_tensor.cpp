#include <cstdint>

#include "support/support.h"

namespace convkit {
namespace {

using testing::test_devices;

std::vector<double> iota_values(std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return v;
}

class TensorOnDevice : public ::testing::TestWithParam<Device> {};

TEST_P(TensorOnDevice, FactoriesFillAsAsked) {
  const Device dev = GetParam();
  EXPECT_EQ(zeros({2, 3}, dev).to_vector<double>(), std::vector<double>(6, 0.0));
  EXPECT_EQ(ones({4}, dev).to_vector<double>(), std::vector<double>(4, 1.0));
  EXPECT_EQ(full({2}, 2.5, TensorOptions().device(dev).dtype(DType::float64)).to_vector<double>(),
            (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(arange(1, 2, 0.25, dev).to_vector<double>(), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(5, TensorOptions().dtype(DType::int64).device(dev)).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(empty({0, 3}, dev).numel(), 0);
  EXPECT_THROW(empty({-1}, dev), Error);
  EXPECT_THROW(from_vector(std::vector<float>{1, 2, 3}, {2, 2}, dev), Error);
}

TEST_P(TensorOnDevice, ViewsShareStorageAndIndexCorrectly) {
  const Device dev = GetParam();
  const Tensor x = from_vector(iota_values(24), {2, 3, 4}, dev);
  // permute: y[i,j,k] = x[k,i,j] -> element (a,b,c) of y is x[c][a][b]
  const Tensor y = x.permute({2, 0, 1});
  EXPECT_EQ(y.shape(), (Shape{4, 2, 3}));
  EXPECT_FALSE(y.is_contiguous());
  const auto yv = y.contiguous().to_vector<double>();
  for (std::int64_t a = 0; a < 4; ++a)
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t c = 0; c < 3; ++c)
        EXPECT_EQ(yv[static_cast<std::size_t>((a * 2 + b) * 3 + c)], static_cast<double>(b * 12 + c * 4 + a));

  EXPECT_EQ(x.slice(2, 1, 4, 2).contiguous().to_vector<double>(),
            (std::vector<double>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
  EXPECT_EQ(x.narrow(1, 1, 1).reshape({-1}).to_vector<double>(),
            (std::vector<double>{4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_EQ(x.select(0, -1).select(0, 2).to_vector<double>(), (std::vector<double>{20, 21, 22, 23}));
  EXPECT_EQ(x.transpose(0, 2).transpose(0, 2).to_vector<double>(), iota_values(24));
  EXPECT_EQ(x.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(0).squeeze(0).shape(), x.shape());
  EXPECT_EQ(from_vector(std::vector<float>{1, 2}, {2, 1}, dev).expand({2, 3}).to_vector<double>(),
            (std::vector<double>{1, 1, 1, 2, 2, 2}));
  // A view writes through to its base.
  Tensor base = zeros({3, 3}, dev);
  base.select(1, 1).fill_(7);
  EXPECT_EQ(base.to_vector<double>(), (std::vector<double>{0, 7, 0, 0, 7, 0, 0, 7, 0}));
  // reshape of a non-viewable layout copies; view refuses with a clear error.
  const Tensor t = x.transpose(1, 2);
  EXPECT_EQ(t.reshape({2, 12}).shape(), (Shape{2, 12}));
  EXPECT_THROW(t.view({2, 12}), Error);
  EXPECT_THROW(x.reshape({5, -1}), Error);
  EXPECT_THROW(x.permute({0, 0, 1}), Error);
  EXPECT_THROW(x.narrow(2, 3, 2), Error);
  EXPECT_THROW(x.expand({3, 3, 4}), Error);
}

TEST_P(TensorOnDevice, CopiesAcrossDevicesAndDtypes) {
  const Device dev = GetParam();
  const Tensor x = from_vector(std::vector<double>{1.5, -2.25, 3}, {3}, TensorOptions().dtype(DType::float64));
  const Tensor on = x.to(dev).to(DType::float32);
  EXPECT_EQ(on.device(), dev);
  EXPECT_EQ(on.dtype(), DType::float32);
  EXPECT_EQ(on.to(kCPU).to_vector<double>(), (std::vector<double>{1.5, -2.25, 3}));
  EXPECT_EQ(on.to(DType::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, -2, 3}));
  Tensor c = on.clone();
  c.fill_(0);
  EXPECT_EQ(on.to_vector<double>()[0], 1.5);  // clone owns its memory
  EXPECT_DOUBLE_EQ(on.select(0, 1).item(), -2.25);
  EXPECT_THROW(on.item(), Error);
  EXPECT_THROW(on.data<double>(), Error);
}

TEST_P(TensorOnDevice, IntegerFactoriesMakeInt64UnlessToldOtherwise) {
  const Device dev = GetParam();
  const std::vector<std::int64_t> labels{3, 0, 7};
  EXPECT_EQ(from_vector(labels, {3}).dtype(), DType::int64);
  EXPECT_EQ(from_vector(labels, {3}, dev).dtype(), DType::int64);  // a device alone keeps int64
  EXPECT_EQ(from_vector(labels, {3}, TensorOptions().dtype(DType::float32).device(dev)).dtype(), DType::float32);
  EXPECT_EQ(from_vector(labels, {3}, dev).to_vector<std::int64_t>(), labels);
  EXPECT_EQ(from_vector(std::vector<double>{1.5}, {1}, dev).dtype(), DType::float32);

  manual_seed(11);
  const Tensor a = randint(-3, 4, {4000}, dev);
  EXPECT_EQ(a.dtype(), DType::int64);
  EXPECT_EQ(a.device(), dev);
  const std::vector<std::int64_t> v = a.to_vector<std::int64_t>();
  std::vector<int> seen(7, 0);
  for (std::int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ++seen[static_cast<std::size_t>(x + 3)];
  }
  for (int count : seen) EXPECT_GT(count, 4000 / 7 / 2);  // every value drawn, roughly evenly
  manual_seed(11);
  EXPECT_EQ(randint(-3, 4, {4000}).to_vector<std::int64_t>(), v);  // the same stream on every device
  EXPECT_EQ(randint(0, 5, {2}, TensorOptions().dtype(DType::float64).device(dev)).dtype(), DType::float64);
  EXPECT_THROW(randint(2, 2, {1}, dev), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, TensorOnDevice, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

// cpu blocks of 2 MiB and more start on a 2 MiB boundary, so that the huge
// pages asked for them (cpu_backend.cpp) can back them from their first byte;
// smaller ones keep the 64-byte alignment the SIMD loops assume.
TEST(CpuAllocation, LargeTensorsStartOnA2MiBBoundaryAndSmallOnesOn64Bytes) {
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  for (std::int64_t floats : {std::int64_t{1} << 19, (std::int64_t{3} << 19) + 7, std::int64_t{1} << 22}) {
    const Tensor t = empty({floats});
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data<float>()) % kHugePage, 0u) << floats << " floats";
  }
  for (std::int64_t floats : {std::int64_t{1}, std::int64_t{1000}, (std::int64_t{1} << 19) - 1}) {
    const Tensor t = empty({floats});
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.data<float>()) % 64, 0u) << floats << " floats";
  }
}

TEST(TensorPrint, ReadsLikePyTorch) {
  EXPECT_EQ(from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}).str(), "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(from_vector(std::vector<float>{0.5f, -1.25f}, {2}).str(), "tensor([ 0.5000, -1.2500])");
  EXPECT_EQ(scalar_tensor(3, DType::float64).str(), "tensor(3., dtype=float64)");
  EXPECT_EQ(ones({2}, TensorOptions().requires_grad()).str(), "tensor([1., 1.], requires_grad=True)");
  EXPECT_EQ(arange(3, DType::int64).str(), "tensor([0, 1, 2], dtype=int64)");
  const std::string big = arange(2000).str();
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_LT(big.size(), 200u);
  Tensor a = ones({1}, TensorOptions().requires_grad());
  EXPECT_NE((a * 2.0).str().find("grad_fn=<MulScalarBackward>"), std::string::npos);
  EXPECT_EQ(from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}).str(),
            "tensor([[[1., 2.],\n         [3., 4.]],\n\n        [[5., 6.],\n         [7., 8.]]])");
}

TEST(TensorErrors, MismatchesNameShapesDevicesAndDtypes) {
  const Tensor a = ones({2, 3});
  try {
    (void)(a + ones({4, 3}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3] and [4, 3]"), std::string::npos) << e.what();
  }
  try {
    (void)(a + ones({2, 3}, DType::float64));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)(arange(3, DType::int64) + arange(3, DType::int64)), Error);
  EXPECT_THROW(Tensor().shape(), Error);
}

}  // namespace
}  // namespace convkit
