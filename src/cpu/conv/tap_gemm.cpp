// Tap kernels (tap_gemm.h): a register-tiled GEMM whose B operand is read
// from a zero-padded image at one fixed offset per filter tap.
//
// Forward tile: 6 output channels x 16 output columns of one output row, in
// 12 ymm accumulators (x 32 columns in 12 zmm where the build has AVX-512,
// with 16-column tiles for the rest of a row). Per tap it loads 2 vectors of
// the padded image and broadcasts 6 filter values: 12 FMAs for 8 loads,
// which Zen 3's 3 load ports issue in the time of the 6 FMA cycles.
// Backward-weights tile: 4 filters x 3 taps of one filter row, each
// accumulator an 8-wide partial sum over q, reduced to a scalar once per
// image; per 8 columns it loads 4 vectors of dy and 3 shifted vectors of the
// image for 12 FMAs.
#include "cpu/conv/tap_gemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "conv/correlation.h"
#include "convkit/core/error.h"
#include "cpu/isa_namespace.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CONVKIT_TAP_GEMM 1
#if defined(__AVX512F__)
#define CONVKIT_TAP_GEMM_512 1
#endif
#endif

namespace convkit::cpu::CONVKIT_ISA_NS {
namespace {

using i64 = std::int64_t;

// Only the AVX2 kernels use the tile sizes: a baseline build (and clang's
// -Wunused-const-variable) sees them unused.
[[maybe_unused]] constexpr i64 kTileColumns = 16;   // forward tile width: two 8-float registers
[[maybe_unused]] constexpr int kTileChannels = 6;   // forward tile height: 6 x 2 = 12 accumulators
[[maybe_unused]] constexpr int kWeightFilters = 4;  // backward-weights tile: 4 filters ...
[[maybe_unused]] constexpr int kWeightTaps = 3;     // ... x 3 taps = 12 accumulators

i64 round_up(i64 n, i64 m) { return (n + m - 1) / m * m; }

// A stack of zero-padded planes: `channels` planes of rows x pitch floats,
// holding a channels x src_rows x src_cols source at (top, left). top or
// left may be negative: source rows or columns that fall outside are dropped.
struct PaddedPlanes {
  i64 channels, rows, pitch, top, left;
  i64 plane() const { return rows * pitch; }
  i64 floats() const { return channels * plane(); }
};

// The padded image a forward or backward-weights pass reads: wide enough
// that whole 16-column tiles (and the taps to their right) stay inside.
PaddedPlanes padded_input(const Conv2dDesc& d) {
  return {d.C, d.H + d.pad_top + d.pad_bottom, round_up(d.Q(), kTileColumns) + (d.S - 1) * d.dilation_w,
          d.pad_top, d.pad_left};
}

// The padded output gradient backward-data correlates with the flipped
// filters (conv/correlation.h), placed at that correlation's padding.
PaddedPlanes padded_output_gradient(const Conv2dDesc& d) {
  const conv::CorrelationShape s = conv::backward_data_correlation(d);
  return {d.K, d.H + s.extent_h() - 1, round_up(d.W, kTileColumns) + s.extent_w() - 1, s.pad_top, s.pad_left};
}

#ifdef CONVKIT_TAP_GEMM

// Writes every float of `dst` once: the source where it lands, zero elsewhere.
void pad_planes(const float* src, i64 src_rows, i64 src_cols, const PaddedPlanes& dst, float* out) {
  const i64 col_begin = std::max<i64>(0, -dst.left);
  const i64 col_end = std::min(src_cols, dst.pitch - dst.left);
  for (i64 c = 0; c < dst.channels; ++c) {
    for (i64 row = 0; row < dst.rows; ++row) {
      float* line = out + c * dst.plane() + row * dst.pitch;
      const i64 src_row = row - dst.top;
      if (src_row < 0 || src_row >= src_rows || col_end <= col_begin) {
        std::fill(line, line + dst.pitch, 0.0f);
        continue;
      }
      const i64 first = col_begin + dst.left, last = col_end + dst.left;
      std::fill(line, line + first, 0.0f);
      std::memcpy(line + first, src + (c * src_rows + src_row) * src_cols + col_begin,
                  static_cast<std::size_t>(col_end - col_begin) * sizeof(float));
      std::fill(line + last, line + dst.pitch, 0.0f);
    }
  }
}

// Offsets, within a padded buffer, of each filter tap (c, r, s) of `channels`
// channels, in the filters' (c, r, s) order.
std::vector<i64> tap_offsets(i64 channels, const Conv2dDesc& d, const PaddedPlanes& planes) {
  std::vector<i64> offsets;
  offsets.reserve(static_cast<std::size_t>(channels * d.R * d.S));
  for (i64 c = 0; c < channels; ++c)
    for (i64 r = 0; r < d.R; ++r)
      for (i64 s = 0; s < d.S; ++s) offsets.push_back(c * planes.plane() + r * d.dilation_h * planes.pitch + s * d.dilation_w);
  return offsets;
}

// One correlation of a padded buffer with a filter bank:
//   out[o][p][q] = bias[o] + sum_t weights[o][t] * src[offsets[t] + p*pitch + q]
struct Correlation {
  const float* src;
  i64 pitch;
  const i64* offsets;
  i64 taps;
  const float* weights;  // out_channels x taps
  const float* bias;     // out_channels, or nullptr for zero
  float* out;            // out_channels planes of rows x cols, out_channel_stride apart
  i64 out_channels, rows, cols, out_channel_stride;
};

// The registers a forward tile is written in: two vectors of one output
// row per channel, so 16 columns in AVX2's ymm and 32 in AVX-512's zmm.
struct Ymm {
  using V = __m256;
  static constexpr i64 kColumns = kTileColumns;
  [[gnu::always_inline]] static V load(const float* p) { return _mm256_loadu_ps(p); }
  [[gnu::always_inline]] static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  [[gnu::always_inline]] static V zero() { return _mm256_setzero_ps(); }
  [[gnu::always_inline]] static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  [[gnu::always_inline]] static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
};
#ifdef CONVKIT_TAP_GEMM_512
struct Zmm {
  using V = __m512;
  static constexpr i64 kColumns = 2 * kTileColumns;
  [[gnu::always_inline]] static V load(const float* p) { return _mm512_loadu_ps(p); }
  [[gnu::always_inline]] static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  [[gnu::always_inline]] static V zero() { return _mm512_setzero_ps(); }
  [[gnu::always_inline]] static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  [[gnu::always_inline]] static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
};
#endif

// Channels x Vec::kColumns columns of one output row, written at
// out + o*out_stride.
template <typename Vec, int Channels>
[[gnu::always_inline]] inline void correlation_tile(const Correlation& c, i64 o0, const float* src, float* out,
                                                    i64 out_stride) {
  // Locals, not c's fields, and the channel loops unrolled early (the
  // pragmas): otherwise GCC keeps the accumulators in a stack array and
  // stores all 12 of them every tap.
  constexpr i64 kHalf = Vec::kColumns / 2;
  const i64 taps = c.taps;
  const i64* offsets = c.offsets;
  const float* weights[Channels];
  typename Vec::V acc[Channels][2];
#pragma GCC unroll 8
  for (int o = 0; o < Channels; ++o) {
    weights[o] = c.weights + (o0 + o) * taps;
    acc[o][0] = acc[o][1] = c.bias != nullptr ? Vec::broadcast(c.bias + o0 + o) : Vec::zero();
  }
  for (i64 t = 0; t < taps; ++t) {
    const float* x = src + offsets[t];
    const typename Vec::V x0 = Vec::load(x), x1 = Vec::load(x + kHalf);
#pragma GCC unroll 8
    for (int o = 0; o < Channels; ++o) {
      const typename Vec::V w = Vec::broadcast(weights[o] + t);
      acc[o][0] = Vec::fmadd(w, x0, acc[o][0]);
      acc[o][1] = Vec::fmadd(w, x1, acc[o][1]);
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < Channels; ++o) {
    Vec::store(out + o * out_stride, acc[o][0]);
    Vec::store(out + o * out_stride + kHalf, acc[o][1]);
  }
}

// One output row's tiles for output channels [o0, o0 + Channels): 32-column
// zmm tiles where the build has AVX-512, then 16-column ymm tiles. A tile
// that runs past the row's end (its loads read padding) is written to a
// stack buffer and its valid columns copied out: AVX2's masked stores take
// tens of cycles each on AMD cores, and with them a 1-channel layer on
// 28-column images ran at half the speed.
template <int Channels>
void correlation_row(const Correlation& c, i64 o0, i64 p) {
  const i64 out_plane = c.out_channel_stride;
  const float* src = c.src + p * c.pitch;
  float* out = c.out + o0 * out_plane + p * c.cols;
  i64 q0 = 0;
#ifdef CONVKIT_TAP_GEMM_512
  for (; q0 + Zmm::kColumns <= c.cols; q0 += Zmm::kColumns)
    correlation_tile<Zmm, Channels>(c, o0, src + q0, out + q0, out_plane);
#endif
  for (; q0 + kTileColumns <= c.cols; q0 += kTileColumns)
    correlation_tile<Ymm, Channels>(c, o0, src + q0, out + q0, out_plane);
  if (q0 < c.cols) {
    alignas(32) float partial[Channels][kTileColumns];
    correlation_tile<Ymm, Channels>(c, o0, src + q0, &partial[0][0], kTileColumns);
    for (int o = 0; o < Channels; ++o)
      std::memcpy(out + o * out_plane + q0, partial[o], static_cast<std::size_t>(c.cols - q0) * sizeof(float));
  }
}

// Tiles of up to 8 channels: 16 zmm accumulators of AVX-512's 32 registers
// (tap_gemm_multiply); the convolutions keep 6, which AVX2's 16 ymm hold.
constexpr int kMaxTileChannels = 8;
using CorrelationRow = void (*)(const Correlation&, i64, i64);
constexpr std::array<CorrelationRow, kMaxTileChannels + 1> kCorrelationRows = {
    nullptr,           correlation_row<1>, correlation_row<2>, correlation_row<3>, correlation_row<4>,
    correlation_row<5>, correlation_row<6>, correlation_row<7>, correlation_row<8>};

void correlate(const Correlation& c, bool parallel, int tile_channels = kTileChannels) {
#pragma omp parallel for schedule(static) if (parallel)
  for (i64 p = 0; p < c.rows; ++p) {
    for (i64 o0 = 0; o0 < c.out_channels; o0 += tile_channels) {
      const i64 channels = std::min<i64>(tile_channels, c.out_channels - o0);
      kCorrelationRows[static_cast<std::size_t>(channels)](c, o0, p);
    }
  }
}

float horizontal_sum(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// dw[f][t] += sum_{p,q} dy[f][p][q] * x_row[p*pitch + q + t*dilation_w] for
// Filters filters and Taps consecutive taps of one filter row. dy is read in
// place; its last partial vector of each row is a masked load, so the image
// columns it meets (padding) are multiplied by zero.
struct WeightGradient {
  const float* dy;  // first filter's P x Q plane
  i64 rows, cols, pitch, dilation_w;
  float* dw;        // first filter's (c, r, s0) entry
  i64 dw_filter_stride;
};

// One 8-column step of weight_gradient_tile. Masked: dy's lanes past the
// row's end read as zero (the image columns they meet are padding).
template <int Filters, int Taps, bool Masked>
[[gnu::always_inline]] inline void weight_gradient_step(__m256 (&acc)[Filters][Taps], const float* x, const float* dy,
                                                        i64 dy_plane, i64 dilation_w, __m256i tail) {
  __m256 xs[Taps];
#pragma GCC unroll 4
  for (int t = 0; t < Taps; ++t) {
    xs[t] = _mm256_loadu_ps(x + t * dilation_w);
    // Keeps the vector in a register (here and for d below): GCC would
    // otherwise fold the load into every FMA that uses it, 12 loads per 12
    // FMAs instead of 7, and the load ports become the limit.
    asm("" : "+x"(xs[t]));
  }
#pragma GCC unroll 4
  for (int f = 0; f < Filters; ++f) {
    __m256 d = Masked ? _mm256_maskload_ps(dy + f * dy_plane, tail) : _mm256_loadu_ps(dy + f * dy_plane);
    asm("" : "+x"(d));
#pragma GCC unroll 4
    for (int t = 0; t < Taps; ++t) acc[f][t] = _mm256_fmadd_ps(d, xs[t], acc[f][t]);
  }
}

template <int Filters, int Taps>
void weight_gradient_tile(const WeightGradient& g, const float* x_row) {
  __m256 acc[Filters][Taps];
#pragma GCC unroll 4
  for (int f = 0; f < Filters; ++f)
#pragma GCC unroll 4
    for (int t = 0; t < Taps; ++t) acc[f][t] = _mm256_setzero_ps();
  const i64 cols = g.cols, full = cols / 8 * 8, plane = g.rows * cols, pitch = g.pitch, dilation_w = g.dilation_w;
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols - full)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (i64 p = 0; p < g.rows; ++p) {
    const float* x = x_row + p * pitch;
    const float* dy = g.dy + p * cols;
    for (i64 q = 0; q < full; q += 8) weight_gradient_step<Filters, Taps, false>(acc, x + q, dy + q, plane, dilation_w, tail);
    if (full < cols) weight_gradient_step<Filters, Taps, true>(acc, x + full, dy + full, plane, dilation_w, tail);
  }
#pragma GCC unroll 4
  for (int f = 0; f < Filters; ++f)
#pragma GCC unroll 4
    for (int t = 0; t < Taps; ++t) g.dw[f * g.dw_filter_stride + t] += horizontal_sum(acc[f][t]);
}

using WeightGradientTile = void (*)(const WeightGradient&, const float*);
template <int Filters>
constexpr std::array<WeightGradientTile, kWeightTaps + 1> weight_tiles_for() {
  return {nullptr, weight_gradient_tile<Filters, 1>, weight_gradient_tile<Filters, 2>, weight_gradient_tile<Filters, 3>};
}
constexpr std::array<std::array<WeightGradientTile, kWeightTaps + 1>, kWeightFilters + 1> kWeightGradientTiles = {
    std::array<WeightGradientTile, kWeightTaps + 1>{}, weight_tiles_for<1>(), weight_tiles_for<2>(),
    weight_tiles_for<3>(), weight_tiles_for<4>()};

#endif  // CONVKIT_TAP_GEMM

void require_compiled() {
  CK_CHECK(tap_gemm_compiled(),
           "conv2d tap kernels: the baseline ISA copy has no AVX2 + FMA micro-kernels (this CPU lacks AVX2, or "
           "CONVKIT_CPU_ISA=baseline); im2col_gemm uses its Eigen path instead");
}

}  // namespace

bool tap_gemm_compiled() {
#ifdef CONVKIT_TAP_GEMM
  return true;
#else
  return false;
#endif
}

bool tap_gemm_shape(const Conv2dDesc& d) { return d.stride_h == 1 && d.stride_w == 1; }

std::int64_t tap_gemm_scratch_floats(const Conv2dDesc& d, ConvPass pass) {
  return pass == ConvPass::backward_data ? padded_output_gradient(d).floats() : padded_input(d).floats();
}

std::int64_t tap_gemm_flipped_filter_floats(const Conv2dDesc& d) { return d.K * d.C_per_group() * d.R * d.S; }

void tap_gemm_flip_filters(const Conv2dDesc& d, const float* w, float* wflip) {
  const i64 Kg = d.K_per_group(), R = d.R, S = d.S;
  for (i64 c = 0; c < d.C; ++c)
    for (i64 k = 0; k < Kg; ++k)
      for (i64 r = 0; r < R; ++r)
        for (i64 s = 0; s < S; ++s) wflip[((c * Kg + k) * R + r) * S + s] = w[conv::flipped_filter_index(d, c, k, r, s)];
}

#ifdef CONVKIT_TAP_GEMM
namespace {

// Pads `src` (group-major channels, src_rows x src_cols) into `scratch` and
// correlates each group's padded channels with its filter bank: the body of
// both forward (image, filters) and backward-data (output gradient, flipped
// filters).
void correlate_groups(const Conv2dDesc& d, const float* src, i64 src_rows, i64 src_cols, const PaddedPlanes& planes,
                      const float* weights, const float* bias, float* out, i64 out_channels, i64 out_rows,
                      i64 out_cols, float* scratch, bool parallel) {
  pad_planes(src, src_rows, src_cols, planes, scratch);
  const i64 in_per_group = planes.channels / d.groups;
  const i64 out_per_group = out_channels / d.groups;
  const std::vector<i64> offsets = tap_offsets(in_per_group, d, planes);
  const i64 taps = static_cast<i64>(offsets.size());
  for (i64 g = 0; g < d.groups; ++g) {
    const Correlation c{scratch + g * in_per_group * planes.plane(), planes.pitch, offsets.data(), taps,
                        weights + g * out_per_group * taps, bias != nullptr ? bias + g * out_per_group : nullptr,
                        out + g * out_per_group * out_rows * out_cols, out_per_group, out_rows, out_cols,
                        out_rows * out_cols};
    correlate(c, parallel);
  }
}

}  // namespace
#endif

void tap_gemm_forward_image(const Conv2dDesc& d, const float* x_image, const float* w, const float* b,
                            float* y_image, float* scratch, bool parallel) {
  require_compiled();
#ifdef CONVKIT_TAP_GEMM
  correlate_groups(d, x_image, d.H, d.W, padded_input(d), w, b, y_image, d.K, d.P(), d.Q(), scratch, parallel);
#else
  (void)d, (void)x_image, (void)w, (void)b, (void)y_image, (void)scratch, (void)parallel;
#endif
}

void tap_gemm_backward_data_image(const Conv2dDesc& d, const float* dy_image, const float* wflip,
                                  float* dx_image, float* scratch, bool parallel) {
  require_compiled();
#ifdef CONVKIT_TAP_GEMM
  correlate_groups(d, dy_image, d.P(), d.Q(), padded_output_gradient(d), wflip, nullptr, dx_image, d.C, d.H, d.W,
                   scratch, parallel);
#else
  (void)d, (void)dy_image, (void)wflip, (void)dx_image, (void)scratch, (void)parallel;
#endif
}

void tap_gemm_multiply(const float* a, std::int64_t rows, const std::int64_t* offsets, std::int64_t taps,
                       const float* b, std::int64_t cols, float* out, std::int64_t out_stride) {
  require_compiled();
#ifdef CONVKIT_TAP_GEMM
  // One output row of `cols` columns per "channel" o: the forward tiles with
  // a pitch that is never used (rows = 1) and no bias.
  const Correlation c{b, 0, offsets, taps, a, nullptr, out, rows, 1, cols, out_stride};
#ifdef CONVKIT_TAP_GEMM_512
  correlate(c, false, kMaxTileChannels);
#else
  correlate(c, false);
#endif
#else
  (void)a, (void)rows, (void)offsets, (void)taps, (void)b, (void)cols, (void)out, (void)out_stride;
#endif
}

void tap_gemm_backward_weights_image(const Conv2dDesc& d, const float* x_image, const float* dy_image,
                                     float* dw, float* scratch, bool parallel) {
  require_compiled();
#ifdef CONVKIT_TAP_GEMM
  const PaddedPlanes planes = padded_input(d);
  pad_planes(x_image, d.H, d.W, planes, scratch);
  const i64 Cg = d.C_per_group(), Kg = d.K_per_group(), R = d.R, S = d.S, P = d.P(), Q = d.Q();
  const i64 filter_size = Cg * R * S;
  const i64 blocks_per_group = (Kg + kWeightFilters - 1) / kWeightFilters;
  // Filter blocks write disjoint rows of dw, so they can run on separate threads.
#pragma omp parallel for schedule(static) if (parallel)
  for (i64 block = 0; block < d.groups * blocks_per_group; ++block) {
    const i64 g = block / blocks_per_group;
    const i64 k0 = g * Kg + block % blocks_per_group * kWeightFilters;
    const i64 filters = std::min<i64>(kWeightFilters, (g + 1) * Kg - k0);
    for (i64 c = 0; c < Cg; ++c) {
      for (i64 r = 0; r < R; ++r) {
        for (i64 s0 = 0; s0 < S; s0 += kWeightTaps) {
          const i64 taps = std::min<i64>(kWeightTaps, S - s0);
          const WeightGradient wg{dy_image + k0 * P * Q, P, Q, planes.pitch, d.dilation_w,
                                  dw + k0 * filter_size + (c * R + r) * S + s0, filter_size};
          const float* x_row = scratch + (g * Cg + c) * planes.plane() + r * d.dilation_h * planes.pitch +
                               s0 * d.dilation_w;
          kWeightGradientTiles[static_cast<std::size_t>(filters)][static_cast<std::size_t>(taps)](wg, x_row);
        }
      }
    }
  }
#else
  (void)d, (void)x_image, (void)dy_image, (void)dw, (void)scratch, (void)parallel;
#endif
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
