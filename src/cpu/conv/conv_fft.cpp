// FFT convolution (stride 1, any padding, dilation and groups).
//
// Each pass is a correlation (conv/correlation.h, tiles: conv/fft_tiling.h) computed tile by tile with
// overlap-save: transform a tile_h x tile_w window of the padded input, multiply
// by the filter's spectrum, transform back, keep the outputs that did not wrap
// around. By the correlation theorem, for real a and b,
//   FFT(a correlated-with b) = FFT(a) * conj(FFT(b)).
// Summing over input channels happens in the frequency domain, where for every
// frequency f it is a small complex matrix product over all tiles of a chunk of
// images:
//   forward / backward-data:  Out_f (O x M) = conj(Filter_f) (O x I) * In_f (I x M)
//   backward-weights:         dW_f  (K x C) += conj(Dy_f)    (K x M) * X_f^T (M x C)
// (per group), run by Eigen. M is the number of tiles in the chunk.
//
// Backward-data is the forward machinery applied to dy with flipped,
// transposed filters. Backward-weights correlates input tiles with the
// matching dy tiles (the forward output tiles, zero-padded to the transform
// size): the result's top-left extent_h x extent_w corner holds the weight
// gradient, read at the dilated taps. The transforms themselves run on
// batches of kTileLanes tiles at once.
//
// Every parallel loop hands out independent tasks dynamically (each writes
// its own outputs), so results do not depend on the schedule and a thread
// that loses its core on a shared machine does not hold the others up.
//
// Workspace holds the filter spectra and one chunk of tile spectra; the chunk
// size is a pure function of the descriptor (kTargetTilesPerChunk, capped by
// workspace_limit). Each thread also allocates O(tile_h * tile_w) scratch of
// its own for the batch of tiles being transformed, outside the workspace.
#include <Eigen/Core>
#include <algorithm>
#include <complex>
#include <cstdint>
#include <vector>

#include "conv/fft_tiling.h"
#include "cpu/conv/conv_common.h"
#include "cpu/conv/implementations.h"
#include "cpu/fft/fft.h"

