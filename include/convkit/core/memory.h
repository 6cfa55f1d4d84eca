#pragma once
// How much memory tensors hold on each kind of device, and an optional cap
// on it (as torch.cuda.set_per_process_memory_fraction caps a process).
// An allocation past the cap, or one the device cannot satisfy, throws
// Error naming the op, the shape and dtype and the bytes requested:
//   conv2d: out of memory on cpu allocating [64, 32, 28, 28] float32
//   (6422528 bytes; 1048576 bytes in use, limit 2000000)
// Nothing is allocated then, so the process can free tensors and go on.
#include <cstddef>

#include "convkit/core/device.h"

namespace convkit {

// Bytes of every live Storage of `type` (all devices of that type together).
std::size_t memory_allocated(DeviceType type);
// Caps memory_allocated(type); 0 removes the cap. A cap below what is in use
// already refuses every new allocation until enough is freed.
void set_memory_limit(DeviceType type, std::size_t bytes);
std::size_t memory_limit(DeviceType type);

}  // namespace convkit
