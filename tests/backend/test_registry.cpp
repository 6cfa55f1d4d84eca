// The registry as `convkit devices` and the test suites see it. The GPU count
// comes from the NVIDIA driver's own files and device nodes, not from convkit, so a build that
// loses its cuda backend on a GPU machine fails here instead of skipping.
#include <algorithm>
#include <filesystem>
#include <string>

#include "support/support.h"

namespace convkit {
namespace {

// GPUs the kernel driver knows, whatever convkit thinks: its /proc entries,
// or, where a sandbox hides /proc/driver (gVisor), its /dev/nvidiaN nodes.
int driver_gpu_count() {
  namespace fs = std::filesystem;
  std::error_code ec;
  int procs = 0, nodes = 0;
  for (const auto& entry : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)entry;
    ++procs;
  }
  for (const auto& entry : fs::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.starts_with("nvidia") &&
        name.find_first_not_of("0123456789", 6) == std::string::npos)
      ++nodes;
  }
  return std::max(procs, nodes);
}

std::vector<BackendInfo> of_type(DeviceType type) {
  std::vector<BackendInfo> out;
  for (const BackendInfo& info : list_backends())
    if (Device::parse(info.name).type == type) out.push_back(info);
  return out;
}

TEST(Registry, ListsCpuThenSimThenCuda) {
  const std::vector<BackendInfo> all = list_backends();
  ASSERT_GE(all.size(), 3u);
  EXPECT_EQ(all[0].name, "cpu");
  EXPECT_TRUE(all[0].usable);
  EXPECT_EQ(all[1].name, "sim");
  EXPECT_TRUE(all[1].usable);
  for (std::size_t i = 2; i < all.size(); ++i) {
    EXPECT_EQ(Device::parse(all[i].name).type, DeviceType::cuda) << all[i].name;
    EXPECT_FALSE(all[i].detail.empty()) << all[i].name;
  }
}

TEST(Registry, EveryDriverGpuIsListedAndTheFirstIsUsable) {
  const int gpus = driver_gpu_count();
  const std::vector<BackendInfo> cuda = of_type(DeviceType::cuda);
  if (gpus == 0 || !CONVKIT_TEST_CUDA_PLUGIN_BUILT) {
    // No GPU, or no plugin: one entry that says why, and ops refuse the device.
    ASSERT_EQ(cuda.size(), 1u);
    EXPECT_EQ(cuda[0].name, "cuda");
    EXPECT_FALSE(cuda[0].usable);
    if (!CONVKIT_TEST_CUDA_PLUGIN_BUILT) {
      EXPECT_NE(cuda[0].detail.find("no plugin"), std::string::npos) << cuda[0].detail;
    }
    try {
      backend_for(Device("cuda:0"));
      ADD_FAILURE() << "backend_for(cuda:0) succeeded without a usable GPU";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cuda[0].detail), std::string::npos) << e.what();
    }
    return;
  }
  ASSERT_EQ(cuda.size(), static_cast<std::size_t>(gpus));
  for (int i = 0; i < gpus; ++i) {
    EXPECT_EQ(cuda[static_cast<std::size_t>(i)].name, "cuda:" + std::to_string(i));
    EXPECT_NE(cuda[static_cast<std::size_t>(i)].detail.find(" SMs, "), std::string::npos);
    EXPECT_NE(cuda[static_cast<std::size_t>(i)].detail.find(", driver "), std::string::npos);
  }
  EXPECT_TRUE(cuda[0].usable) << cuda[0].detail;
  EXPECT_EQ(&backend_for(Device("cuda:0")), &backend_for(Device("cuda")));
}

TEST(Registry, UnknownDeviceIndexIsRefusedByName) {
  try {
    backend_for(Device("cuda:63"));
    ADD_FAILURE() << "backend_for(cuda:63) succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:63"), std::string::npos) << e.what();
  }
}

TEST(Registry, BuiltInBackendsAreNotPlugins) {
  EXPECT_EQ(&backend_for(kCPU), &backend_for(kCPU));
  EXPECT_EQ(backend_for(kCPU).type(), DeviceType::cpu);
  EXPECT_EQ(backend_for(kSim).type(), DeviceType::sim);
}

// The ops each real backend runs on cpu instead (Backend::fallbacks). Today
// none: a backend that gains a fallback, or loses one, changes this table.
TEST(Registry, FallbacksOfEveryUsableBackendAreListed) {
  const std::vector<std::pair<DeviceType, std::vector<BackendOp>>> expected = {
      {DeviceType::cpu, {}}, {DeviceType::sim, {}}, {DeviceType::cuda, {}}};
  int checked = 0;
  for (const BackendInfo& info : list_backends()) {
    if (!info.usable) continue;
    const Device device = Device::parse(info.name);
    for (const auto& [type, ops] : expected) {
      if (type != device.type) continue;
      EXPECT_EQ(backend_for(device).fallbacks(), ops) << info.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 2);  // cpu and sim at least
}

}  // namespace
}  // namespace convkit
