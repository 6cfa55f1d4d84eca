// Winograd convolution kernels, F(2x2,3x3) and F(4x4,3x3) (the maths is in
// docs/algorithms/winograd.md; the cpu twin is src/cpu/conv/conv_winograd.cpp).
//
// A pass is a sequence of one-purpose kernels per chunk of tiles:
//   filters   U = G g G^T per (out, in) channel pair, once per pass
//   inputs    V = B^T D B per (channel, tile): D the a x a input patch, zero outside
//   products  M[xi] = U[xi] V[xi] per point xi < a*a and group (a = m + 2)
//   outputs   Y = A^T M A per (channel, tile), clipped to the plane, plus bias
// Backward-weights transforms dy blocks (A E A^T) instead of outputs, sums
// W[xi] += E[xi] V[xi]^T over chunks, and takes W back to 3x3 (G^T W G).
// Every transform thread handles one (channel, tile); consecutive threads take
// consecutive tiles, so the point-major stores [xi][channel][tile] coalesce.
// The transforms multiply by the matrices B^T, G and A^T with plain loops
// (the simple form; the 1-D transforms of src/cpu/conv/winograd_transforms.h
// are the same matrices written out).
//
// Floors, per tile and channel pair (I inputs, O outputs, g groups, a*a points):
//   products   a*a * (I/g) multiply-adds per output channel and tile: 16 for
//              F(2x2), 36 for F(4x4), against 9*m*m (36, 144) for direct
//   transforms a*a values written per input channel and tile (inputs) and
//              read per output channel and tile (outputs): the stage traffic,
//              a*a/(m*m) (4x for F(2x2), 2.25x for F(4x4)) the size of the
//              activations they replace, read and written once each
//
// Versions ("conv2d_winograd"):
//   v1  the products with one thread per value of M (or W), a plain dot
//       product over channels (or tiles) from global memory.
//   v2  the products as the "gemm" family's batched tiled GEMM, one launch per
//       group over the a*a points: each value staged in shared memory serves
//       a whole tile of products. The transforms are v1's. Below the highest
//       float32 precision (allow_tf32) the products run on the tensor-core
//       GEMM in tf32 (winograd_products_precision), as cuDNN's
//       WINOGRAD_NONFUSED runs on tensor cores under its tensor-op math:
//       the products are where the time goes (F(4x4): 36 I O multiply-adds
//       per tile, I and O the group's channels, against the transforms'
//       36 (I + O) values moved), and the tensor cores multiply tf32 several
//       times faster than the FP32 units. v1 stays strict, the twin the
//       others are checked against.
#include <string>

#include "convkit/backend/kernel_versions.h"
#include "kernels/conv2d_winograd.cuh"
#include "kernels/device_math.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/gemm.cuh"
#include "kernels/gemm_tensor_core.cuh"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;

constexpr int kVersions = 2;
constexpr unsigned kThreads = 256;

__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// B^T (a x a), G (a x 3) and A^T (m x a) of F(m x m, 3x3), as in
// src/cpu/conv/winograd_transforms.h. Built in registers per thread: loops
// over them unroll and the constants fold.
template <int M, typename T>
struct Matrices;

