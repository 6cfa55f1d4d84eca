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