namespace convkit::cpu {
namespace {

using conv::backward_data_correlation;
using conv::choose_fft_tiling;
using conv::CorrelationShape;
using conv::FftTiling;
using conv::forward_correlation;
using conv::kMaxFftTile;

// Columns of the per-frequency products: enough tiles to keep Eigen's GEMM
// efficient, few enough that a chunk's spectra stay a few MiB for typical layers.
constexpr std::int64_t kTargetTilesPerChunk = 128;

template <typename T>
using Complex = std::complex<T>;
template <typename T>
using ComplexMatrix = Eigen::Matrix<Complex<T>, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ComplexMap = Eigen::Map<ComplexMatrix<T>>;
template <typename T>
using ConstComplexMap = Eigen::Map<const ComplexMatrix<T>>;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct FftPlan {
  CorrelationShape shape;
  FftTiling tiling;
  std::int64_t chunk_images = 1;
  bool parallel = true;  // worth_parallelising(desc)
};

template <typename T>
struct FftBuffers {
  Complex<T>* filters = nullptr;  // [f][o][i]: filter spectra (or weight-gradient spectra)
  Complex<T>* inputs = nullptr;   // [f][in channel][m]: input tile spectra of one chunk
  Complex<T>* outputs = nullptr;  // [f][out channel][m]: output (or dy) tile spectra of one chunk
  std::size_t bytes = 0;
};

template <typename T>
FftBuffers<T> carve_fft(const CorrelationShape& s, const FftTiling& t, std::int64_t chunk_images, void* base) {
  const auto F = static_cast<std::size_t>(t.spectrum_size());
  const auto M = static_cast<std::size_t>(chunk_images * t.tiles_per_image());
  WorkspaceCarver carver(base);
  FftBuffers<T> b;
  b.filters = carver.take<Complex<T>>(F * static_cast<std::size_t>(s.out_channels * s.in_per_group()));
  b.inputs = carver.take<Complex<T>>(F * static_cast<std::size_t>(s.in_channels) * M);
  b.outputs = carver.take<Complex<T>>(F * static_cast<std::size_t>(s.out_channels) * M);
  b.bytes = carver.bytes();
  return b;
}

template <typename T>
FftPlan plan_fft(const Conv2dDesc& d, ConvPass pass) {
  FftPlan plan;
  plan.shape = pass == ConvPass::backward_data ? backward_data_correlation(d) : forward_correlation(d);
  plan.tiling = choose_fft_tiling(plan.shape);
  plan.parallel = worth_parallelising(d);
  const FftTiling& t = plan.tiling;
  for (plan.chunk_images = std::min(d.N, ceil_div(kTargetTilesPerChunk, t.tiles_per_image()));
       plan.chunk_images >= 1; --plan.chunk_images) {
    if (carve_fft<T>(plan.shape, t, plan.chunk_images, nullptr).bytes <= d.workspace_limit) return plan;
  }
  const CorrelationShape& s = plan.shape;
  CK_FAIL(conv_op_name(ConvAlgo::fft, pass), ": one image needs ", carve_fft<T>(s, t, 1, nullptr).bytes,
          " bytes of workspace (", t.tile_h, "x", t.tile_w, " tiles, ", t.tiles_per_image(),
          " per image, spectra of ", t.spectrum_size(), " complex ", dtype_of<T>::value, " values for ",
          s.out_channels * s.in_per_group(), " filters + ", s.in_channels + s.out_channels,
          " channels x tiles) but workspace_limit is ", d.workspace_limit,
          " bytes; raise Conv2dDesc::workspace_limit or use the direct algorithm; descriptor: ", d.str());
}

// Tiles are transformed kTileLanes at a time, interleaved, so the FFT's
// butterflies run over contiguous lanes (fft.h) and each batch's spectra are
// contiguous runs in the [f][channel][m] arrays.
constexpr std::int64_t kTileLanes = 16;

// One thread's buffers for a batch of up to kTileLanes tiles.
template <typename T>
struct TileBatch {
  std::vector<T> tiles;             // tile_h x tile_w x lanes
  std::vector<Complex<T>> spectra;  // spectrum_size x lanes
  std::vector<Complex<T>> fft;      // tile_w x lanes
  explicit TileBatch(const FftTiling& t)
      : tiles(static_cast<std::size_t>(t.tile_h * t.tile_w * kTileLanes)),
        spectra(static_cast<std::size_t>(t.spectrum_size() * kTileLanes)),
        fft(static_cast<std::size_t>(t.tile_w * kTileLanes)) {}
};

// Copies a batch's run of `lanes` spectrum values (at most 16 complex numbers).
// Written as a SIMD loop: as std::copy_n it became a memcpy call per run, which
// cost ~20% of the forward pass in a profile.
template <typename T>
void copy_lanes(const Complex<T>* src, std::int64_t lanes, Complex<T>* dst) {
  const T* from = reinterpret_cast<const T*>(src);
  T* to = reinterpret_cast<T*>(dst);
#pragma omp simd
  for (std::int64_t i = 0; i < 2 * lanes; ++i) to[i] = from[i];
}

// Calls fn(batch, group, item0, lanes) for every run of up to kTileLanes
// consecutive items [item0, item0 + lanes) within each of `groups` groups of
// `items` items, in parallel when `parallel`; each thread brings its own TileBatch.
template <typename T, typename Fn>
void for_each_tile_batch(const FftTiling& t, std::int64_t groups, std::int64_t items, bool parallel, Fn fn) {
  const std::int64_t blocks = ceil_div(items, kTileLanes);
#pragma omp parallel if (parallel)
  {
    TileBatch<T> batch(t);
#pragma omp for schedule(dynamic)
    for (std::int64_t gb = 0; gb < groups * blocks; ++gb) {
      const std::int64_t group = gb / blocks, item0 = (gb % blocks) * kTileLanes;
      fn(batch, group, item0, std::min(kTileLanes, items - item0));
    }
  }
}

// filters[f*O*I + o*I + i] = conj(FFT(tap(o, i, ., .) placed at the dilated positions)).
template <typename T, typename Tap>
void transform_filters(const CorrelationShape& s, const FftTiling& t, const fft::RealFft2d<T>& fft, Tap tap,
                       bool parallel, Complex<T>* filters) {
  const std::int64_t I = s.in_per_group(), items = s.out_channels * I, F = t.spectrum_size();
  for_each_tile_batch<T>(t, 1, items, parallel, [&](TileBatch<T>& b, std::int64_t, std::int64_t item0,
                                                      std::int64_t lanes) {
    std::fill(b.tiles.begin(), b.tiles.end(), T(0));
    for (std::int64_t l = 0; l < lanes; ++l) {
      const std::int64_t o = (item0 + l) / I, i = (item0 + l) % I;
      for (std::int64_t r = 0; r < s.R; ++r)
        for (std::int64_t c = 0; c < s.S; ++c)
          b.tiles[((r * s.dil_h) * t.tile_w + c * s.dil_w) * lanes + l] = tap(o, i, r, c);
    }
    fft.forward(b.tiles.data(), b.spectra.data(), b.fft.data(), lanes);
    for (std::int64_t f = 0; f < F; ++f)
      for (std::int64_t l = 0; l < lanes; ++l) filters[f * items + item0 + l] = std::conj(b.spectra[f * lanes + l]);
  });
}

// Which part of a channel plane goes into tile (th, tw): rows
// [th*step_h + offset_h, + size_h) and likewise columns, clipped to the plane,
// copied to the tile's top-left corner; the rest of the tile is zero.
struct TileWindow {
  std::int64_t plane_h, plane_w;    // the plane the tiles are cut from
  std::int64_t step_h, step_w;      // tile origin advances by the valid output size
  std::int64_t offset_h, offset_w;  // origin of tile (0, 0): minus the padding, or 0
  std::int64_t size_h, size_w;      // rows and columns taken from the plane
};

// Tile m of a chunk: image m / tiles_per_image, then row-major over (th, tw).
struct TileIndex {
  std::int64_t image, th, tw;
};
TileIndex tile_index(const FftTiling& t, std::int64_t m) {
  const std::int64_t within = m % t.tiles_per_image();
  return {m / t.tiles_per_image(), within / t.tiles_w, within % t.tiles_w};
}

// spectra[(f*channels + c)*M + m] = FFT of tile m of channel c, for images
// [n0, n0 + count), M = count * tiles_per_image.
template <typename T>
void transform_tiles(const FftTiling& t, const TileWindow& win, const fft::RealFft2d<T>& fft, const T* planes,
                     std::int64_t channels, std::int64_t n0, std::int64_t count, bool parallel,
                     Complex<T>* spectra) {
  const std::int64_t F = t.spectrum_size(), M = count * t.tiles_per_image();
  for_each_tile_batch<T>(t, channels, M, parallel, [&](TileBatch<T>& b, std::int64_t c, std::int64_t m0, std::int64_t lanes) {
    std::fill(b.tiles.begin(), b.tiles.end(), T(0));
    for (std::int64_t l = 0; l < lanes; ++l) {
      const TileIndex at = tile_index(t, m0 + l);
      const T* plane = planes + ((n0 + at.image) * channels + c) * win.plane_h * win.plane_w;
      const std::int64_t h0 = at.th * win.step_h + win.offset_h, w0 = at.tw * win.step_w + win.offset_w;
      const IndexRange rows = valid_range(win.size_h, 1, h0, win.plane_h);
      const IndexRange cols = valid_range(win.size_w, 1, w0, win.plane_w);
      for (std::int64_t i = rows.begin; i < rows.end; ++i) {
        const T* src = plane + (h0 + i) * win.plane_w + w0;
        T* dst = b.tiles.data() + i * t.tile_w * lanes + l;
        for (std::int64_t j = cols.begin; j < cols.end; ++j) dst[j * lanes] = src[j];
      }
    }
    fft.forward(b.tiles.data(), b.spectra.data(), b.fft.data(), lanes);
    for (std::int64_t f = 0; f < F; ++f)
      copy_lanes(b.spectra.data() + f * lanes, lanes, spectra + (f * channels + c) * M + m0);
  });
}

// out[n0 + image][o] tile by tile: inverse FFT of spectra[(f*O + o)*M + m], keep
// the valid out_h x out_w corner, scale by 1/(tile_h*tile_w), add the bias.
template <typename T>
void inverse_output_tiles(const CorrelationShape& s, const FftTiling& t, const fft::RealFft2d<T>& fft,
                          const Complex<T>* spectra, const T* bias, std::int64_t n0, std::int64_t count,
                          bool parallel, T* out) {
  const std::int64_t O = s.out_channels, F = t.spectrum_size(), M = count * t.tiles_per_image();
  const T scale = T(1) / static_cast<T>(t.tile_h * t.tile_w);
  for_each_tile_batch<T>(t, O, M, parallel, [&](TileBatch<T>& b, std::int64_t o, std::int64_t m0, std::int64_t lanes) {
    for (std::int64_t f = 0; f < F; ++f)
      copy_lanes(spectra + (f * O + o) * M + m0, lanes, b.spectra.data() + f * lanes);
    fft.inverse(b.spectra.data(), b.tiles.data(), b.fft.data(), lanes);
    const T offset = bias != nullptr ? bias[o] : T(0);
    for (std::int64_t l = 0; l < lanes; ++l) {
      const TileIndex at = tile_index(t, m0 + l);
      T* plane = out + ((n0 + at.image) * O + o) * s.P * s.Q;
      const std::int64_t p0 = at.th * t.out_h, q0 = at.tw * t.out_w;
      const std::int64_t rows = std::min(t.out_h, s.P - p0), cols = std::min(t.out_w, s.Q - q0);
      for (std::int64_t i = 0; i < rows; ++i) {
        const T* src = b.tiles.data() + i * t.tile_w * lanes + l;
        T* dst = plane + (p0 + i) * s.Q + q0;
        for (std::int64_t j = 0; j < cols; ++j) dst[j] = src[j * lanes] * scale + offset;
      }
    }
  });
}

// out = correlate(in, taps) + bias, for the correlation `plan` describes.
template <typename T, typename Tap>
void fft_correlate(const FftPlan& plan, const T* in, Tap tap, const T* bias, T* out, void* workspace) {
  const CorrelationShape& s = plan.shape;
  const FftTiling& t = plan.tiling;
  const fft::RealFft2d<T> fft(t.tile_h, t.tile_w);
  const FftBuffers<T> buf = carve_fft<T>(s, t, plan.chunk_images, workspace);
  transform_filters(s, t, fft, tap, plan.parallel, buf.filters);
  const TileWindow window{s.H, s.W, t.out_h, t.out_w, -s.pad_top, -s.pad_left, t.tile_h, t.tile_w};
  const std::int64_t O = s.out_channels, I = s.in_per_group(), Og = s.out_per_group();
  for (std::int64_t n0 = 0; n0 < s.N; n0 += plan.chunk_images) {
    const std::int64_t count = std::min(plan.chunk_images, s.N - n0);
    const std::int64_t M = count * t.tiles_per_image();
    transform_tiles(t, window, fft, in, s.in_channels, n0, count, plan.parallel, buf.inputs);
#pragma omp parallel for schedule(dynamic) if (plan.parallel)
    for (std::int64_t f = 0; f < t.spectrum_size(); ++f) {
      for (std::int64_t g = 0; g < s.groups; ++g) {
        ConstComplexMap<T> filters(buf.filters + (f * O + g * Og) * I, Og, I);
        ConstComplexMap<T> inputs(buf.inputs + (f * s.in_channels + g * I) * M, I, M);
        ComplexMap<T> outputs(buf.outputs + (f * O + g * Og) * M, Og, M);
        outputs.noalias() = filters * inputs;
      }
    }
    inverse_output_tiles(s, t, fft, buf.outputs, bias, n0, count, plan.parallel, out);
  }
}

template <typename T>
void fft_forward(const Conv2dDesc& d, const T* x, const T* w, const T* b, T* y, void* workspace) {
  const std::int64_t Cg = d.C_per_group(), R = d.R, S = d.S;
  auto tap = [=](std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) {
    return w[((k * Cg + c) * R + r) * S + s];
  };
  fft_correlate(plan_fft<T>(d, ConvPass::forward), x, tap, b, y, workspace);
}

template <typename T>
void fft_backward_data(const Conv2dDesc& d, const T* dy, const T* w, T* dx, void* workspace) {
  // Output channel c of group g reads input channels (dy) g*Kg .. g*Kg + Kg - 1.
  auto tap = [=](std::int64_t c, std::int64_t k_in_group, std::int64_t r, std::int64_t s) {
    return w[conv::flipped_filter_index(d, c, k_in_group, r, s)];
  };
  fft_correlate(plan_fft<T>(d, ConvPass::backward_data), dy, tap, static_cast<const T*>(nullptr), dx, workspace);
}

template <typename T>
void fft_backward_weights(const Conv2dDesc& d, const T* x, const T* dy, T* dw, void* workspace) {
  const FftPlan plan = plan_fft<T>(d, ConvPass::backward_weights);
  const CorrelationShape& s = plan.shape;
  const FftTiling& t = plan.tiling;
  const fft::RealFft2d<T> fft(t.tile_h, t.tile_w);
  const FftBuffers<T> buf = carve_fft<T>(s, t, plan.chunk_images, workspace);
  const std::int64_t K = d.K, C = d.C, Kg = d.K_per_group(), Cg = d.C_per_group(), F = t.spectrum_size();
  Complex<T>* dw_spectra = buf.filters;  // [f][k][c]
  std::fill(dw_spectra, dw_spectra + F * K * Cg, Complex<T>(0));
  const TileWindow input_window{s.H, s.W, t.out_h, t.out_w, -s.pad_top, -s.pad_left, t.tile_h, t.tile_w};
  const TileWindow dy_window{s.P, s.Q, t.out_h, t.out_w, 0, 0, t.out_h, t.out_w};
  for (std::int64_t n0 = 0; n0 < s.N; n0 += plan.chunk_images) {
    const std::int64_t count = std::min(plan.chunk_images, s.N - n0);
    const std::int64_t M = count * t.tiles_per_image();
    transform_tiles(t, input_window, fft, x, C, n0, count, plan.parallel, buf.inputs);
    transform_tiles(t, dy_window, fft, dy, K, n0, count, plan.parallel, buf.outputs);
#pragma omp parallel for schedule(dynamic) if (plan.parallel)
    for (std::int64_t f = 0; f < F; ++f) {
      for (std::int64_t g = 0; g < d.groups; ++g) {
        ConstComplexMap<T> dy_f(buf.outputs + (f * K + g * Kg) * M, Kg, M);
        ConstComplexMap<T> x_f(buf.inputs + (f * C + g * Cg) * M, Cg, M);
        ComplexMap<T> dw_f(dw_spectra + (f * K + g * Kg) * Cg, Kg, Cg);
        dw_f.noalias() += dy_f.conjugate() * x_f.transpose();
      }
    }
  }
  // Back to the spatial domain; the gradient of tap (r, s) sits at (r*dil_h, s*dil_w).
  const T scale = T(1) / static_cast<T>(t.tile_h * t.tile_w);
  const std::int64_t items = K * Cg;
  for_each_tile_batch<T>(t, 1, items, plan.parallel, [&](TileBatch<T>& b, std::int64_t, std::int64_t item0,
                                                           std::int64_t lanes) {
    for (std::int64_t f = 0; f < F; ++f)
      copy_lanes<T>(dw_spectra + f * items + item0, lanes, b.spectra.data() + f * lanes);
    fft.inverse(b.spectra.data(), b.tiles.data(), b.fft.data(), lanes);
    for (std::int64_t l = 0; l < lanes; ++l) {
      T* filter = dw + (item0 + l) * d.R * d.S;
      for (std::int64_t r = 0; r < d.R; ++r)
        for (std::int64_t c = 0; c < d.S; ++c)
          filter[r * d.S + c] = b.tiles[((r * s.dil_h) * t.tile_w + c * s.dil_w) * lanes + l] * scale;
    }
  });
}

class FftConv final : public ConvAlgorithm {
 public:
  ConvAlgo algo() const override { return ConvAlgo::fft; }