template <typename T>
struct Matrices<2, T> {
  T bt[4][4], g[4][3], at[2][4];
  __device__ Matrices()
      : bt{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
        g{{1, 0, 0}, {T(0.5), T(0.5), T(0.5)}, {T(0.5), T(-0.5), T(0.5)}, {0, 0, 1}},
        at{{1, 1, 1, 0}, {0, 1, -1, -1}} {}
};

template <typename T>
struct Matrices<4, T> {
  T bt[6][6], g[6][3], at[4][6];
  __device__ Matrices()
      : bt{{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
           {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}},
        g{{T(1) / T(4), 0, 0},
          {-T(1) / T(6), -T(1) / T(6), -T(1) / T(6)},
          {-T(1) / T(6), T(1) / T(6), -T(1) / T(6)},
          {T(1) / T(24), T(1) / T(12), T(1) / T(6)},
          {T(1) / T(24), -T(1) / T(12), T(1) / T(6)},
          {0, 0, 1}},
        at{{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}} {}
};

template <typename T>
struct FilterArgs {
  const T* w;
  int O, I;
  bool flip;
  int Cg, Kg;
};

// One thread per (o, i): U[xi][o][i] = (G g G^T)[xi].
template <int M, typename T>
__global__ void filter_transform(FilterArgs<T> f, T* U) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = static_cast<int64_t>(f.O) * f.I;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int o = static_cast<int>(e / f.I), i = static_cast<int>(e % f.I);
    T g[3][3];
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 3; ++s) {
        g[r][s] = f.flip ? f.w[((static_cast<int64_t>(o / f.Cg) * f.Kg + i) * f.Cg + o % f.Cg) * 9 + (2 - r) * 3 +
                               (2 - s)]
                         : f.w[e * 9 + r * 3 + s];
      }
    }
    T gg[A][3];  // G g
    for (int x = 0; x < A; ++x)
      for (int s = 0; s < 3; ++s) gg[x][s] = mat.g[x][0] * g[0][s] + mat.g[x][1] * g[1][s] + mat.g[x][2] * g[2][s];
    for (int x = 0; x < A; ++x)
      for (int y = 0; y < A; ++y)
        U[(static_cast<int64_t>(x * A + y) * f.O + o) * f.I + i] =
            gg[x][0] * mat.g[y][0] + gg[x][1] * mat.g[y][1] + gg[x][2] * mat.g[y][2];
  }
}

// Where tile t (numbered across the batch) sits: image n, first output (p, q).
struct TilePlace {
  int64_t n;
  int p, q;
};
__device__ __forceinline__ TilePlace place(const WinogradGeometry& g, int64_t t) {
  const int64_t per_image = static_cast<int64_t>(g.tiles_h) * g.tiles_w;
  const int rest = static_cast<int>(t % per_image);
  return {t / per_image, (rest / g.tiles_w) * g.m, (rest % g.tiles_w) * g.m};
}

// One thread per (channel, tile): V[xi][c][j] = (B^T D B)[xi].
template <int M, typename T>
__global__ void input_transform(WinogradGeometry g, const T* in, int64_t t0, int64_t count, int64_t pitch, T* V) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = g.in_channels * count;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int c = static_cast<int>(e / count);
    const int64_t j = e % count;
    const TilePlace at = place(g, t0 + j);
    const T* plane = in + (at.n * g.in_channels + c) * g.in_h * g.in_w;
    T d[A][A];
    for (int x = 0; x < A; ++x) {
      const int h = at.p - g.off_h + x;
      for (int y = 0; y < A; ++y) {
        const int w = at.q - g.off_w + y;
        d[x][y] = (h >= 0 && h < g.in_h && w >= 0 && w < g.in_w) ? plane[static_cast<int64_t>(h) * g.in_w + w] : T(0);
      }
    }
    T bd[A][A];  // B^T D
    for (int x = 0; x < A; ++x) {
      for (int y = 0; y < A; ++y) {
        T sum = 0;
        for (int k = 0; k < A; ++k) sum += mat.bt[x][k] * d[k][y];
        bd[x][y] = sum;
      }
    }
    for (int x = 0; x < A; ++x) {
      for (int y = 0; y < A; ++y) {
        T sum = 0;
        for (int k = 0; k < A; ++k) sum += bd[x][k] * mat.bt[y][k];
        V[(static_cast<int64_t>(x * A + y) * g.in_channels + c) * pitch + j] = sum;
      }
    }
  }
}

