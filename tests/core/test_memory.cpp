// Out of memory: an allocation past the device's cap, or one the device
// cannot satisfy, is an Error naming the op (forward or backward), the shape,
// the dtype and the bytes; nothing it had allocated stays allocated, and
// the process goes on once memory is available again.
#include <convkit/core/memory.h>

#include "data/memory_limit.h"
#include "support/support.h"

namespace convkit {
namespace {

class MemoryLimit : public ::testing::TestWithParam<Device> {
 protected:
  void TearDown() override { set_memory_limit(GetParam().type, 0); }
};

::testing::AssertionResult fails_with(const std::function<void()>& body,
                                      const std::vector<std::string>& parts) {
  try {
    body();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& part : parts)
      if (what.find(part) == std::string::npos)
        return ::testing::AssertionFailure() << "'" << what << "' lacks '" << part << "'";
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "nothing was thrown";
}

TEST_P(MemoryLimit, ForwardOpNamesTheShapeAndBytesAndNothingLeaks) {
  const Device device = GetParam();
  const TensorOptions on(TensorOptions().device(device));
  const Tensor x = randn({8, 3, 28, 28}, on), w = randn({32, 3, 3, 3}, on);
  const std::size_t before = memory_allocated(device.type);
  set_memory_limit(device.type, before + 4096);
  EXPECT_TRUE(fails_with([&] { conv2d(x, w, Tensor(), Conv2dParams().padding(1)); },
                         {"conv2d: out of memory on " + device.str() + " allocating",
                          "[8, 32, 28, 28] float32 (802816 bytes;", "limit"}));
  EXPECT_EQ(memory_allocated(device.type), before);
  set_memory_limit(device.type, 0);  // memory again: the same call works
  EXPECT_EQ(conv2d(x, w, Tensor(), Conv2dParams().padding(1)).shape(), (Shape{8, 32, 28, 28}));
}

TEST_P(MemoryLimit, BackwardNamesTheNode) {
  const Device device = GetParam();
  const TensorOptions on(TensorOptions().device(device));
  const Tensor x = randn({8, 3, 28, 28}, on);
  const Tensor w = randn({32, 3, 3, 3}, on).requires_grad_();
  const Tensor loss = sum(conv2d(x, w, Tensor(), Conv2dParams().padding(1)));
  const std::size_t before = memory_allocated(device.type);
  set_memory_limit(device.type, before + 64);
  EXPECT_TRUE(fails_with([&] { loss.backward(); },
                         {"Backward: out of memory on " + device.str(), "[8, 32, 28, 28] float32"}));
  EXPECT_EQ(memory_allocated(device.type), before);
}

TEST_P(MemoryLimit, ExactFitSucceedsAndCountsReturnOnFree) {
  const Device device = GetParam();
  const std::size_t before = memory_allocated(device.type);
  set_memory_limit(device.type, before + 4000);
  {
    const Tensor t = empty({1000}, TensorOptions().device(device));  // exactly 4000 bytes
    EXPECT_EQ(memory_allocated(device.type), before + 4000);
    EXPECT_TRUE(fails_with([&] { empty({1}, TensorOptions().device(device)); },
                           {"empty: out of memory", "[1] float32 (4 bytes; "}));
  }
  EXPECT_EQ(memory_allocated(device.type), before);
  EXPECT_EQ(empty({1000}, TensorOptions().device(device)).numel(), 1000);
}

INSTANTIATE_TEST_SUITE_P(Devices, MemoryLimit, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

// The system's own refusal, under an address-space limit in a child: the
// same message, and the child allocates normally afterwards.
TEST(OutOfMemoryDeathTest, TheSystemRefusingIsTheSameError) {
  if (!testing::kAddressSpaceLimitWorks) GTEST_SKIP() << "sanitizers reserve too much address space";
  EXPECT_EXIT(testing::exit_after_body_under_memory_limit(
                  std::size_t{256} << 20,
                  [] {
                    try {
                      Tensor big = empty({std::int64_t{1} << 30});  // 4 GiB
                    } catch (const Error&) {
                      const Tensor small = ones({1 << 20});  // and the process goes on
                      if (small.sum().item() != double(1 << 20)) std::_Exit(7);
                      throw;
                    }
                  },
                  "empty: out of memory on cpu allocating [1073741824] float32 (4294967296 bytes"),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace convkit
