#pragma once
// Philox streams on the cpu, kPhiloxLanes blocks at a time. philox.h computes
// one block at a time, a chain of dependent multiplies, and its per-element
// functions compute an element's whole block again for each of its four
// words. Here kPhiloxLanes blocks go through the same ten rounds side by
// side, in structure-of-arrays form, so the rounds vectorise, and every word
// of every block is used once. The words are those of philox::block_words,
// bit for bit (tests/core/test_philox.cpp, tests/layers/test_dropout.cpp).
#include <algorithm>
#include <cstdint>

namespace convkit::cpu {

constexpr std::int64_t kPhiloxLanes = 16;

// words[4 * j + w] = word w of Philox block first_block + j: the stream's
// words in element order.
inline void philox_lanes(std::uint64_t seed, std::uint64_t first_block, std::uint32_t (&words)[4 * kPhiloxLanes]) {
  std::uint32_t c0[kPhiloxLanes], c1[kPhiloxLanes], c2[kPhiloxLanes], c3[kPhiloxLanes];
  for (std::int64_t j = 0; j < kPhiloxLanes; ++j) {
    const std::uint64_t block = first_block + static_cast<std::uint64_t>(j);
    c0[j] = static_cast<std::uint32_t>(block);
    c1[j] = static_cast<std::uint32_t>(block >> 32);
    c2[j] = 0;
    c3[j] = 0;
  }
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    // Without the pragma GCC 12 leaves the 64-bit products scalar (60 cycles
    // per block); with it, 2.4x faster, bit for bit the same.
#pragma omp simd
    for (std::int64_t j = 0; j < kPhiloxLanes; ++j) {
      const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0[j];
      const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2[j];
      const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
      const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
      c1[j] = static_cast<std::uint32_t>(p1);
      c3[j] = static_cast<std::uint32_t>(p0);
      c0[j] = n0;
      c2[j] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (std::int64_t j = 0; j < kPhiloxLanes; ++j) {
    words[4 * j + 0] = c0[j];
    words[4 * j + 1] = c1[j];
    words[4 * j + 2] = c2[j];
    words[4 * j + 3] = c3[j];
  }
}

// Walks elements [0, n) of the stream that starts at `offset` (element i is
// word (offset + i) % 4 of block (offset + i) / 4) in groups of kPhiloxLanes
// blocks, in parallel when n > parallel_min. For each group it calls
// f(words, first, begin, end): words[k] is the word of stream position
// first + k (first is a multiple of 4, so a block's words are
// words[k - k % 4 .. k - k % 4 + 3]), and the group covers stream positions
// [begin, end), which are the tensor's elements begin - offset .. end - offset - 1.
template <typename F>
void for_each_philox_group(std::uint64_t seed, std::uint64_t offset, std::uint64_t n, std::uint64_t parallel_min,
                           F&& f) {
  if (n == 0) return;
  const std::uint64_t first_block = offset / 4, end_block = (offset + n + 3) / 4;
  const auto groups = static_cast<std::int64_t>((end_block - first_block + kPhiloxLanes - 1) / kPhiloxLanes);
#pragma omp parallel for schedule(static) if (n > parallel_min)
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::uint64_t block0 = first_block + static_cast<std::uint64_t>(g * kPhiloxLanes);
    std::uint32_t words[4 * kPhiloxLanes];
    philox_lanes(seed, block0, words);
    const std::uint64_t first = block0 * 4;
    f(static_cast<const std::uint32_t*>(words), first, std::max(offset, first), std::min(offset + n, first + 4 * kPhiloxLanes));
  }
}

}  // namespace convkit::cpu
