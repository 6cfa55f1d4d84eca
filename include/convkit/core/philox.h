#pragma once
// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
// Counter-based: element i of a random tensor depends only on (seed, offset, i),
// so the cpu, sim and cuda backends produce bit-identical streams (the normal
// ones with the one caveat at box_muller). This header
// is included by CUDA kernels too, hence the host/device qualifiers.
#include <cmath>
#include <cstdint>

#include "convkit/core/host_device.h"

namespace convkit::philox {

struct U32x4 { std::uint32_t v[4]; };

CK_HOST_DEVICE inline void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi,
                                   std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

// Ten rounds of Philox4x32 on counter `ctr` with the 64-bit key `key`.
CK_HOST_DEVICE inline U32x4 philox4x32_10(U32x4 ctr, std::uint64_t key) {
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, ctr.v[0], hi0, lo0);
    mulhilo(0xCD9E8D57u, ctr.v[2], hi1, lo1);
    ctr = U32x4{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// The four 32-bit words of block `block` of the stream (seed, offset/4).
CK_HOST_DEVICE inline U32x4 block_words(std::uint64_t seed, std::uint64_t block) {
  return philox4x32_10(U32x4{{static_cast<std::uint32_t>(block),
                              static_cast<std::uint32_t>(block >> 32), 0u, 0u}},
                       seed);
}

// Uniform in [0, 1) from the top 24 bits, exactly representable in float.
CK_HOST_DEVICE inline float to_unit_float(std::uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// Element i of a uniform stream that starts at `offset` (a multiple of 4).
CK_HOST_DEVICE inline float uniform(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  const std::uint64_t e = offset + i;
  return to_unit_float(block_words(seed, e / 4).v[e % 4]);
}

}  // namespace convkit::philox

namespace convkit::philox {

// Box-Muller on one pair of words: the cosine normal, or the sine one.
// Computed in double and rounded once to float, because the float functions
// differ between the libraries: CUDA's logf/sinf/cosf put 2 of 288 draws one
// ulp away from glibc's on an H200 (docs/results/nvidia-h200-2026-11-27).
// The double functions of both err by a few double ulps, far below a float's
// half-ulp, so the rounded draws agree unless the exact value lies within
// those few double ulps of a float rounding boundary: about 2e-8 per draw.
// sqrt, the products and the rounding are exact IEEE operations on both.
CK_HOST_DEVICE inline float box_muller(std::uint32_t first, std::uint32_t second, bool sine) {
  // (x >> 8) + 1 keeps the log's argument in (0, 1].
  const double u1 = (static_cast<double>(first >> 8) + 1.0) * (1.0 / 16777216.0);
  const double u2 = to_unit_float(second);
  const double r = sqrt(-2.0 * log(u1));
  const double theta = 6.283185307179586 * u2;
  return static_cast<float>(sine ? r * sin(theta) : r * cos(theta));
}

// Element i of a standard-normal stream (Box-Muller on word pairs). Each
// Philox block gives four normals; (words 0,1) and (words 2,3) form the pairs,
// the even element of a pair takes the cosine.
CK_HOST_DEVICE inline float normal(std::uint64_t seed, std::uint64_t offset, std::uint64_t i) {
  const std::uint64_t e = offset + i;
  const U32x4 w = block_words(seed, e / 4);
  const int pair = static_cast<int>(e % 4) / 2;
  return box_muller(w.v[2 * pair], w.v[2 * pair + 1], e % 2 != 0);
}

}  // namespace convkit::philox
