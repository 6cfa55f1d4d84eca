#include "support/support.h"

namespace convkit {
namespace {

TEST(Shape, NumelStridesAndText) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(contiguous_strides(s), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(s.str(), "[2, 3, 4]");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(s.at(-1), 4);
}

// Issue 22: a shape read from a file must not overflow numel, strides or
// byte sizes, even when one dimension is 0 and so it holds no elements.
TEST(Shape, NumelRejectsProductsPast2To62EvenWithAZeroDimension) {
  const std::int64_t big = std::int64_t{1} << 56;
  EXPECT_EQ((Shape{0, 3}).numel(), 0);
  EXPECT_EQ((Shape{std::int64_t{1} << 31, std::int64_t{1} << 31}).numel(), std::int64_t{1} << 62);
  for (const Shape& s : {Shape{0, big, big}, Shape{big, big}, Shape{3, 1, 10000000003, 10000000003},
                         Shape{std::int64_t{1} << 62, 2}}) {
    try {
      s.numel();
      FAIL() << "no error for " << s;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(s.str()), std::string::npos) << e.what();
    }
    EXPECT_THROW(contiguous_strides(s), Error) << s;
  }
}

// 4-byte floats: 2^62 elements need 2^64 bytes, which wrapped to 0 and left
// a null buffer that fill() then wrote through; 2^62 + 1 wrapped to 4 bytes.
TEST(Shape, EmptyRejectsByteSizesThatWouldWrap) {
  const std::int64_t quarter = std::int64_t{1} << 61;
  for (const Shape& s : {Shape{std::int64_t{1} << 62}, Shape{(std::int64_t{1} << 62) + 1},
                         Shape{std::int64_t{1} << 31, std::int64_t{1} << 31}, Shape{quarter}}) {
    EXPECT_THROW(Tensor::empty(s, DType::float32), Error) << s;
  }
  EXPECT_THROW(Tensor::empty(Shape{0, std::int64_t{1} << 56, std::int64_t{1} << 56}), Error);
  EXPECT_EQ(Tensor::empty(Shape{0, 1 << 20, 1 << 20}).numel(), 0);
}

TEST(Shape, BroadcastFollowsNumPy) {
  EXPECT_EQ(broadcast_shapes({3, 1, 5}, {4, 1}, "t"), (Shape{3, 4, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2, 2}, "t"), (Shape{2, 2}));
  try {
    broadcast_shapes({3, 2}, {4, 2}, "add");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2] and [4, 2]"), std::string::npos) << e.what();
  }
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cpu"), kCPU);
  EXPECT_EQ(Device::parse("sim"), kSim);
  EXPECT_EQ(Device::parse("cuda:3"), Device(DeviceType::cuda, 3));
  EXPECT_EQ(Device("cuda").str(), "cuda:0");
  EXPECT_THROW(Device::parse("gpu"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_THROW(Device::parse("cuda:"), Error);
}

TEST(Backends, CpuIsAlwaysUsableAndEveryBackendIsListed) {
  const auto list = list_backends();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].name, "cpu");
  EXPECT_TRUE(list[0].usable);
  for (const auto& b : list) {
    if (!b.usable) { EXPECT_FALSE(b.detail.empty()) << b.name << " is unusable without a reason"; }
  }
}

}  // namespace
}  // namespace convkit
