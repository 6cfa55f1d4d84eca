// The inverted-dropout mask from the Philox stream, bit for bit the cpu
// backend's (src/cpu/cpu_dropout.cpp): element i is 1 / (1 - p) when the top
// 24 bits of Philox word offset + i, as an integer, are at least
// ceil(p * 2^24) (that is, uniform >= p), else 0. Both sides compute the
// threshold and the kept value on the host in the same way and multiply
// keep * (0 or 1), so the masks are identical, not merely close.
//
// Floor: the kernel reads nothing and writes n sizeof(T) bytes. Each Philox
// 4x32-10 block (ten rounds of two 32x32->64-bit multiplies and a few xors and
// adds, ~80 integer instructions) yields four elements.
//
// v1 one thread per element computes the whole Philox block of its element
//    and keeps one word: obviously right, and four times the integer work,
//    which makes it compute-bound well below the bandwidth floor.
// v2 one thread per Philox block writes its (up to) four elements: a quarter
//    of v1's integer work. Works for any stream offset (partial first and
//    last blocks). Each lane stores 4 scalars 16 bytes apart from its
//    neighbour's, so a warp's store instruction touches 512 bytes to write 128.
// v3 as v2, with the four elements written by one 16-byte vector store (two
//    for double): one store instruction per lane, consecutive lanes on
//    consecutive 16-byte chunks. Needs the stream offset to be a multiple of 4
//    (Generator::reserve hands out whole blocks, so ops always meet it) and a
//    16-byte aligned out; otherwise the family's choice runs v2.
#include <cmath>

#include "convkit/backend/kernel_versions.h"
#include "convkit/core/philox.h"
#include "kernels/dispatch.cuh"
#include "kernels/dropout.cuh"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

namespace {

constexpr int kVersions = 3;

__device__ __forceinline__ std::int64_t grid_start() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_step() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// Word k of a block without indexing the array by a runtime value, which
// would put the block in local memory.
__device__ __forceinline__ std::uint32_t word(const philox::U32x4& w, unsigned k) {
  return k == 0 ? w.v[0] : k == 1 ? w.v[1] : k == 2 ? w.v[2] : w.v[3];
}

template <typename T>
__device__ __forceinline__ T mask_value(std::uint32_t w, std::uint32_t threshold, T keep) {
  return keep * static_cast<T>((w >> 8) >= threshold);
}

__device__ __forceinline__ void store4(float* p, const float (&v)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(double* p, const double (&v)[4]) {
  reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
  reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
}

// ---- v1: one thread per element.
template <typename T>
__global__ void dropout_v1(T* __restrict__ out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                           std::uint32_t threshold, T keep) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step()) {
    const std::uint64_t e = offset + static_cast<std::uint64_t>(i);
    out[i] = mask_value(word(philox::block_words(seed, e / 4), static_cast<unsigned>(e % 4)), threshold, keep);
  }
}

// ---- v2: one thread per Philox block; `blocks` blocks from first_block on.
template <typename T>
__global__ void dropout_v2(T* __restrict__ out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                           std::uint32_t threshold, T keep, std::uint64_t first_block, std::int64_t blocks) {
  const std::uint64_t end = offset + static_cast<std::uint64_t>(n);
  for (std::int64_t b = grid_start(); b < blocks; b += grid_step()) {
    const std::uint64_t block = first_block + static_cast<std::uint64_t>(b);
    const philox::U32x4 w = philox::block_words(seed, block);
    CK_UNROLL for (unsigned k = 0; k < 4; ++k) {
      const std::uint64_t e = block * 4 + k;  // stream element; it lands at out[e - offset]
      if (e >= offset && e < end) out[e - offset] = mask_value(w.v[k], threshold, keep);
    }
  }
}

// ---- v3: v2 with a 16-byte store per block; offset % 4 == 0, so out[4 b]
// starts block offset / 4 + b.
template <typename T>
__global__ void dropout_v3(T* __restrict__ out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                           std::uint32_t threshold, T keep) {
  const std::int64_t full = n / 4, blocks = (n + 3) / 4;
  for (std::int64_t b = grid_start(); b < blocks; b += grid_step()) {
    const philox::U32x4 w = philox::block_words(seed, offset / 4 + static_cast<std::uint64_t>(b));
    T v[4];
    CK_UNROLL for (int k = 0; k < 4; ++k) v[k] = mask_value(w.v[k], threshold, keep);
    if (b < full) {
      store4(out + 4 * b, v);
    } else {
      CK_UNROLL for (int k = 0; k < 4; ++k)
        if (4 * b + k < n) out[4 * b + k] = v[k];
    }
  }
}

int choose(int version, bool vectors_ok) {
  register_dropout_kernels();
  CK_CHECK(version >= 0 && version <= kVersions, "dropout_mask: the dropout kernels have versions 1..",
           kVersions, ", got ", version);
  if (version == 0) {
    const int chosen = kernel_version("dropout");
    return chosen == 3 && !vectors_ok ? 2 : chosen;
  }
  CK_CHECK(version != 3 || vectors_ok, "dropout_mask: dropout v3 writes 16-byte vectors and needs a stream offset ",
           "that is a multiple of 4 and a 16-byte aligned output");
  return version;
}

}  // namespace

void register_dropout_kernels() {
  static const bool registered = [] {
    register_kernel_family({"dropout", kVersions, 3,
                            "v1 one thread per element (a Philox block each); "
                            "v2 one thread per Philox block, four scalar stores; "
                            "v3 one thread per Philox block, one 16-byte store"});
    return true;
  }();
  (void)registered;
}

void launch_dropout_mask(DType dtype, void* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset, double p,
                         int version) {
  CK_CHECK(p >= 0 && p <= 1, "dropout_mask: p must be in [0, 1], got ", p);
  CK_CHECK(n >= 0, "dropout_mask: negative element count ", n);
  CK_CHECK(offset <= UINT64_MAX - static_cast<std::uint64_t>(n) - 3, "dropout_mask: stream offset ", offset,
           " + ", n, " elements overflows the Philox counter");
  const bool vectors_ok = offset % 4 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const int v = choose(version, vectors_ok);
  if (n == 0) return;
  // As the cpu backend: p = 1 gives 2^24, above every (word >> 8), so nothing is kept.
  const auto threshold = static_cast<std::uint32_t>(std::ceil(p * 16777216.0));  // 2^24
  dispatch_floating(dtype, "dropout_mask", [&](auto t) {
    using T = decltype(t);
    // p = 1 keeps nothing; 0, not inf, so that keep * 0 stays 0.
    const T keep = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    T* o = static_cast<T*>(out);
    if (v == 1) {
      const LaunchShape s = grid_stride_shape(n);
      launch(dropout_v1<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, o, n, seed, offset, threshold, keep);
    } else if (v == 2) {
      const std::uint64_t first_block = offset / 4, end_block = (offset + static_cast<std::uint64_t>(n) + 3) / 4;
      const auto blocks = static_cast<std::int64_t>(end_block - first_block);
      const LaunchShape s = grid_stride_shape(blocks);
      launch(dropout_v2<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, o, n, seed, offset, threshold, keep,
             first_block, blocks);
    } else {
      const LaunchShape s = grid_stride_shape((n + 3) / 4);
      launch(dropout_v3<T>, dim3(s.blocks), dim3(s.threads), 0, nullptr, o, n, seed, offset, threshold, keep);
    }
  });
}

}  // namespace convkit::CK_GPU_NS
