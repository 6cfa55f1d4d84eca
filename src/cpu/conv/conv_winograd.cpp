// Winograd convolution, F(2x2, 3x3) and F(4x4, 3x3): 3x3 filters, stride 1,
// no dilation.
//
// The output of each image is cut into m x m blocks, "tiles" (m = 2 or 4); a
// tile reads the a x a input patch D (a = m + 2) that covers its 3x3 windows.
// With V = B^T D B per (input channel, tile) and U = G g G^T per (output
// channel, input channel), a tile's output is A^T M A with M = the sum over
// input channels of U (.) V (winograd_transforms.h). Grouped by the a*a
// points of the transform, that sum is a*a independent matrix products,
//     M[xi] (K x tiles) = U[xi] (K x C) * V[xi] (C x tiles),
// so the multiplications run as GEMMs: a*a per tile and channel pair instead
// of the 9*m*m of direct, 2.25x fewer for m = 2 and 4x fewer for m = 4 when
// the tiles fit the output exactly. The transforms are additions and
// multiplications by small constants.
//
// Each pass picks m for its output plane: the one with fewer transform points
// in all (ceil(P/m) * ceil(Q/m) * a*a), so F(4x4) except on outputs too
// small for its tiles (conv::choose_winograd_tile). F(4x4)'s transforms have larger
// entries (up to 8 and 1/24) and round more; see docs/algorithms/winograd.md.
//
// Tiles (numbered across the batch, image-major) go through in chunks, sized
// so that one chunk's V and M stay in a core's L2 (kChunkBytes). Chunks are
// dealt to lanes as images are in im2col_gemm: lane l takes chunks l, l+L,
// ..., and each thread reuses one set of chunk buffers (run_lanes' slot).
//
// Passes:
// - forward: y = A^T M A plus the bias, clipped where m does not divide P or Q.
// - backward-data: dx is the correlation of dy with the filters flipped in
//   both axes and transposed (C and K swap within each group), with padding
//   2 - pad on each side: negative when pad > 2, so the tiles then start
//   inside dy. That is a forward pass of the same machinery.
// - backward-weights: dw = G^T [ sum over tiles of (A E A^T) (.) V ] G, with
//   E the m x m block of dy at the tile: a*a GEMMs
//   W[xi] (K x C) += E[xi] (K x tiles) * V[xi]^T per chunk, into one
//   accumulator per lane, summed in lane order at the end, so the result
//   does not depend on the thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "conv/correlation.h"
#include "conv/winograd_tiling.h"
#include "cpu/conv/conv_common.h"
#include "cpu/conv/eigen_maps.h"
#include "cpu/conv/implementations.h"
#include "cpu/conv/tap_gemm.h"
#include "cpu/isa_namespace.h"
#include "cpu/conv/winograd_transforms.h"

// "These iterations are independent", for GCC's vectorizer. Clang warns
// about the unknown pragma, and its nearest spelling (loop
// vectorize(assume_safety)) is an error where it cannot vectorize, so clang
// gets nothing and checks aliasing at run time.
#if defined(__clang__)
#define CONVKIT_IVDEP
#else
#define CONVKIT_IVDEP _Pragma("GCC ivdep")
#endif

namespace convkit::cpu::CONVKIT_ISA_NS {
namespace {

using winograd::F;

constexpr std::int64_t points(int m) { return conv::winograd_points(m); }

constexpr std::int64_t kMaxLanes = 16;
// One chunk's V and M (points x (in + out channels) x tiles values). Measured on
// the conv layers of cifar10-cnn (2 cores with 512 KiB of L2 each): with
// F(2x2), 1 MiB runs 10-25% faster than 512 KiB or 2 MiB; with F(4x4), 1 MiB
// and 2 MiB are level within the noise and 512 KiB is ~10% slower. Larger
// chunks make wider GEMMs and fewer filter repacks; past that, V and M no
// longer stay in cache between their transform and the GEMM.
constexpr std::size_t kChunkBytes = 1024 * 1024;
constexpr std::int64_t kMinChunkTiles = 16;   // wide enough to keep the GEMMs efficient
constexpr std::int64_t kMaxChunkTiles = 512;  // bounds the per-chunk index tables

// One stride-1 3x3 correlation as the tile loops see it: out_channels planes
// of out_h x out_w from in_channels planes of in_h x in_w, where output
// (p, q)'s window starts at input (p - off_h, q - off_w). Inputs outside the
// plane are zeros.
struct TileGeometry {
  std::int64_t N, in_channels, out_channels, groups;
  std::int64_t in_h, in_w, out_h, out_w;
  std::int64_t off_h, off_w;
  int m;  // output tile side
  std::int64_t tiles_h, tiles_w;

