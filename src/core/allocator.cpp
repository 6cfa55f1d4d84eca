// The per-device-type allocator table. Storage::allocate reads it on every
// allocation, so an entry is one atomic load; registration happens at
// start-up (src/backend/registry.cpp) and may race with nothing but itself.
#include "convkit/core/allocator.h"

#include <array>
#include <atomic>

#include "convkit/core/error.h"

namespace convkit {

namespace {

constexpr std::size_t kDeviceTypes = 3;  // cpu, sim, cuda

// A function-local static: registrations run during static initialisation,
// in an order across files that C++ leaves open.
std::array<std::atomic<AllocatorSource>, kDeviceTypes>& sources() {
  static std::array<std::atomic<AllocatorSource>, kDeviceTypes> all{};
  return all;
}

}  // namespace

void register_allocator(DeviceType type, AllocatorSource source) {
  sources()[static_cast<std::size_t>(type)].store(source, std::memory_order_release);
}

Allocator& allocator_for(Device device) {
  const AllocatorSource source =
      sources()[static_cast<std::size_t>(device.type)].load(std::memory_order_acquire);
  CK_CHECK(source != nullptr, "device ", device,
           " has no allocator: nothing registered one for its type (is the backend layer linked?)");
  return source(device);
}

}  // namespace convkit
