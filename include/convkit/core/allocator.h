#pragma once
// Where a Storage gets its memory. Core knows no backend (the build forbids
// it: docs/architecture.md), so, as in libtorch's c10, the layer that does
// registers an allocator per device type and Storage asks for it by device.
#include <cstddef>

#include "convkit/core/device.h"

namespace convkit {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Throws Error when the device has no memory to give.
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) = 0;
};

// Finds the allocator of one device of the registered type, or throws Error
// saying why that device cannot be used. A function rather than an instance:
// the backend behind it may be made (or its plugin opened) on first use.
using AllocatorSource = Allocator& (*)(Device device);
void register_allocator(DeviceType type, AllocatorSource source);

// The allocator of `device`; throws Error naming the device when nothing has
// registered one for its type.
Allocator& allocator_for(Device device);

}  // namespace convkit