  TileGeometry(std::int64_t n, std::int64_t in, std::int64_t out, std::int64_t g, std::int64_t ih,
               std::int64_t iw, std::int64_t oh, std::int64_t ow, std::int64_t offh, std::int64_t offw, int tile)
      : N(n), in_channels(in), out_channels(out), groups(g), in_h(ih), in_w(iw), out_h(oh), out_w(ow),
        off_h(offh), off_w(offw), m(tile), tiles_h((oh + tile - 1) / tile), tiles_w((ow + tile - 1) / tile) {}
  std::int64_t in_per_group() const { return in_channels / groups; }
  std::int64_t out_per_group() const { return out_channels / groups; }
  std::int64_t tiles() const { return N * tiles_h * tiles_w; }
  // Elements of U (or of one weight-gradient accumulator): points x out x in/groups.
  std::int64_t filter_elems() const { return points(m) * out_channels * in_per_group(); }
};

// The tiles over a pass's correlation (conv/correlation.h): backward-data is
// the forward machinery on dy with the flipped filters and padding 2 - pad.
TileGeometry tile_geometry(const conv::CorrelationShape& s, int forced_tile) {
  return TileGeometry(s.N, s.in_channels, s.out_channels, s.groups, s.H, s.W, s.P, s.Q, s.pad_top, s.pad_left,
                      conv::choose_winograd_tile(s.P, s.Q, forced_tile));
}

TileGeometry forward_geometry(const Conv2dDesc& d, int forced_tile) {
  return tile_geometry(conv::forward_correlation(d), forced_tile);
}

TileGeometry backward_data_geometry(const Conv2dDesc& d, int forced_tile) {
  return tile_geometry(conv::backward_data_correlation(d), forced_tile);
}

// The transforms' scratch (see "The transforms below" further down). Input
// side: a lines of M*chunk + a values, a line of zeros, and a x a values per
// run for the windows its successor overwrites. Output side: M x a rows of
// chunk values, then M lines of M*chunk values.
template <typename T>
struct StageBuffers {
  T* stage;
  std::int64_t chunk;
  int m;
  std::int64_t line_length() const { return m * chunk + (m + 2); }
  T* line(int i) const { return stage + i * line_length(); }  // i <= a; line a holds zeros
  T* saved_window(std::int64_t run) const { return line(m + 3) + run * (m + 2) * (m + 2); }
  T* at(int i, int k) const { return stage + (i * (m + 2) + k) * chunk; }  // i < m, k < a
  T* output_line(int i) const { return stage + m * (m + 2) * chunk + i * m * chunk; }
  static std::int64_t elems(int m, std::int64_t chunk) {
    const std::int64_t a = m + 2;
    return std::max((a + 1) * (m * chunk + a) + a * a * chunk, m * (a + m) * chunk);
  }
};

struct WinogradPlan {
  TileGeometry geo;
  std::int64_t chunk = 0;  // tiles per chunk
  std::int64_t lanes = 0;
  std::int64_t chunks() const { return (geo.tiles() + chunk - 1) / chunk; }
};

template <typename T>
struct WinogradBuffers {
  T* filters = nullptr;       // U: points x out x in/groups (forward, backward-data)
  T* inputs = nullptr;        // V: lanes x points x in x chunk
  T* products = nullptr;      // M, or A E A^T in backward-weights: lanes x points x out x chunk
  T* accumulators = nullptr;  // backward-weights: lanes x points x out x in/groups
  double* bias_sums = nullptr;  // backward-weights: lanes x out
  T* stages = nullptr;        // lanes x StageBuffers::elems: the transforms' scratch
  std::size_t bytes = 0;
};

template <typename T>
WinogradBuffers<T> carve_winograd(const WinogradPlan& plan, ConvPass pass, void* base) {
  const TileGeometry& g = plan.geo;
  const bool weights = pass == ConvPass::backward_weights;
  WorkspaceCarver carver(base);
  WinogradBuffers<T> out;
  if (!weights) out.filters = carver.take<T>(static_cast<std::size_t>(g.filter_elems()));
  out.inputs = carver.take<T>(static_cast<std::size_t>(plan.lanes * points(g.m) * g.in_channels * plan.chunk + kTapGemmOverread));
  out.products = carver.take<T>(static_cast<std::size_t>(plan.lanes * points(g.m) * g.out_channels * plan.chunk));
  if (weights) {
    out.accumulators = carver.take<T>(static_cast<std::size_t>(plan.lanes * g.filter_elems()));
    out.bias_sums = carver.take<double>(static_cast<std::size_t>(plan.lanes * g.out_channels));
  }
  out.stages = carver.take<T>(static_cast<std::size_t>(plan.lanes * StageBuffers<T>::elems(g.m, plan.chunk)));
  out.bytes = carver.bytes();
  return out;
}

// Slot `slot`'s transform scratch.
template <typename T>
StageBuffers<T> stage_buffers(const WinogradBuffers<T>& buffers, const WinogradPlan& plan, std::int64_t slot) {
  return {buffers.stages + slot * StageBuffers<T>::elems(plan.geo.m, plan.chunk), plan.chunk, plan.geo.m};
}

// Chunk size and lanes: like the lanes of im2col_gemm they depend only on
// the descriptor and dtype, so workspace_bytes() is exact. Under a tight
// workspace_limit the lanes go first, then the chunk shrinks, down to one
// tile.
template <typename T>
WinogradPlan plan_winograd(const Conv2dDesc& d, ConvPass pass, int forced_tile) {
  WinogradPlan plan{pass == ConvPass::backward_data ? backward_data_geometry(d, forced_tile)
                                                    : forward_geometry(d, forced_tile)};
  const TileGeometry& g = plan.geo;
  const auto tile_bytes = static_cast<std::int64_t>(points(g.m) * (g.in_channels + g.out_channels) * sizeof(T));
  plan.chunk = std::clamp(static_cast<std::int64_t>(kChunkBytes) / tile_bytes, kMinChunkTiles, kMaxChunkTiles);
  // Small problems: chunks for several lanes, so that every thread has work.
  plan.chunk = std::min(plan.chunk, std::max(kMinChunkTiles, (g.tiles() + kMaxLanes - 1) / kMaxLanes));
  plan.chunk = std::min(plan.chunk, g.tiles());
  // Backward-weights keeps an accumulator of points x K x C/g values per
  // lane, zeroed and summed once per pass, so a lane there gets at least 4
  // chunks where it can: on conv4 of cifar10-cnn at batch 32, 16 lanes of
  // one chunk each spent as long on their 590 KB accumulators as on the
  // products. A power of two, so that 2 or 4 threads share the lanes evenly.
  const std::int64_t max_lanes =
      pass == ConvPass::backward_weights
          ? std::min(kMaxLanes, static_cast<std::int64_t>(std::bit_floor(
                                    static_cast<std::uint64_t>(std::max<std::int64_t>(2, plan.chunks() / 4)))))
          : kMaxLanes;
  // About whole rounds: close to a multiple of max_lanes chunks, so that the
  // lanes get as many chunks (give or take one) and the threads finish
  // together. With 74 chunks over 16 lanes (conv2 of cifar10-cnn at batch
  // 128) one thread ran a lane of 5 chunks alone at the end while the other
  // waited. The chunk stays a multiple of 32 tiles: the transform sweeps
  // run over it in 8- or 16-float vectors (103 instead of 112 tiles cost
  // conv2 8%), and the tap kernels' widest tile is 32 columns (with 104
  // tiles a chunk's products ended in a half-empty 16-column tile, and
  // conv2's forward ran 5% slower than with 128).
  if (plan.chunks() > max_lanes) {
    const std::int64_t chunks = (plan.chunks() + max_lanes / 2) / max_lanes * max_lanes;
    plan.chunk = std::min(kMaxChunkTiles, ((g.tiles() + chunks - 1) / chunks + 31) / 32 * 32);
  }
  auto fits = [&] { return carve_winograd<T>(plan, pass, nullptr).bytes <= d.workspace_limit; };
  for (plan.lanes = std::min(plan.chunks(), max_lanes); plan.lanes > 1; --plan.lanes) {
    if (fits()) return plan;
  }
  while (!fits() && plan.chunk > 1) plan.chunk /= 2;
  if (fits()) return plan;
  CK_FAIL(conv_op_name(ConvAlgo::winograd, pass), ": one tile needs ", carve_winograd<T>(plan, pass, nullptr).bytes,
          " bytes of workspace (", points(g.m), " points x ", g.in_channels, "+", g.out_channels, " channels of ",
          dtype_of<T>::value, ", plus the filters' transform) but workspace_limit is ", d.workspace_limit,
          " bytes; raise Conv2dDesc::workspace_limit or use im2col_gemm or direct; descriptor: ", d.str());
}

// A 2-D tile transform as one matrix (out x in values), read off the
// transform itself by applying it to each unit tile. Applied to many tiles
// at once, side by side in SIMD lanes, the matrix is quicker than the
// transform's own scalar steps (below).
template <typename T, int In, int Out>
std::array<T, Out * In> transform_matrix(void (*transform)(const double*, double*)) {
  std::array<T, Out * In> matrix{};
  for (int j = 0; j < In; ++j) {
    double unit[In] = {}, image[Out];
    unit[j] = 1;
    transform(unit, image);
    for (int r = 0; r < Out; ++r) matrix[r * In + j] = static_cast<T>(image[r]);
  }
  return matrix;
}
template <int M, typename T>
const std::array<T, points(M) * 9>& filter_transform_matrix() {  // G f G^T
  static const auto matrix = transform_matrix<T, 9, points(M)>(&winograd::filter_transform<M, double>);
  return matrix;
}
template <int M, typename T>
const std::array<T, 9 * points(M)>& weight_gradient_matrix() {  // G^T W G
  static const auto matrix = transform_matrix<T, points(M), 9>(&winograd::weight_gradient_transform<M, double>);
  return matrix;
}
// Input channels per block of filters transformed together.
constexpr std::int64_t kFilterBlock = 64;

// U[xi][grp][o][i] = (G f G^T)[xi] for the filter the pass's correlation
// applies to input channel i of group grp for output channel o. Forward: f is
// w[grp*outg + o][i]. Backward-data: f is w[grp*ing + i][o] rotated by 180
// degrees (the correlation runs from K channels of dy to C channels of dx).
//
// One filter at a time through filter_transform took about a hundred scalar
// instructions, and with the other thread waiting, an eighth of conv4's
// forward at batch 32. So the filters of one output channel go through
// together, in parallel over output channels: their taps are transposed to
// taps x channels, and each point is a row of the matrix above times that,
// in SIMD lanes along the input channels.
template <int M, typename T>
void transform_filters(const TileGeometry& g, const T* w, bool rotate_and_transpose, bool parallel, T* U) {
  constexpr int kPoints = points(M);
  constexpr std::int64_t kBlock = kFilterBlock;
  const std::array<T, kPoints * 9>& matrix = filter_transform_matrix<M, T>();
  const std::int64_t ing = g.in_per_group(), outg = g.out_per_group();
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (std::int64_t grp = 0; grp < g.groups; ++grp) {
    for (std::int64_t o = 0; o < outg; ++o) {
      for (std::int64_t i0 = 0; i0 < ing; i0 += kBlock) {
        const std::int64_t n = std::min(kBlock, ing - i0);
        T taps[9][kBlock];
        for (std::int64_t l = 0; l < n; ++l) {
          const std::int64_t i = i0 + l;
          if (rotate_and_transpose) {
            const T* src = w + ((grp * ing + i) * outg + o) * 9;
            for (int k = 0; k < 9; ++k) taps[k][l] = src[8 - k];
          } else {
            const T* src = w + ((grp * outg + o) * ing + i) * 9;
            for (int k = 0; k < 9; ++k) taps[k][l] = src[k];
          }
        }
        for (int xi = 0; xi < kPoints; ++xi) {
          T* dst = U + ((xi * g.groups + grp) * outg + o) * ing + i0;
          std::fill(dst, dst + n, T(0));
          for (int k = 0; k < 9; ++k) {
            const T weight = matrix[xi * 9 + k];
            if (weight == T(0)) continue;  // G has zeros: about 40% of the matrix for F(4x4)
#pragma omp simd
            for (std::int64_t l = 0; l < n; ++l) dst[l] += weight * taps[k][l];
          }
        }
      }
    }
  }
}

// The tiles t0 .. t0+count-1 of a chunk as runs of adjacent tiles in one
// tile row of one image. The transforms work a run at a time: its rows of
// input are contiguous, so a run's tiles are transformed side by side in SIMD
// lanes, and write each point's values for consecutive tiles contiguously.
struct TileRun {
  std::int64_t j0, count;    // chunk columns j0 .. j0+count-1
  std::int64_t image, p, q;  // first output row and column of the first tile
};
struct ChunkTiles {
  TileRun runs[kMaxChunkTiles];
  std::int64_t n_runs = 0, count;
  ChunkTiles(const TileGeometry& g, std::int64_t t0, std::int64_t n_tiles) : count(n_tiles) {
    const std::int64_t per_image = g.tiles_h * g.tiles_w;
    for (std::int64_t j = 0; j < count;) {
      const std::int64_t t = t0 + j, in_image = t % per_image, tw = in_image % g.tiles_w;
      const std::int64_t length = std::min(g.tiles_w - tw, count - j);
      runs[n_runs++] = {j, length, t / per_image, g.m * (in_image / g.tiles_w), g.m * tw};
      j += length;
    }
  }
};

// The transforms below apply the 1-D transforms of winograd_transforms.h
// in two stages, each a loop of identical arithmetic over many tiles, which
// the compiler turns into SIMD (the loops are marked free of loop-carried
// dependences: their rows never overlap, but GCC cannot prove it and left
// them scalar, a third of a pass's time on conv2 of cifar10-cnn).
//
// Input side (L X L^T), down the columns first: for each run of adjacent
// tiles, the In image rows under it go through L column by column, over
// the run's whole contiguous span of columns; the a result lines hold each
// run's span at column M*j0, so tile j's window starts at column M*j of
// every line, for every tile of the chunk. Then along the rows: one sweep
// over all the chunk's tiles per line, reading M columns apart. Adjacent
// runs' spans overlap by In - M columns, so the last tile of every run but
// the chunk's last would read its right edge from the next run: its column
// stage values are saved before the next run overwrites them, and its row
// stage is redone from them after the sweep. Long sweeps matter: one run is
// 4 to 16 tiles on cifar10's layers, which leaves a per-run loop mostly in
// its scalar remainder.
//
// Output side (A^T M A), the same in reverse: down the columns of every
// tile of the chunk at once, then along the rows into M lines in which
// tile j's M outputs sit at column M*j, then each run's part of a line is
// copied into its image row with the bias.

// The shared shape of the input and output-gradient transforms: for every
// channel plane and tile j, the In x In window whose top-left corner is
// (p + row0, q + col0) for the tile's first output (p, q), with zeros outside
// the plane, goes to L X L^T through the 1-D transform `f` (In -> a values),
// and entry (i, k) of that lands at dst[(i*a + k)*point_stride + c*chunk + j].
template <int M, int In, typename T, typename Transform1d>
void transform_windows(const T* planes, std::int64_t channels, std::int64_t height, std::int64_t width,
                       std::int64_t row0, std::int64_t col0, const ChunkTiles& tiles, const StageBuffers<T>& s,
                       Transform1d f, T* dst) {
  constexpr int a = F<M>::kTile;
  const std::int64_t chunk = s.chunk, point_stride = channels * chunk, plane = height * width;
  T* const zeros = s.line(a);
  std::fill(zeros, zeros + s.line_length(), T(0));
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t r = 0; r < tiles.n_runs; ++r) {  // L X, column by column over each run's span
      const TileRun& run = tiles.runs[r];
      const T* src = planes + (run.image * channels + c) * plane;
      const std::int64_t h0 = run.p + row0, w0 = run.q + col0;
      const std::int64_t span = M * (run.count - 1) + In;
      const std::int64_t inside_begin = std::clamp<std::int64_t>(-w0, 0, span);
      const std::int64_t inside_end = std::clamp<std::int64_t>(width - w0, inside_begin, span);
      // Span columns [begin, end) from `rows` (each indexed from column
      // begin). The columns outside the plane go through the same sweep on
      // the zero line: a run has a few of them at each edge, too few for
      // the memset calls that filling them took (3% of a training step).
      T* lines[a];
      for (int i = 0; i < a; ++i) lines[i] = s.line(i) + M * run.j0;
      auto sweep = [&](const T* const* rows, std::int64_t begin, std::int64_t end) {
CONVKIT_IVDEP
        for (std::int64_t t = 0; t < end - begin; ++t) {
          T x[In], v[a];
          for (int b = 0; b < In; ++b) x[b] = rows[b][t];
          f(x, v);
          for (int i = 0; i < a; ++i) lines[i][begin + t] = v[i];
        }
      };
      const T* rows[In];
      const T* zero_rows[In];
      for (int b = 0; b < In; ++b) {
        const std::int64_t h = h0 + b;
        rows[b] = h >= 0 && h < height ? src + h * width + w0 + inside_begin : zeros;
        zero_rows[b] = zeros;
        // The same rows of the next channel, wanted one pass over the runs
        // from now: each run reads only a few cache lines per row, too
        // short a stream for the hardware prefetchers (conv2 of cifar10-cnn
        // 6-12% faster per pass; conv3-4, with 900-byte planes, level).
        if (c + 1 < channels && rows[b] != zeros) {
          const char* next = reinterpret_cast<const char*>(rows[b] + plane);
          const std::int64_t bytes = (inside_end - inside_begin) * static_cast<std::int64_t>(sizeof(T));
          for (std::int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(next + off, 0, 3);
        }
      }
      sweep(zero_rows, 0, inside_begin);
      sweep(rows, inside_begin, inside_end);
      sweep(zero_rows, inside_end, span);
      if (r + 1 < tiles.n_runs) {  // the last tile's window, before the next run overwrites its right edge
        T* saved = s.saved_window(r);
        for (int i = 0; i < a; ++i) {
          const T* window = s.line(i) + M * (run.j0 + run.count - 1);
          for (int b = 0; b < In; ++b) saved[i * In + b] = window[b];
        }
      }
    }
    T* channel_dst = dst + c * chunk;
    for (int i = 0; i < a; ++i) {  // (L X) L^T, along the rows of every tile of the chunk
      const T* line = s.line(i);
      T* out[a];
      for (int k = 0; k < a; ++k) out[k] = channel_dst + (i * a + k) * point_stride;
CONVKIT_IVDEP
      for (std::int64_t j = 0; j < tiles.count; ++j) {
        T x[In], v[a];
        for (int b = 0; b < In; ++b) x[b] = line[M * j + b];
        f(x, v);
        for (int k = 0; k < a; ++k) out[k][j] = v[k];
      }
      // The saved windows' row i, into the same a rows of dst while they
      // are in cache: rows a point apart often share L1 sets, and
      // storing all a*a entries of one tile at a time ran 1.3x slower
      // end to end on conv4 of cifar10-cnn.
      for (std::int64_t r = 0; r + 1 < tiles.n_runs; ++r) {
        const std::int64_t j = tiles.runs[r].j0 + tiles.runs[r].count - 1;
        T v[a];
        f(s.saved_window(r) + i * In, v);
        for (int k = 0; k < a; ++k) out[k][j] = v[k];
      }
    }
  }
}

// V[xi][c][j] = (B^T D B)[xi] for the a x a patch D of input channel c under
// tile j of the chunk. Patches that cross the plane's edge read zeros there.
template <int M, typename T>
void transform_inputs(const TileGeometry& g, const T* in, const ChunkTiles& tiles, const StageBuffers<T>& s, T* V) {
  transform_windows<M, F<M>::kTile>(in, g.in_channels, g.in_h, g.in_w, -g.off_h, -g.off_w, tiles, s,
                                    [](const T* d, T* v) { F<M>::input_1d(d, v); }, V);
}

// Eh[xi][k][j] = (A E A^T)[xi] for the m x m block E of output-gradient
// channel k at tile j; where m does not divide P or Q the block's part
// outside the plane is zero.
template <int M, typename T>
void transform_output_gradients(const TileGeometry& g, const T* dy, const ChunkTiles& tiles,
                                const StageBuffers<T>& s, T* Eh) {
  transform_windows<M, M>(dy, g.out_channels, g.out_h, g.out_w, 0, 0, tiles, s,
                          [](const T* e, T* v) { F<M>::output_gradient_1d(e, v); }, Eh);
}

// out = A^T M A (+ bias) for every output channel and tile of the chunk,
// writing only the positions inside the plane.
template <int M, typename T>
void transform_outputs(const TileGeometry& g, const T* products, const ChunkTiles& tiles, const StageBuffers<T>& s,
                       const T* bias, T* out) {
  const std::int64_t chunk = s.chunk;
  constexpr int a = F<M>::kTile;
  const std::int64_t point_stride = g.out_channels * chunk;
  const std::int64_t plane = g.out_h * g.out_w;
  for (std::int64_t k = 0; k < g.out_channels; ++k) {
    const T bias_k = bias != nullptr ? bias[k] : T(0);
    const T* src = products + k * chunk;
    for (int b = 0; b < a; ++b) {  // A^T M, column by column
      const T* in[a];
      T* stage_out[M];
      for (int i = 0; i < a; ++i) in[i] = src + (i * a + b) * point_stride;
      for (int i = 0; i < M; ++i) stage_out[i] = s.at(i, b);
CONVKIT_IVDEP
      for (std::int64_t j = 0; j < tiles.count; ++j) {
        T m[a], y[M];
        for (int i = 0; i < a; ++i) m[i] = in[i][j];
        F<M>::output_1d(m, y);
        for (int i = 0; i < M; ++i) stage_out[i][j] = y[i];
      }
    }
    for (int i = 0; i < M; ++i) {  // (A^T M) A, row by row, tile j's outputs at column M*j
      const T* in[a];
      for (int b = 0; b < a; ++b) in[b] = s.at(i, b);
      T* line = s.output_line(i);
CONVKIT_IVDEP
      for (std::int64_t j = 0; j < tiles.count; ++j) {
        T m[a], y[M];
        for (int b = 0; b < a; ++b) m[b] = in[b][j];
        F<M>::output_1d(m, y);
        for (int b = 0; b < M; ++b) line[M * j + b] = y[b];
      }
    }
    for (std::int64_t r = 0; r < tiles.n_runs; ++r) {  // each run's outputs into its image rows
      const TileRun& run = tiles.runs[r];
      const int n_rows = static_cast<int>(std::min<std::int64_t>(M, g.out_h - run.p));
      const std::int64_t width = std::min(M * run.count, g.out_w - run.q);
      for (int i = 0; i < n_rows; ++i) {
        const T* line = s.output_line(i) + M * run.j0;
        T* row = out + (run.image * g.out_channels + k) * plane + (run.p + i) * g.out_w + run.q;
        for (std::int64_t t = 0; t < width; ++t) row[t] = line[t] + bias_k;
      }
    }
  }
}

// M[xi] = U[xi] * V[xi] for each point and group: (outg x ing) * (ing x count).
// Two kernels: the tap kernels' register tiles (float32, in builds that have
// them; `offsets` then holds ing row offsets of V, i * chunk), which read V
// in place and write each value of M once; or Eigen's GEMM (the simple twin,
// and the float64 path), which packs U and V for every product and needs M
// zeroed first. With the tap kernels conv2 of cifar10-cnn ran its products
// at 316 instead of 200 GFLOP/s (docs/performance-log.md, step 32).
template <typename T>
void multiply_points(const TileGeometry& g, const T* U, const T* V, std::int64_t count, std::int64_t chunk,
                     const std::vector<std::int64_t>& offsets, T* M) {
  const std::int64_t ing = g.in_per_group(), outg = g.out_per_group();
  if constexpr (std::is_same_v<T, float>) {
    if (!offsets.empty()) {
      for (std::int64_t xi = 0; xi < points(g.m); ++xi) {
        for (std::int64_t grp = 0; grp < g.groups; ++grp) {
          tap_gemm_multiply(U + (xi * g.groups + grp) * outg * ing, outg, offsets.data(), ing,
                            V + (xi * g.in_channels + grp * ing) * chunk, count,
                            M + (xi * g.out_channels + grp * outg) * chunk, chunk);
        }
      }
      return;
    }
  }
  const Eigen::OuterStride<> stride(chunk);
  // Eigen zeroes a product's destination before it accumulates into it, row
  // by row: a memset call per row of `count` values, thousands per chunk.
  // One fill of the whole buffer, then accumulating products, does the same
  // writes in one sweep.
  std::fill(M, M + points(g.m) * g.out_channels * chunk, T(0));
  for (std::int64_t xi = 0; xi < points(g.m); ++xi) {
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      ConstMatrixMap<T> u(U + (xi * g.groups + grp) * outg * ing, outg, ing);
      ConstStridedMatrixMap<T> v(V + (xi * g.in_channels + grp * ing) * chunk, ing, count, stride);
      StridedMatrixMap<T> m(M + (xi * g.out_channels + grp * outg) * chunk, outg, count, stride);
      m.noalias() += u * v;
    }
  }
}

