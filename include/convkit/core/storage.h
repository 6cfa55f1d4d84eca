#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "convkit/core/allocator.h"
#include "convkit/core/device.h"
#include "convkit/core/dtype.h"
#include "convkit/core/shape.h"

namespace convkit {

// A block of device memory shared by a tensor and all its views. The version
// counter lives here because every view of the memory must see an in-place
// write: autograd compares it with the version it saved.
class Storage {
 public:
  // Allocates through the device's Allocator (convkit/core/allocator.h; the
  // backend's, 64-byte aligned on the host),
  // counted against the device's memory limit (convkit/core/memory.h).
  // `shape` and `dtype`, when given, describe the request in an
  // out-of-memory error; the bytes are always given.
  static std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device,
                                           const Shape* shape = nullptr,
                                           DType dtype = DType::float32);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Storage(void* data, std::size_t nbytes, Device device, Allocator* allocator)
      : data_(data), nbytes_(nbytes), device_(device), allocator_(allocator) {}
  void* data_;
  std::size_t nbytes_;
  Device device_;
  Allocator* allocator_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace convkit