// One thread per (channel, tile): the m x m outputs A^T M A, clipped, plus bias.
template <int M, typename T>
__global__ void output_transform(WinogradGeometry g, const T* Mx, const T* bias, int64_t t0, int64_t count,
                                 int64_t pitch, T* out) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = g.out_channels * count;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int o = static_cast<int>(e / count);
    const int64_t j = e % count;
    T am[M][A];  // A^T M
    for (int x = 0; x < M; ++x)
      for (int y = 0; y < A; ++y) am[x][y] = 0;
    for (int k = 0; k < A; ++k) {
      for (int y = 0; y < A; ++y) {
        const T v = Mx[(static_cast<int64_t>(k * A + y) * g.out_channels + o) * pitch + j];
        for (int x = 0; x < M; ++x) am[x][y] += mat.at[x][k] * v;
      }
    }
    const TilePlace at = place(g, t0 + j);
    T* plane = out + (at.n * g.out_channels + o) * g.out_h * g.out_w;
    const T b = bias != nullptr ? bias[o] : T(0);
    for (int x = 0; x < M && at.p + x < g.out_h; ++x) {
      for (int y = 0; y < M && at.q + y < g.out_w; ++y) {
        T sum = 0;
        for (int k = 0; k < A; ++k) sum += am[x][k] * mat.at[y][k];
        plane[static_cast<int64_t>(at.p + x) * g.out_w + at.q + y] = sum + b;
      }
    }
  }
}

// One thread per (channel, tile): E[xi][o][j] = (A E A^T)[xi] of the m x m
// block of dy at the tile, zero past the plane.
template <int M, typename T>
__global__ void output_gradient_transform(WinogradGeometry g, const T* dy, int64_t t0, int64_t count, int64_t pitch,
                                          T* E) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = g.out_channels * count;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int o = static_cast<int>(e / count);
    const int64_t j = e % count;
    const TilePlace at = place(g, t0 + j);
    const T* plane = dy + (at.n * g.out_channels + o) * g.out_h * g.out_w;
    T blk[M][M];
    for (int x = 0; x < M; ++x)
      for (int y = 0; y < M; ++y)
        blk[x][y] = (at.p + x < g.out_h && at.q + y < g.out_w)
                        ? plane[static_cast<int64_t>(at.p + x) * g.out_w + at.q + y]
                        : T(0);
    T ae[A][M];  // A E
    for (int x = 0; x < A; ++x) {
      for (int y = 0; y < M; ++y) {
        T sum = 0;
        for (int k = 0; k < M; ++k) sum += mat.at[k][x] * blk[k][y];
        ae[x][y] = sum;
      }
    }
    for (int x = 0; x < A; ++x) {
      for (int y = 0; y < A; ++y) {
        T sum = 0;
        for (int k = 0; k < M; ++k) sum += ae[x][k] * mat.at[k][y];
        E[(static_cast<int64_t>(x * A + y) * g.out_channels + o) * pitch + j] = sum;
      }
    }
  }
}

// One thread per (o, i): dw[o][i] = G^T W G.
template <int M, typename T>
__global__ void weight_transform(int O, int I, const T* W, T* dw) {
  constexpr int A = M + 2;
  const Matrices<M, T> mat;
  const int64_t total = static_cast<int64_t>(O) * I;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    T gw[3][A];  // G^T W
    for (int r = 0; r < 3; ++r)
      for (int y = 0; y < A; ++y) gw[r][y] = 0;
    for (int x = 0; x < A; ++x) {
      for (int y = 0; y < A; ++y) {
        const T v = W[static_cast<int64_t>(x * A + y) * total + e];
        for (int r = 0; r < 3; ++r) gw[r][y] += mat.g[x][r] * v;
      }
    }
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 3; ++s) {
        T sum = 0;
        for (int y = 0; y < A; ++y) sum += gw[r][y] * mat.g[y][s];
        dw[e * 9 + r * 3 + s] = sum;
      }
    }
  }
}

// v1: one thread per (xi, o, j), a dot product over o's group of channels.
// Consecutive threads take consecutive tiles: V loads and M stores coalesce,
// the U load is a broadcast.
template <typename T>
__global__ void products_naive(WinogradGeometry g, int points, const T* U, const T* V, int64_t count, int64_t pitch,
                               T* Mx) {
  const int O = g.out_channels, C = g.in_channels, Og = O / g.groups, Ig = C / g.groups;
  const int64_t total = static_cast<int64_t>(points) * O * count;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t j = e % count;
    const int64_t row = e / count;  // xi * O + o
    const int o = static_cast<int>(row % O), xi = static_cast<int>(row / O);
    const T* u = U + row * Ig;
    const T* v = V + (static_cast<int64_t>(xi) * C + (o / Og) * Ig) * pitch + j;
    T acc = 0;
    for (int i = 0; i < Ig; ++i) acc = dev::fma(u[i], v[i * pitch], acc);
    Mx[row * pitch + j] = acc;
  }
}