// Whether multiply_points runs on the tap kernels for `kernel` and T.
template <typename T>
bool products_on_taps(GemmKernel kernel) {
  return std::is_same_v<T, float> && kernel != GemmKernel::eigen && tap_gemm_compiled();
}

// W[xi] += Eh[xi] * V[xi]^T for each point and group: (outg x count) * (count x ing).
template <typename T>
void accumulate_points(const TileGeometry& g, const T* Eh, const T* V, std::int64_t count, std::int64_t chunk, T* W) {
  const std::int64_t ing = g.in_per_group(), outg = g.out_per_group();
  const Eigen::OuterStride<> stride(chunk);
  for (std::int64_t xi = 0; xi < points(g.m); ++xi) {
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      MatrixMap<T> w(W + (xi * g.groups + grp) * outg * ing, outg, ing);
      ConstStridedMatrixMap<T> e(Eh + (xi * g.out_channels + grp * outg) * chunk, outg, count, stride);
      ConstStridedMatrixMap<T> v(V + (xi * g.in_channels + grp * ing) * chunk, ing, count, stride);
      w.noalias() += e * v.transpose();
    }
  }
}

// The correlation of `plan.geo` (forward, or backward-data as a forward pass).
template <int M, typename T>
void winograd_correlate(const Conv2dDesc& d, const WinogradPlan& plan, GemmKernel kernel, bool backward_data,
                        const T* in, const T* w, const T* bias, T* out, const WinogradBuffers<T>& buffers) {
  constexpr std::int64_t kPoints = points(M);
  const TileGeometry& g = plan.geo;
  transform_filters<M>(g, w, backward_data, worth_parallelising(d), buffers.filters);
  std::vector<std::int64_t> offsets;  // V's rows for the tap kernels; empty: Eigen
  if (products_on_taps<T>(kernel))
    for (std::int64_t i = 0; i < g.in_per_group(); ++i) offsets.push_back(i * plan.chunk);
  run_lanes(plan.lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool /*inner*/) {
    T* V = buffers.inputs + slot * kPoints * g.in_channels * plan.chunk;
    T* products = buffers.products + slot * kPoints * g.out_channels * plan.chunk;
    const StageBuffers<T> stage = stage_buffers(buffers, plan, slot);
    for (std::int64_t c = lane; c < plan.chunks(); c += plan.lanes) {
      const std::int64_t t0 = c * plan.chunk;
      const ChunkTiles tiles(g, t0, std::min(plan.chunk, g.tiles() - t0));
      transform_inputs<M>(g, in, tiles, stage, V);
      multiply_points(g, buffers.filters, V, tiles.count, plan.chunk, offsets, products);
      transform_outputs<M>(g, products, tiles, stage, bias, out);
    }
  });
}

