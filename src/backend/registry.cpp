// Which backend owns which device. The registry knows no backend by name:
// each registers itself (BackendRegistrar), the built-in ones at start-up and
// cuda when its plugin is opened on first use (plugin_loader.h).
#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "backend/plugin_loader.h"
#include "convkit/backend/backend.h"

namespace convkit {

namespace {

constexpr std::array<DeviceType, 3> kDeviceTypes{DeviceType::cpu, DeviceType::sim, DeviceType::cuda};

struct Registry {
  std::mutex mutex;
  std::array<BackendFactory, kDeviceTypes.size()> factories{};
  // devices() as of the backend's creation, written before the instance is
  // published: backend_for runs on every allocation and op, so once a backend
  // exists it costs one atomic load and no lock.
  std::array<std::vector<BackendInfo>, kDeviceTypes.size()> devices{};
  std::array<std::atomic<Backend*>, kDeviceTypes.size()> instances{};
};

Registry& registry() {
  static Registry r;
  return r;
}

std::size_t slot(DeviceType t) { return static_cast<std::size_t>(t); }

// Storage allocates through core's allocator table; every device type's entry
// is its backend, found (made, its plugin opened) on first use.
Allocator& backend_allocator(Device device) { return backend_for(device); }
[[maybe_unused]] const bool g_allocators_registered = [] {
  for (DeviceType t : kDeviceTypes) register_allocator(t, &backend_allocator);
  return true;
}();

bool has_factory(DeviceType t) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.factories[slot(t)] != nullptr;
}

// The backend for `t`, made on first use; nullptr with `why` set when none is
// registered. The plugin is opened outside the lock: its registrar takes it.
Backend* instance(DeviceType t, std::string* why) {
  if (Backend* made = registry().instances[slot(t)].load(std::memory_order_acquire)) return made;
  if (!has_factory(t) && backend_plugin_file(t)) {
    const std::string& reason = load_backend_plugin(t);
    if (!reason.empty()) {
      *why = reason;
      return nullptr;
    }
  }
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.factories[slot(t)]) {
    *why = backend_plugin_file(t)
               ? std::string("plugin ") + backend_plugin_file(t) + " was loaded but registered no backend"
               : "the " + Device(t).str() + " backend is not part of this build";
    return nullptr;
  }
  Backend* made = r.instances[slot(t)].load(std::memory_order_relaxed);
  if (!made) {
    made = r.factories[slot(t)]();
    r.devices[slot(t)] = made->devices();
    r.instances[slot(t)].store(made, std::memory_order_release);
  }
  return made;
}

}  // namespace

void register_backend(DeviceType type, BackendFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[slot(type)] = factory;
}

Backend& backend_for(Device device) {
  std::string why;
  Backend* b = instance(device.type, &why);
  CK_CHECK(b != nullptr, "device ", device, " is not available: ", why);
  if (device.type == DeviceType::cpu) return *b;  // one device, always usable
  const std::vector<BackendInfo>& devices = registry().devices[slot(device.type)];
  const std::string name = device.str();
  for (const BackendInfo& info : devices) {
    if (info.name != name) continue;
    CK_CHECK(info.usable, "device ", device, " is not usable: ", info.detail);
    return *b;
  }
  CK_CHECK(devices.size() != 1 || devices[0].usable, "device ", device, " is not usable: ",
           devices[0].detail);
  std::string known;
  for (const BackendInfo& info : devices) known += (known.empty() ? "" : ", ") + info.name;
  CK_FAIL("device ", device, " does not exist here (", Device(device.type).str(), " devices: ", known, ")");
}

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
  for (DeviceType t : kDeviceTypes) {
    std::string why;
    if (Backend* b = instance(t, &why)) {
      for (BackendInfo& info : b->devices()) out.push_back(std::move(info));
    } else {
      out.push_back({t == DeviceType::cuda ? "cuda" : Device(t).str(), false, why});
    }
  }
  return out;
}

}  // namespace convkit