// v1: one thread per (xi, o, i), a dot product over the chunk's tiles.
template <typename T>
__global__ void weight_products_naive(WinogradGeometry g, int points, const T* E, const T* V, int64_t count,
                                      int64_t pitch, bool accumulate, T* W) {
  const int O = g.out_channels, C = g.in_channels, Og = O / g.groups, Ig = C / g.groups;
  const int64_t total = static_cast<int64_t>(points) * O * Ig;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int i = static_cast<int>(e % Ig);
    const int64_t row = e / Ig;  // xi * O + o
    const int o = static_cast<int>(row % O), xi = static_cast<int>(row / O);
    const T* ev = E + row * pitch;
    const T* v = V + (static_cast<int64_t>(xi) * C + (o / Og) * Ig + i) * pitch;
    T acc = 0;
    for (int64_t j = 0; j < count; ++j) acc = dev::fma(ev[j], v[j], acc);
    W[e] = accumulate ? W[e] + acc : acc;
  }
}

template <typename Kernel, typename... Args>
void grid_launch(Kernel kernel, int64_t n, Args... args) {
  const LaunchShape shape = grid_stride_shape(n, kThreads, 65535);
  launch(kernel, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, args...);
}

// Calls f.template operator()<M>() for the tile side m (2 or 4).
template <typename F>
void dispatch_tile(int m, F&& f) {
  CK_CHECK(m == 2 || m == 4, "conv2d_winograd: output tile ", m, " is not 2 or 4");
  if (m == 4) {
    f.template operator()<4>();
  } else {
    f.template operator()<2>();
  }
}

void check_version(int version) {
  CK_CHECK(version >= 1 && version <= kVersions, "conv2d_winograd: no version ", version, " (versions are 1 to ",
           kVersions, ")");
}

int points_of(int m) { return (m + 2) * (m + 2); }

// v2's batched products: the strict "gemm" family, or the tensor-core GEMM
// rounding to `rounding`.
void launch_products(DType dtype, std::optional<TensorCorePrecision> rounding, const GemmArgs& a) {
  if (rounding) {
    launch_gemm_tensor_core(*rounding, dtype, a);
  } else {
    launch_gemm(dtype, a);
  }
}

}  // namespace

int conv2d_winograd_version() {
  static const bool registered = [] {
    register_kernel_family({"conv2d_winograd", kVersions, 2,
                            "v1 one kernel per stage (filter, input, output transforms) and the per-point channel "
                            "products one thread per value; "
                            "v2 v1's transforms, the products as the gemm family's batched tiled GEMM"});
    return true;
  }();
  (void)registered;
  return kernel_version("conv2d_winograd");
}

void launch_winograd_filter_transform(DType dtype, int m, const WinogradFilterSource& s, void* U) {
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    const FilterArgs<T> f{static_cast<const T*>(s.w), s.O, s.I, s.flip, s.Cg, s.Kg};
    dispatch_tile(m, [&]<int M>() { grid_launch(filter_transform<M, T>, int64_t{s.O} * s.I, f, static_cast<T*>(U)); });
  });
}

void launch_winograd_input_transform(DType dtype, const WinogradGeometry& g, const void* in, int64_t t0,
                                     int64_t count, int64_t pitch, void* V) {
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    dispatch_tile(g.m, [&]<int M>() {
      grid_launch(input_transform<M, T>, g.in_channels * count, g, static_cast<const T*>(in), t0, count, pitch,
                  static_cast<T*>(V));
    });
  });
}

void launch_winograd_output_transform(DType dtype, const WinogradGeometry& g, const void* Mx, const void* bias,
                                      int64_t t0, int64_t count, int64_t pitch, void* out) {
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    dispatch_tile(g.m, [&]<int M>() {
      grid_launch(output_transform<M, T>, g.out_channels * count, g, static_cast<const T*>(Mx),
                  static_cast<const T*>(bias), t0, count, pitch, static_cast<T*>(out));
    });
  });
}