// The bias gradient comes out of Eh as well: row 1 of A is all ones, so
// point (1, 1) of A E A^T is the sum of the tile's block E of dy. Summing
// that point over the tiles (in double, per lane, the lanes in order) reads
// a few KB of a chunk that is in cache, where a separate sum over dy read
// the whole tensor from memory again (0.8 of conv2's 8.3 ms at batch 128).
template <int M>
constexpr std::int64_t kBlockSumPoint = F<M>::kTile + 1;

template <int M, typename T>
void winograd_backward_weights(const Conv2dDesc& d, const WinogradPlan& plan, const T* x, const T* dy, T* dw, T* db,
                               const WinogradBuffers<T>& buffers) {
  constexpr std::int64_t kPoints = points(M);
  const TileGeometry& g = plan.geo;
  const std::int64_t filter_elems = g.filter_elems();
  run_lanes(plan.lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool /*inner*/) {
    T* V = buffers.inputs + slot * kPoints * g.in_channels * plan.chunk;
    T* Eh = buffers.products + slot * kPoints * g.out_channels * plan.chunk;
    const StageBuffers<T> stage = stage_buffers(buffers, plan, slot);
    T* W = buffers.accumulators + lane * filter_elems;
    std::fill(W, W + filter_elems, T(0));
    double* bias_sums = buffers.bias_sums + lane * g.out_channels;
    std::fill(bias_sums, bias_sums + g.out_channels, 0.0);
    for (std::int64_t c = lane; c < plan.chunks(); c += plan.lanes) {
      const std::int64_t t0 = c * plan.chunk;
      const ChunkTiles tiles(g, t0, std::min(plan.chunk, g.tiles() - t0));
      transform_inputs<M>(g, x, tiles, stage, V);
      transform_output_gradients<M>(g, dy, tiles, stage, Eh);
      accumulate_points(g, Eh, V, tiles.count, plan.chunk, W);
      if (db != nullptr) {
        const T* block_sums = Eh + kBlockSumPoint<M> * g.out_channels * plan.chunk;
        for (std::int64_t k = 0; k < g.out_channels; ++k)
          bias_sums[k] += sum_in_double(block_sums + k * plan.chunk, tiles.count);
      }
    }
  });
  if (db != nullptr) {
    for (std::int64_t k = 0; k < g.out_channels; ++k) {
      double sum = 0;
      for (std::int64_t lane = 0; lane < plan.lanes; ++lane) sum += buffers.bias_sums[lane * g.out_channels + k];
      db[k] = static_cast<T>(sum);
    }
  }
  // Each filter's points summed over the lanes in lane order (so the result
  // does not depend on the thread count), then taken back to 3x3 by the
  // matrix G^T . G, for a block of input channels at a time in SIMD lanes
  // and in parallel over output channels, as in transform_filters.
  constexpr std::int64_t kBlock = kFilterBlock;
  const std::array<T, 9 * kPoints>& matrix = weight_gradient_matrix<M, T>();
  const std::int64_t ing = g.in_per_group(), outg = g.out_per_group();
