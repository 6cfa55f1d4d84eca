#pragma once
// Random numbers addressed by (seed, stream, epoch, item, k) rather than drawn
// from a shared generator: Philox4x32-10 with the item and epoch in the
// counter, so any thread computes any sample's draws, in any order, and gets
// the same numbers.
#include <cstdint>

#include "convkit/core/philox.h"

namespace convkit::data::detail {

// What the numbers are for; each purpose gets an independent key.
enum class Stream : std::uint64_t {
  shuffle = 0x73687566666c65ull,  // "shuffle"
  augment = 0x6175676d656e74ull,  // "augment"
};

// SplitMix64's finaliser: spreads a user seed (often 0, 1, 42) over 64 bits.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__extension__ typedef unsigned __int128 uint128;  // __extension__: fine under -Wpedantic

class KeyedRandom {
 public:
  KeyedRandom(std::uint64_t seed, Stream stream, std::uint64_t epoch, std::uint64_t item)
      : key_(mix64(seed ^ mix64(static_cast<std::uint64_t>(stream) + (epoch >> 32)))),
        item_(item),
        epoch_(static_cast<std::uint32_t>(epoch)) {}

  // The k-th 32-bit word of this (epoch, item)'s stream.
  std::uint32_t word(std::uint64_t k) const {
    const philox::U32x4 r = philox::philox4x32_10(
        philox::U32x4{{static_cast<std::uint32_t>(k / 4), static_cast<std::uint32_t>(item_),
                       static_cast<std::uint32_t>(item_ >> 32), epoch_}},
        key_ ^ (k / 4 >> 32));
    return r.v[k % 4];
  }
  // Uniform in [0, 1) from word k.
  double uniform(std::uint64_t k) const { return word(k) * (1.0 / 4294967296.0); }
  double uniform(std::uint64_t k, double lo, double hi) const { return lo + (hi - lo) * uniform(k); }
  // Uniform integer in [0, bound) from words 2k and 2k+1 (multiply-shift,
  // bias below 2^-32 for any bound a dataset can have).
  std::uint64_t below(std::uint64_t k, std::uint64_t bound) const {
    const std::uint64_t r = (std::uint64_t{word(2 * k)} << 32) | word(2 * k + 1);
    return static_cast<std::uint64_t>((static_cast<uint128>(r) * bound) >> 64);
  }

 private:
  std::uint64_t key_;
  std::uint64_t item_;
  std::uint32_t epoch_;
};

}  // namespace convkit::data::detail
