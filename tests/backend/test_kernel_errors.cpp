// A kernel launch that fails names the kernel and its launch shape, and
// leaves the device usable for the next, unrelated op. The failing launch is
// real: the direct convolution's tiled forward puts the batch on grid.z,
// which no GPU (and so no sim launch) allows past 65535.
#include "convkit/backend/kernel_launch.h"
#include "support/support.h"

namespace convkit {
namespace {

// sim always (one launch is cheap), and cuda where usable.
std::vector<Device> gpu_devices() {
  std::vector<Device> out;
  for (const BackendInfo& info : list_backends()) {
    const Device d = Device::parse(info.name);
    if (info.usable && d.type != DeviceType::cpu) out.push_back(d);
  }
  return out;
}

class KernelErrors : public ::testing::TestWithParam<Device> {};

TEST_P(KernelErrors, NameTheKernelAndLaunchShapeAndDoNotPoisonLaterCalls) {
  const Device device = GetParam();
  const TensorOptions on(TensorOptions().device(device));
  const Tensor x = zeros({70000, 1, 2, 2}, on), w = ones({1, 1, 1, 1}, on);
  const std::string ns = device.type == DeviceType::sim ? "gpu_sim" : "gpu_cuda";
  try {
    conv2d(x, w, Tensor(), Conv2dParams().algo(ConvAlgo::direct));
    FAIL() << "a grid of 70000 blocks along z launched";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel convkit::" + ns + "::direct_forward_v"), std::string::npos) << what;
    EXPECT_NE(what.find(",70000), block ("), std::string::npos) << what;
    EXPECT_NE(what.find("B dynamic shared memory)"), std::string::npos) << what;
  }
  // The next op runs normally.
  EXPECT_EQ(sum(ones({1000}, on) * 2.0).item(), 2000.0);
}

INSTANTIATE_TEST_SUITE_P(Devices, KernelErrors, ::testing::ValuesIn(gpu_devices()),
                         testing::device_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KernelErrors);

TEST(KernelName, UnknownAddressesAreNamedByAddress) {
  int not_a_function = 0;
  EXPECT_EQ(detail::kernel_name(&not_a_function).rfind("kernel at 0x", 0), 0u);
  EXPECT_EQ(detail::last_launch(), "");  // this thread launched nothing
}

}  // namespace
}  // namespace convkit