#pragma omp parallel for collapse(2) schedule(static) if (worth_parallelising(d))
  for (std::int64_t grp = 0; grp < g.groups; ++grp) {
    for (std::int64_t o = 0; o < outg; ++o) {
      for (std::int64_t i0 = 0; i0 < ing; i0 += kBlock) {
        const std::int64_t n = std::min(kBlock, ing - i0);
        T taps[9][kBlock] = {};
        T point_row[kBlock];
        for (int xi = 0; xi < kPoints; ++xi) {
          const T* lane_row = buffers.accumulators + ((xi * g.groups + grp) * outg + o) * ing + i0;
          std::copy(lane_row, lane_row + n, point_row);
          for (std::int64_t lane = 1; lane < plan.lanes; ++lane) {
            lane_row += filter_elems;
#pragma omp simd
            for (std::int64_t l = 0; l < n; ++l) point_row[l] += lane_row[l];
          }
          for (int k = 0; k < 9; ++k) {
            const T weight = matrix[k * kPoints + xi];
            if (weight == T(0)) continue;
#pragma omp simd
            for (std::int64_t l = 0; l < n; ++l) taps[k][l] += weight * point_row[l];
          }
        }
        T* dst = dw + ((grp * outg + o) * ing + i0) * 9;
        for (std::int64_t l = 0; l < n; ++l)
          for (int k = 0; k < 9; ++k) dst[l * 9 + k] = taps[k][l];
      }
    }
  }
}

