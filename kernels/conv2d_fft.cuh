#pragma once
// Launchers of the FFT convolution kernels (kernels/conv2d_fft.cu): our own
// shared-memory Stockham FFT, the row and column passes of 2-D real
// transforms of overlap-save tiles, the per-frequency channel sums, and the
// test hooks that run the FFT alone. src/gpu/gpu_conv_fft.cpp strings them
// into the three convolution passes (docs/gpu/conv2d_fft.md).
//
// Spectra are complex arrays (interleaved re, im of the dtype) laid out
// frequency-major, [f][x]: f = row * (tile_w/2 + 1) + column of the half
// spectrum, x = which signal (channel * tiles + tile, or filter). That puts the
// values the channel sums combine next to each other.
#include <cstddef>
#include <cstdint>
#include <string>

#include "convkit/core/dtype.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Largest transform side the shared-memory FFT handles.
inline constexpr int kMaxGpuFftSize = 1024;

// The "conv2d_fft" kernel family: registers it on first use and returns the
// version to run now. v1, v2 and v4 are our own kernels; v3 is cuFFT and
// exists only in the cuda build.
int conv2d_fft_version();
// Whether `version` can run in this build; `why` says why not.
bool conv2d_fft_version_available(int version, std::string* why);
// Whether v4 transforms tile_h x tile_w tiles in one fused block (true) or,
// where a pair of them does not fit its shared memory, by v2's row and column
// passes (false).
bool fft_transform_fused(DType dtype, int tile_h, int tile_w);

// Tiles of a stack of planes ([images][channels][plane_h][plane_w]): tile m of
// the chunk (image n0 + m / tiles_per_image, tile row th, tile column tw)
// takes rows [th*step_h + offset_h, + size_h) and the matching columns of a
// plane (zero outside it) into the top-left corner of a zero tile.
struct FftTileSource {
  const void* planes;
  int channels, plane_h, plane_w;
  int step_h, step_w, offset_h, offset_w, size_h, size_w;
  int tiles_w, tiles_per_image, n0;
  std::int64_t M;  // tiles in the chunk; signal x = channel * M + m
};

// Filters as transform tiles: filter x = o * I + i has tap (r, s) at tile
// position (r * dil_h, s * dil_w). With `flip` (backward-data) the tap is
// w[g*Kg + i][o mod Cg][R-1-r][S-1-s] with g = o / Cg: the filter flipped and
// its channel roles swapped within the group. Otherwise it is w[o][i][r][s].
struct FftFilterSource {
  const void* w;
  int O, I, R, S, dil_h, dil_w;
  bool flip;
  int Cg, Kg;
};

// Where an inverse-transformed output tile goes: signal x = o * M + m, rows
// [0, out_h) and columns [0, out_w) of the tile to out[n0 + image][o] at
// (th*out_h + i, tw*out_w + j), clipped to P x Q, times `scale`, plus bias[o]
// when bias is not null.
struct FftTileSink {
  void* out;
  const void* bias;
  int O, P, Q, out_h, out_w;
  int tiles_w, tiles_per_image, n0;
  std::int64_t M;
  double scale;
};

// Filter gradients: signal x = k * Cg + c; tap (r, s) is read at tile
// position (r * dil_h, s * dil_w), times `scale`, into dw[x][r][s].
struct FftFilterSink {
  void* dw;
  int R, S, dil_h, dil_w;
  double scale;
};

// Bytes of scratch (beyond the spectra) that a transform of `batch` signals of
// tile_h x tile_w needs: 0 for our kernels; for cuFFT, the real tiles plus its
// work area. Throws Error for a version this build cannot run.
std::size_t fft_transform_scratch_bytes(int version, DType dtype, int tile_h, int tile_w, std::int64_t batch);

// spectra[f][x] = 2-D real FFT of the tiles (x < channels * M).
void launch_fft_tiles_forward(int version, DType dtype, const FftTileSource& src, int tile_h, int tile_w,
                              void* spectra, void* scratch);
// spectra[f][x] = 2-D real FFT of the filter tiles (x < O * I).
void launch_fft_filters_forward(int version, DType dtype, const FftFilterSource& src, int tile_h, int tile_w,
                                void* spectra, void* scratch);
// Inverse transforms of spectra[f][x] (x < O * M; the spectra are overwritten)
// into the output planes; unnormalised, so the sink's scale is 1/(tile_h*tile_w).
void launch_fft_tiles_inverse(int version, DType dtype, void* spectra, int tile_h, int tile_w,
                              const FftTileSink& sink, void* scratch);
// Inverse transforms of spectra[f][x] (x < batch; overwritten) into dw.
void launch_fft_filters_inverse(int version, DType dtype, void* spectra, int tile_h, int tile_w,
                                std::int64_t batch, const FftFilterSink& sink, void* scratch);

// The per-frequency channel sums, a batched complex GEMM over (f, group):
//   C[f][g](r, c) (+)= sum_k op(A[f][g](r, k)) * B[f][g](k, c),  op = conj or identity.
// Element (r, k) of A[f][g] sits at a + f*a_f + g*a_g + r*a_r + k*a_k (in
// complex elements), and likewise for B and C.
struct SpectralGemm {
  const void* a;
  const void* b;
  void* c;
  int F, groups, rows, cols, depth;
  std::int64_t a_f, a_g, a_r, a_k;
  std::int64_t b_f, b_g, b_k, b_c;
  std::int64_t c_f, c_g, c_r, c_c;
  bool conj_a;
  bool accumulate;  // C += instead of C =
};
void launch_spectral_gemm(int version, DType dtype, const SpectralGemm& gemm);

// ---- The FFT alone, for tests and docs.
// In place, count signals of n complex values each (n a power of two <= kMaxGpuFftSize):
// X[k] = sum_j x[j] exp(-+2 pi i jk / n), unnormalised; `inverse` takes the + sign.
void launch_fft_1d(DType dtype, void* data, int n, std::int64_t count, bool inverse);
// spectra[f][x] (f < tile_h * (tile_w/2 + 1)) = 2-D FFT of real tiles[x] (x < count), each tile_h x tile_w.
void launch_rfft2d(int version, DType dtype, const void* tiles, int tile_h, int tile_w, std::int64_t count,
                   void* spectra, void* scratch);
// tiles[x] = unnormalised inverse 2-D FFT of spectra[f][x], real part; spectra are overwritten.
void launch_irfft2d(int version, DType dtype, void* spectra, int tile_h, int tile_w, std::int64_t count,
                    void* tiles, void* scratch);

}  // namespace convkit::CK_GPU_NS
