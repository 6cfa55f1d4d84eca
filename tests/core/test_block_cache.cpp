// The block cache behind the cpu and cuda allocators, driven by a counting
// fake of the raw allocator so that every reuse, release and retry is visible.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "core/block_cache.h"

namespace convkit {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The fake raw allocator: real memory, counted, with an optional limit on
// the bytes outstanding so that a failure can be provoked.
struct Raw {
  static inline int allocations = 0, frees = 0;
  static inline std::size_t outstanding = 0, limit = static_cast<std::size_t>(-1);
  static inline std::vector<std::pair<void*, std::size_t>> live;
  static void reset(std::size_t new_limit = static_cast<std::size_t>(-1)) {
    allocations = frees = 0;
    outstanding = 0;
    limit = new_limit;
    live.clear();
  }
  static void* allocate(std::size_t n) {
    if (outstanding + n > limit) return nullptr;
    void* p = std::malloc(n);
    ++allocations;
    outstanding += n;
    live.emplace_back(p, n);
    return p;
  }
  static void free(void* p) {
    for (auto it = live.begin(); it != live.end(); ++it) {
      if (it->first == p) {
        outstanding -= it->second;
        live.erase(it);
        break;
      }
    }
    ++frees;
    std::free(p);
  }
};

TEST(BlockCache, RoundsSmallSizesTo512BytesAndLargeOnesTo2MiB) {
  EXPECT_EQ(BlockCache::rounded(1), 512u);
  EXPECT_EQ(BlockCache::rounded(512), 512u);
  EXPECT_EQ(BlockCache::rounded(513), 1024u);
  EXPECT_EQ(BlockCache::rounded(kMiB), 2 * kMiB);
  EXPECT_EQ(BlockCache::rounded(2 * kMiB + 1), 4 * kMiB);
  // A request too large to round is left as it is, not wrapped to a small size.
  const std::size_t huge = static_cast<std::size_t>(-1) - 5;
  EXPECT_EQ(BlockCache::rounded(huge), huge);
}

TEST(BlockCache, ReusesAFreedBlockOfTheSameRoundedSize) {
  Raw::reset();
  BlockCache cache(Raw::allocate, Raw::free, kMiB, 64 * kMiB);
  void* a = cache.allocate(3 * kMiB);
  ASSERT_NE(a, nullptr);
  cache.free(a, 3 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 4 * kMiB);
  void* b = cache.allocate(3 * kMiB + 12345);  // rounds to the same 4 MiB
  EXPECT_EQ(b, a);
  EXPECT_EQ(Raw::allocations, 1);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  void* c = cache.allocate(5 * kMiB);  // another size: a new block
  EXPECT_NE(c, a);
  EXPECT_EQ(Raw::allocations, 2);
  cache.free(b, 3 * kMiB);
  cache.free(c, 5 * kMiB);
  cache.release_cached();
  EXPECT_EQ(Raw::frees, 2);
  EXPECT_EQ(Raw::outstanding, 0u);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(BlockCache, BlocksBelowTheMinimumGoStraightThroughUnrounded) {
  Raw::reset();
  BlockCache cache(Raw::allocate, Raw::free, kMiB, 64 * kMiB);
  void* p = cache.allocate(100);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(Raw::live.size(), 1u);
  EXPECT_EQ(Raw::live[0].second, 100u);  // not rounded: the raw allocator sees the request
  cache.free(p, 100);
  EXPECT_EQ(Raw::frees, 1);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(BlockCache, KeepsNoMoreThanItsLimit) {
  Raw::reset();
  BlockCache cache(Raw::allocate, Raw::free, kMiB, 6 * kMiB);
  void* a = cache.allocate(4 * kMiB);
  void* b = cache.allocate(4 * kMiB);
  cache.free(a, 4 * kMiB);  // 4 MiB kept
  cache.free(b, 4 * kMiB);  // 8 MiB would pass the 6 MiB limit: freed
  EXPECT_EQ(cache.cached_bytes(), 4 * kMiB);
  EXPECT_EQ(Raw::frees, 1);
  cache.release_cached();
  EXPECT_EQ(Raw::outstanding, 0u);
}

TEST(BlockCache, ReleasesTheCacheAndRetriesWhenTheRawAllocatorFails) {
  Raw::reset(10 * kMiB);
  BlockCache cache(Raw::allocate, Raw::free, kMiB, 64 * kMiB);
  void* a = cache.allocate(8 * kMiB);
  cache.free(a, 8 * kMiB);                 // 8 MiB cached, still outstanding at the raw level
  void* b = cache.allocate(6 * kMiB);      // 8 + 6 > 10: fails, releases the 8, retries
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Raw::frees, 1);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.allocate(12 * kMiB), nullptr);  // more than the raw allocator has, even empty
  cache.free(b, 6 * kMiB);
  cache.release_cached();
  EXPECT_EQ(Raw::outstanding, 0u);
}

// A request too small to be cached may still need the memory the cache holds.
TEST(BlockCache, ASmallRequestAlsoGetsTheCachedMemoryBack) {
  Raw::reset(8 * kMiB + 50);
  BlockCache cache(Raw::allocate, Raw::free, kMiB, 64 * kMiB);
  void* a = cache.allocate(8 * kMiB);
  cache.free(a, 8 * kMiB);        // cached: the raw allocator has 50 bytes left
  void* small = cache.allocate(100);  // fails, releases the 8 MiB, retries
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  cache.free(small, 100);
  EXPECT_EQ(Raw::outstanding, 0u);
}

// Many threads allocating and freeing the same sizes: every block handed out
// is distinct while it is held, and nothing is lost.
TEST(BlockCache, ThreadsNeverShareABlock) {
  BlockCache cache([](std::size_t n) { return std::malloc(n); }, [](void* p) { std::free(p); }, kMiB, 256 * kMiB);
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const std::size_t n = (1 + (r + t) % 3) * kMiB;
        auto* p = static_cast<unsigned char*>(cache.allocate(n));
        if (p == nullptr) {
          ++failures[t];
          continue;
        }
        p[0] = static_cast<unsigned char>(t);
        p[n - 1] = static_cast<unsigned char>(t);
        std::this_thread::yield();
        if (p[0] != t || p[n - 1] != t) ++failures[t];  // another thread wrote into our block
        cache.free(p, n);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  cache.release_cached();
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

}  // namespace
}  // namespace convkit
