#pragma once
// Keeps freed memory blocks, keyed by rounded size, for the next allocation of
// that size. A training step frees and reallocates the same large buffers
// every iteration; without a cache each one costs a cudaMalloc (which
// synchronises the device) on cuda, and on the cpu an mmap plus a page fault
// per 4 KiB page, because glibc hands blocks that large straight back to the
// kernel (7-17% of a cifar10-cnn step on 2 cores, docs/performance-log.md).
//
// Blocks smaller than `min_cached` bytes are not kept (the raw allocator
// serves those well); at most `max_cached` bytes are kept, and a block freed
// beyond that goes back to the raw allocator. When the raw allocator fails,
// the cache is released and the allocation retried once. Thread-safe.
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace convkit {

class BlockCache {
 public:
  using RawAllocate = void* (*)(std::size_t nbytes);  // nullptr when out of memory
  using RawFree = void (*)(void* ptr);

  BlockCache(RawAllocate raw_allocate, RawFree raw_free, std::size_t min_cached, std::size_t max_cached)
      : raw_allocate_(raw_allocate), raw_free_(raw_free), min_cached_(min_cached), max_cached_(max_cached) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // The size actually allocated for a request of n bytes: 512-byte steps
  // below 1 MiB, 2 MiB steps above, so that requests which differ a little
  // (a last, smaller batch) share blocks at a bounded cost in slack.
  static std::size_t rounded(std::size_t n) {
    constexpr std::size_t kSmall = 512, kLarge = std::size_t{2} << 20;
    if (n > static_cast<std::size_t>(-1) - kLarge) return n;  // would wrap; no allocator can serve it anyway
    return n < (std::size_t{1} << 20) ? (n + kSmall - 1) / kSmall * kSmall : (n + kLarge - 1) / kLarge * kLarge;
  }

  // A block of at least nbytes (rounded(nbytes) when it may be cached), or
  // nullptr when the raw allocator fails even after the cache has been
  // released (for any size: the cached blocks may be what a small request lacks).
  void* allocate(std::size_t nbytes) {
    const std::size_t size = rounded(nbytes);
    const bool cacheable = size >= min_cached_;
    if (cacheable) {
      std::lock_guard lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
        return p;
      }
    }
    const std::size_t raw_size = cacheable ? size : nbytes;
    void* p = raw_allocate_(raw_size);
    if (p == nullptr) {
      release_cached();
      p = raw_allocate_(raw_size);
    }
    return p;
  }

  // nbytes: the size that was asked of allocate().
  void free(void* p, std::size_t nbytes) {
    const std::size_t size = rounded(nbytes);
    if (size >= min_cached_) {
      std::lock_guard lock(mutex_);
      if (cached_bytes_ + size <= max_cached_) {
        free_[size].push_back(p);
        cached_bytes_ += size;
        return;
      }
    }
    raw_free_(p);
  }

  // Returns every cached block to the raw allocator.
  void release_cached() {
    std::lock_guard lock(mutex_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) raw_free_(p);
    free_.clear();
    cached_bytes_ = 0;
  }

  std::size_t cached_bytes() const {
    std::lock_guard lock(mutex_);
    return cached_bytes_;
  }

 private:
  RawAllocate raw_allocate_;
  RawFree raw_free_;
  std::size_t min_cached_, max_cached_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_bytes_ = 0;
};

}  // namespace convkit