// Plans `pass`, carves the workspace and runs it with the plan's tile size.
// db: backward-weights' bias gradient, or nullptr.
template <typename T>
void winograd_pass(const Conv2dDesc& d, ConvPass pass, int forced_tile, GemmKernel kernel, const T* a, const T* b,
                   const T* bias, T* out, T* db, void* workspace) {
  const WinogradPlan plan = plan_winograd<T>(d, pass, forced_tile);
  const WinogradBuffers<T> buffers = carve_winograd<T>(plan, pass, workspace);
  auto run = [&]<int M>() {
    if (pass == ConvPass::backward_weights) {
      winograd_backward_weights<M>(d, plan, a, b, out, db, buffers);
    } else {
      winograd_correlate<M>(d, plan, kernel, pass == ConvPass::backward_data, a, b, bias, out, buffers);
    }
  };
  if (plan.geo.m == 4) {
    run.template operator()<4>();
  } else {
    run.template operator()<2>();
  }
}

class WinogradConv final : public ConvAlgorithm {
 public:
  // forced_tile: 2 or 4 runs every pass with that output tile; 0 chooses per
  // pass. kernel: the products' GEMM kernel (multiply_points).
  WinogradConv(int forced_tile, GemmKernel kernel) : forced_tile_(forced_tile), kernel_(kernel) {}
  ConvAlgo algo() const override { return ConvAlgo::winograd; }

