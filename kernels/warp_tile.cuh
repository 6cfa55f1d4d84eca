#pragma once
// The three levels of a SIMT warp-tiled product, named in types as CUTLASS
// names them: a block tile (GemmShape), split into warp tiles (WarpShape),
// split into thread tiles (ThreadShape). GEMM versions 4-7
// (kernels/gemm_warp_tiled.cu) and the implicit-GEMM convolution's version 5
// (kernels/conv2d_implicit_gemm_pipelined.cuh) share them, and share the
// inner loop, multiply_stage: why its shared-memory reads are conflict-free
// is at the head of gemm_warp_tiled.cu.
#include "convkit/sim/cuda_compat.h"
#include "kernels/device_math.cuh"
#include "kernels/vector_access.cuh"

namespace convkit::CK_GPU_NS::warp_tile {

template <int M, int N, int K>
struct GemmShape {
  static constexpr int kM = M, kN = N, kK = K;
};
template <int M, int N>
struct WarpShape {
  static constexpr int kM = M, kN = N;
};
template <int M, int N>
struct ThreadShape {
  static constexpr int kM = M, kN = N;
};

template <class Block, class Warp, class Thread, int MinBlocks>
struct TileConfig {
  using BlockTile = Block;
  using WarpTile = Warp;
  using ThreadTile = Thread;
  static constexpr int kWarpsM = Block::kM / Warp::kM, kWarpsN = Block::kN / Warp::kN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kLanesM = Warp::kM / Thread::kM, kLanesN = Warp::kN / Thread::kN;
  static constexpr int kMinBlocks = MinBlocks;  // blocks per SM that __launch_bounds__ asks for
  static_assert(kLanesM * kLanesN == 32, "a warp tile is 32 thread tiles");
  static_assert(kLanesM <= 8 && kLanesN <= 8, "a fragment load reads at most 128 distinct bytes");
};

// Where a thread's fragments start in the block tile, and where its
// accumulator (i, j) lands: a thread's TM rows are groups of V (16 bytes)
// spaced by kLanesM * V, and likewise its columns.
template <typename T, class Cfg>
struct ThreadOrigin {
  static constexpr int V = dev::kVec16<T>;
  int tm0, tn0;
  __device__ __forceinline__ ThreadOrigin() {
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    tm0 = warp / Cfg::kWarpsN * Cfg::WarpTile::kM + lane / Cfg::kLanesN * V;
    tn0 = warp % Cfg::kWarpsN * Cfg::WarpTile::kN + lane % Cfg::kLanesN * V;
  }
  __device__ __forceinline__ int row(int i) const { return tm0 + i / V * Cfg::kLanesM * V + i % V; }
  __device__ __forceinline__ int col(int j) const { return tn0 + j / V * Cfg::kLanesN * V + j % V; }
};

// acc += As^T Bs over one stage: As[k][m] and Bs[k][n], k-major, rows of
// row_a and row_b elements, BK deep.
template <typename T, class Cfg, int RowA, int RowB>
__device__ __forceinline__ void multiply_stage(const T* as, const T* bs, const ThreadOrigin<T, Cfg>& o,
                                               T (&acc)[Cfg::ThreadTile::kM][Cfg::ThreadTile::kN]) {
  constexpr int V = dev::kVec16<T>;
  constexpr int TM = Cfg::ThreadTile::kM, TN = Cfg::ThreadTile::kN;
  static_assert(TM % V == 0 && TN % V == 0, "thread tiles are whole 16-byte groups");
  CK_UNROLL
  for (int k = 0; k < Cfg::BlockTile::kK; ++k) {
    T af[TM], bf[TN];
    CK_UNROLL
    for (int g = 0; g < TM / V; ++g) dev::load16(as + k * RowA + o.tm0 + g * Cfg::kLanesM * V, af + g * V);
    CK_UNROLL
    for (int g = 0; g < TN / V; ++g) dev::load16(bs + k * RowB + o.tn0 + g * Cfg::kLanesN * V, bf + g * V);
    CK_UNROLL
    for (int i = 0; i < TM; ++i)
      CK_UNROLL
      for (int j = 0; j < TN; ++j) acc[i][j] = dev::fma(af[i], bf[j], acc[i][j]);
  }
}

}  // namespace convkit::CK_GPU_NS::warp_tile