void launch_winograd_output_gradient_transform(DType dtype, const WinogradGeometry& g, const void* dy, int64_t t0,
                                               int64_t count, int64_t pitch, void* E) {
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    dispatch_tile(g.m, [&]<int M>() {
      grid_launch(output_gradient_transform<M, T>, g.out_channels * count, g, static_cast<const T*>(dy), t0, count,
                  pitch, static_cast<T*>(E));
    });
  });
}

void launch_winograd_weight_transform(DType dtype, int m, int O, int I, const void* W, void* dw) {
  dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
    using T = decltype(tag);
    dispatch_tile(m, [&]<int M>() {
      grid_launch(weight_transform<M, T>, int64_t{O} * I, O, I, static_cast<const T*>(W), static_cast<T*>(dw));
    });
  });
}

std::optional<TensorCorePrecision> winograd_products_precision(int version, DType dtype, Float32Precision precision) {
  if (version < 2 || dtype != DType::float32 || precision == Float32Precision::highest) return std::nullopt;
  return TensorCorePrecision::tf32;
}

void launch_winograd_products(int version, DType dtype, Float32Precision precision, const WinogradGeometry& g,
                              const void* U, const void* V, int64_t count, int64_t pitch, void* Mx) {
  check_version(version);
  const int points = points_of(g.m);
  if (version == 1) {
    dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
      using T = decltype(tag);
      grid_launch(products_naive<T>, int64_t{points} * g.out_channels * count, g, points, static_cast<const T*>(U),
                  static_cast<const T*>(V), count, pitch, static_cast<T*>(Mx));
    });
    return;
  }
  const int64_t Og = g.out_channels / g.groups, Ig = g.in_channels / g.groups;
  const auto size = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    GemmArgs a;
    a.M = Og, a.N = count, a.K = Ig, a.batch = points;
    a.a = static_cast<const char*>(U) + grp * Og * Ig * size, a.lda = Ig, a.stride_a = g.out_channels * Ig;
    a.b = static_cast<const char*>(V) + grp * Ig * pitch * size, a.ldb = pitch, a.stride_b = g.in_channels * pitch;
    a.c = static_cast<char*>(Mx) + grp * Og * pitch * size, a.ldc = pitch, a.stride_c = g.out_channels * pitch;
    launch_products(dtype, winograd_products_precision(version, dtype, precision), a);
  }
}

void launch_winograd_weight_products(int version, DType dtype, Float32Precision precision, const WinogradGeometry& g,
                                     const void* E, const void* V, int64_t count, int64_t pitch, bool accumulate,
                                     void* W) {
  check_version(version);
  const int points = points_of(g.m);
  if (version == 1) {
    dispatch_floating(dtype, "conv2d_winograd", [&](auto tag) {
      using T = decltype(tag);
      grid_launch(weight_products_naive<T>, int64_t{points} * g.out_channels * (g.in_channels / g.groups), g, points,
                  static_cast<const T*>(E), static_cast<const T*>(V), count, pitch, accumulate, static_cast<T*>(W));
    });
    return;
  }
  const int64_t Og = g.out_channels / g.groups, Ig = g.in_channels / g.groups;
  const auto size = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    GemmArgs a;  // W[xi] (Og x Ig) (+)= E[xi] (Og x count) * V[xi]^T (count x Ig)
    a.M = Og, a.N = Ig, a.K = count, a.batch = points;
    a.a = static_cast<const char*>(E) + grp * Og * pitch * size, a.lda = pitch, a.stride_a = g.out_channels * pitch;
    a.trans_b = true;
    a.b = static_cast<const char*>(V) + grp * Ig * pitch * size, a.ldb = pitch, a.stride_b = g.in_channels * pitch;
    a.c = static_cast<char*>(W) + grp * Og * Ig * size, a.ldc = Ig, a.stride_c = g.out_channels * Ig;
    a.beta = accumulate ? 1 : 0;
    launch_products(dtype, winograd_products_precision(version, dtype, precision), a);
  }
}

}  // namespace convkit::CK_GPU_NS