  Support supports(const Conv2dDesc& desc) const override {
    try {
      desc.validate("conv2d (cpu, winograd)");
    } catch (const Error& e) {
      return Support::no(e.what());
    }
    return conv::winograd_shape_support(desc);
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    const Support support = supports(desc);
    CK_CHECK(support.ok, conv_op_name(algo(), pass), ": not supported: ", support.reason, "; descriptor: ", desc.str());
    std::size_t bytes = 0;
    dispatch_floating(dtype, [&]<typename T>() {
      bytes = carve_winograd<T>(plan_winograd<T>(desc, pass, forced_tile_), pass, nullptr).bytes;
    });
    return bytes;
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b, void* y,
               void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::forward, {{x, "x"}, {w, "w"}, {y, "y"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      winograd_pass<T>(desc, ConvPass::forward, forced_tile_, kernel_, static_cast<const T*>(x), static_cast<const T*>(w),
                       static_cast<const T*>(b), static_cast<T*>(y), nullptr, workspace);
    });
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_data, {{dy, "dy"}, {w, "w"}, {dx, "dx"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      winograd_pass<T>(desc, ConvPass::backward_data, forced_tile_, kernel_, static_cast<const T*>(dy),
                       static_cast<const T*>(w), nullptr, static_cast<T*>(dx), nullptr, workspace);
    });
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw, void* db,
                        void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_weights, {{x, "x"}, {dy, "dy"}, {dw, "dw"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      winograd_pass<T>(desc, ConvPass::backward_weights, forced_tile_, kernel_, static_cast<const T*>(x),
                       static_cast<const T*>(dy), nullptr, static_cast<T*>(dw), static_cast<T*>(db), workspace);
    });
  }

 private:
  int forced_tile_;
  GemmKernel kernel_;
};

}  // namespace

const ConvAlgorithm& winograd_conv_algorithm_with(int output_tile, GemmKernel kernel) {
  CK_CHECK(output_tile == 0 || output_tile == 2 || output_tile == 4, "winograd_conv_algorithm_with: output tile ",
           output_tile, " is not 0 (per pass), 2 or 4");
  static const WinogradConv variants[3][3] = {
      {{0, GemmKernel::automatic}, {0, GemmKernel::eigen}, {0, GemmKernel::taps}},
      {{2, GemmKernel::automatic}, {2, GemmKernel::eigen}, {2, GemmKernel::taps}},
      {{4, GemmKernel::automatic}, {4, GemmKernel::eigen}, {4, GemmKernel::taps}}};
  return variants[output_tile / 2][static_cast<int>(kernel)];
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
