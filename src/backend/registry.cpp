// Which backend owns which device. The cpu backend is always present; sim and
// cuda register factories (see register_backend) and report why they are not
// usable when they cannot run.
#include <array>
#include <string>
#include <mutex>

#include "convkit/backend/backend.h"
#include "cpu/cpu_backend.h"
#include "gpu/cuda_probe.h"
#include "gpu/gpu_backend_factories.h"

namespace convkit {

namespace {

struct Registry {
  std::mutex mutex;
  std::array<BackendFactory, 3> factories{};
  std::array<Backend*, 3> instances{};
};

Registry& registry() {
  static Registry r;
  return r;
}

std::size_t slot(DeviceType t) { return static_cast<std::size_t>(t); }

const char* missing_reason(DeviceType t) {
  switch (t) {
    case DeviceType::sim: return "the sim backend is not part of this build";
    case DeviceType::cuda: {
      static const std::string reason = gpu::cuda_probe().usable
          ? "a CUDA device is present but this build has no cuda backend yet"
          : gpu::cuda_probe().detail;
      return reason.c_str();
    }
    case DeviceType::cpu: break;
  }
  return "";
}

Backend* instance(DeviceType t) {
  if (t == DeviceType::cpu) return &cpu::cpu_backend();
  if (t == DeviceType::sim) return gpu_sim::make_backend();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.instances[slot(t)] && r.factories[slot(t)]) r.instances[slot(t)] = r.factories[slot(t)]();
  return r.instances[slot(t)];
}

}  // namespace

void register_backend(DeviceType type, BackendFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[slot(type)] = factory;
}

Backend& backend_for(Device device) {
  Backend* b = instance(device.type);
  CK_CHECK(b != nullptr, "device ", device, " is not available: ", missing_reason(device.type));
  if (device.type != DeviceType::cpu) {
    const BackendInfo info = b->info();
    CK_CHECK(info.usable, "device ", device, " is not usable: ", info.detail);
  }
  return *b;
}

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
  for (DeviceType t : {DeviceType::cpu, DeviceType::sim, DeviceType::cuda}) {
    if (Backend* b = instance(t)) {
      out.push_back(b->info());
    } else {
      out.push_back({Device(t).str(), false, missing_reason(t)});
    }
  }
  return out;
}

}  // namespace convkit