  Support supports(const Conv2dDesc& desc) const override {
    try {
      desc.validate("conv2d (cpu, fft)");
    } catch (const Error& e) {
      return Support::no(e.what());
    }
    if (desc.stride_h != 1 || desc.stride_w != 1) {
      return Support::no(detail::concat(
          "fft computes every output position, so it supports stride 1 only (got stride ", desc.stride_h, "x",
          desc.stride_w, "); use im2col_gemm or direct"));
    }
    const CorrelationShape s = forward_correlation(desc);
    if (s.extent_h() > kMaxFftTile || s.extent_w() > kMaxFftTile) {
      return Support::no(detail::concat("fft supports dilated filter extents up to ", kMaxFftTile, " (got ",
                                        s.extent_h(), "x", s.extent_w(), ")"));
    }
    return Support::yes();
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    const std::string op = conv_op_name(algo(), pass);
    const Support support = supports(desc);
    CK_CHECK(support.ok, op, ": not supported: ", support.reason, "; descriptor: ", desc.str());
    std::size_t bytes = 0;
    dispatch_floating(dtype, [&]<typename T>() {
      const FftPlan plan = plan_fft<T>(desc, pass);
      bytes = carve_fft<T>(plan.shape, plan.tiling, plan.chunk_images, nullptr).bytes;
    });
    return bytes;
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b,
               void* y, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::forward, {{x, "x"}, {w, "w"}, {y, "y"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      fft_forward<T>(desc, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                     static_cast<T*>(y), workspace);
    });
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_data, {{dy, "dy"}, {w, "w"}, {dx, "dx"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      fft_backward_data<T>(desc, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx),
                           workspace);
    });
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw,
                        void* db, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_weights, {{x, "x"}, {dy, "dy"}, {dw, "dw"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      fft_backward_weights<T>(desc, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw),
                              workspace);
      if (db != nullptr) bias_gradient<T>(desc, static_cast<const T*>(dy), static_cast<T*>(db));
    });
  }
};

}  // namespace

const ConvAlgorithm& fft_conv_algorithm() {
  static const FftConv instance;
  return instance;
}

namespace {
const conv::ConvAlgorithmRegistrar kRegistered(conv_registry(), fft_conv_algorithm());
}  // namespace

}  // namespace convkit::cpu
