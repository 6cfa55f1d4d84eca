#pragma once
// Version 4 of the implicit-GEMM convolution (kernels/conv2d_implicit_gemm.cu
// runs it): the image patch staged through shared memory.
//
// Version 3 gathers each element of the im2col operand straight from global
// memory, so a warp's 32 loads follow the output positions: they cross image
// rows, start off a 32-byte boundary after a tap shift, and step by the
// stride. Version 4 splits that gather in two:
//   1. stage: the image rows a tile needs (every row its positions reach
//      through any tap, full width) are one contiguous run of the tensor per
//      channel, copied with cp.async in aligned 16-byte chunks (4-byte where
//      the tensor is not 16-byte aligned), one warp per run; the A operand's
//      rows, contiguous runs too, are copied the same way. Whatever the
//      stride, the tap or the padding, global loads are row-contiguous.
//   2. form: the im2col tile is gathered from that patch in shared memory,
//      with the bounds tests of the padding, into the same k-major B tile as
//      version 3, and the 64x64x32 register-tiled product runs unchanged.
// The rounding to 16-byte chunks reads up to 3 floats before and after a run
// (never outside the tensor: past its end the copy zero-fills), so a run
// touches the sectors it spans and no more.
//
// Tiles never cross images, so the patch is one run per channel: forward and
// backward-data take 64 positions of one image as the tile's columns;
// backward-weights takes K-steps of 32 positions of one image. Planes under
// 32 positions would leave most of a tile empty, so they stay on version 3
// (conv2d_implicit_gemm_cannot_implement says why).
#include <cstdint>

#include "convkit/sim/cuda_compat.h"
#include "kernels/async_copy.cuh"
#include "kernels/device_math.cuh"
#include "kernels/vector_access.cuh"

namespace convkit::CK_GPU_NS::staged {

constexpr int kTileM = 64, kTileN = 64, kTileK = 32;
constexpr int kThreads = 256;
constexpr int kThreadM = 4, kThreadN = 4;
constexpr int kSide = 16;  // threads along M and along N
constexpr int kWarps = kThreads / 32;
static_assert(kSide * kThreadM == kTileM && kSide * kThreadN == kTileN && kSide * kSide == kThreads,
              "the threads must tile the output tile exactly");
// Shared memory for the patch: with the A rows and the B tile, 47 KB in
// float64 (the static limit is 48 KB), 30 KB in float32.
constexpr int kPatchBytes = 12 * 1024;
template <typename T>
inline constexpr int kPatchElems = static_cast<int>(kPatchBytes / sizeof(T));
// A row holds a K-step (32) plus the chunk rounding: 9 chunks of 16 bytes
// for float (17 for double). That odd number of chunks puts chunk f of the
// block's flattened walk (stage_a) in 16-byte bank group f mod 8, so a warp's
// 32 chunk stores hit every bank exactly 4 times (no conflict), and the two
// rows one warp reads in the inner loop (ty, ty + 1) sit 33-39 floats (66-70
// words for double) apart: different banks whatever their misalignment.
template <typename T>
inline constexpr int kARow = kTileK + dev::kVec16<T>;

// The image operand of one product, as a correlation over positions:
// B(k = (c, r, s), position (n, p, q)) = img[n][grp*Cg + c][p*ah + oh + r*th][q*aw + ow + s*tw],
// zero outside the image. Forward and backward-weights read x (ah = stride,
// oh = -pad, th = dilation); a backward-data stride phase reads dy at stride
// 1 with its taps walking backwards (th < 0).
struct PatchShape {
  int C, H, W;  // img's channels (all groups), rows, columns
  int Cg;       // img's channels per group
  int P, Q;     // positions per image
  int ah, aw, oh, ow;
  int R, S, th, tw;  // taps and their step in img
};

// The rows [lo, lo + count) of img that positions [pos0, pos0 + npos) of one
// image reach through any tap (count 0 when all are padding).
struct RowSpan {
  int lo, count;
};

__host__ __device__ inline RowSpan row_span(const PatchShape& ps, int pos0, int npos) {
  if (ps.R == 0 || npos <= 0) return {0, 0};
  const int pa = pos0 / ps.Q, pb = (pos0 + npos - 1) / ps.Q;
  const int span = (ps.R - 1) * ps.th;
  const int lo = pa * ps.ah + ps.oh + (span < 0 ? span : 0);
  const int hi = pb * ps.ah + ps.oh + (span > 0 ? span : 0);
  const int a = lo < 0 ? 0 : lo, b = hi > ps.H - 1 ? ps.H - 1 : hi;
  return {a, b >= a ? b - a + 1 : 0};
}

// Elements of a patch slot: one channel's rows, rounded to whole chunks.
__host__ __device__ inline int slot_elems(int rows, int W, int vec) {
  return (rows * W + vec - 1 + vec - 1) / vec * vec;
}

// Where the operands are: the image (x or dy) and A, row-major with row
// (n, grp*M + m) at a[a_base + n*a_image + (grp*M + m)*a_row] (a_image 0 when A
// does not depend on the image: the filter). a itself is 16-byte aligned
// when the chunks are, so element offsets alone say where a chunk starts.
template <typename T>
struct Staged {
  PatchShape ps;
  const T* img;
  int img_total;  // elements of img, the end of what a chunk may read
  const T* a;
  int a_total;
  int a_base, a_image, a_row;

  __device__ __forceinline__ int a_start(int n, int grp, int M, int m, int k) const {
    return a_base + n * a_image + (grp * M + m) * a_row + k;
  }
};

// Copies the Vec elements of src from element `from` to dst (16-byte aligned
// when Vec > 1); past `total` the copy zero-fills and reads nothing.
template <typename T, int Vec>
__device__ __forceinline__ void copy_chunk(T* dst, const T* src, int from, int total) {
  constexpr int kBytes = Vec * static_cast<int>(sizeof(T));
  const int left = total - from;
  const int bytes = left >= Vec ? kBytes : left > 0 ? left * static_cast<int>(sizeof(T)) : 0;
  dev::cp_async<kBytes>(dst, bytes > 0 ? src + from : src, bytes);
}

// Copies elements [e, e + len) of src to dst in chunks of Vec elements from
// the aligned element below e; lanes `lane, lane + lanes, ...` take the
// chunks. Returns the offset of element e in dst.
template <typename T, int Vec>
__device__ __forceinline__ int stage_run(T* dst, const T* src, int e, int len, int total, int lane, int lanes) {
  const int mis = e % Vec;
  const int chunks = (mis + len + Vec - 1) / Vec;
  for (int j = lane; j < chunks; j += lanes) copy_chunk<T, Vec>(dst + j * Vec, src, e - mis + j * Vec, total);
  return mis;
}

// Stages A's rows m0 .. m0 + 63 over k [k0, k0 + 32): row m lands at
// As + m*kARow, its element k0 at offset e % Vec (what the inner loop adds
// back). Rows past M are zeros. The block's threads walk the rows' chunks in
// order, so a warp's request is 32 chunks of consecutive rows: whole rows of
// 8 aligned chunks when every row starts at the same offset (the filter, when
// its row length is a multiple of Vec), else up to 9 per row, only those a
// row needs copied.
template <typename T, int Vec>
__device__ __forceinline__ void stage_a(T* As, const Staged<T>& st, int grp, int M, int n, int m0, int k0, int tid) {
  const bool uniform = st.a_row % Vec == 0;
  const int cpr = uniform ? (st.a_start(n, grp, M, 0, k0) % Vec + kTileK + Vec - 1) / Vec
                          : (kTileK + 2 * (Vec - 1)) / Vec;
  for (int f = tid; f < kTileM * cpr; f += kThreads) {
    const int m = f / cpr, j = f - m * cpr;
    T* dst = As + m * kARow<T> + j * Vec;
    if (m0 + m >= M) {
      dev::cp_async<Vec * static_cast<int>(sizeof(T))>(dst, st.a, 0);
      continue;
    }
    const int e = st.a_start(n, grp, M, m0 + m, k0), mis = e % Vec;
    if (j * Vec < mis + kTileK) copy_chunk<T, Vec>(dst, st.a, e - mis + j * Vec, st.a_total);
  }
}

// Stages channels [c_lo, c_lo + nch) of image n, rows rs, one warp per
// channel, slot elements apart.
template <typename T, int Vec>
__device__ __forceinline__ void stage_patch(T* patch, const Staged<T>& st, int grp, int n, int c_lo, int nch,
                                            RowSpan rs, int slot, int warp, int lane) {
  const PatchShape& ps = st.ps;
  for (int ci = warp; ci < nch; ci += kWarps) {
    const int e = ((n * ps.C + grp * ps.Cg + c_lo + ci) * ps.H + rs.lo) * ps.W;
    stage_run<T, Vec>(patch + ci * slot, st.img, e, rs.count * ps.W, st.img_total, lane, 32);
  }
}

// Offset of the first staged element of channel c in its slot.
template <typename T, int Vec>
__device__ __forceinline__ int patch_mis(const PatchShape& ps, int grp, int n, int c, RowSpan rs) {
  return ((n * ps.C + grp * ps.Cg + c) * ps.H + rs.lo) * ps.W % Vec;
}

// One K-step of the 64x64 product: acc += A(m, k) B(k, col) over the staged
// A rows (offset amis[i] for the thread's row i) and the formed B tile, for
// k < kcount only. Past a row's end the staged chunks hold whatever follows
// it (the next row, or for backward-data's last row of a stride phase the
// next phase's transposed filter, not yet written: stale workspace that may
// be NaN), and NaN times the zeros B holds there is NaN, so those k are not
// multiplied at all. kcount is the same for the whole block.
template <typename T>
__device__ __forceinline__ void multiply_step(const T* As, T (*Bs)[kTileN + 1], const int (&amis)[kThreadM],
                                              int tx, int ty, int kcount, T (&acc)[kThreadM][kThreadN]) {
  CK_UNROLL
  for (int kk = 0; kk < kTileK; ++kk) {
    if (kk >= kcount) break;
    T af[kThreadM], bf[kThreadN];
    CK_UNROLL
    for (int i = 0; i < kThreadM; ++i) af[i] = As[(ty + kSide * i) * kARow<T> + amis[i] + kk];
    CK_UNROLL
    for (int j = 0; j < kThreadN; ++j) bf[j] = Bs[kk][tx + kSide * j];
    CK_UNROLL
    for (int i = 0; i < kThreadM; ++i)
      CK_UNROLL
      for (int j = 0; j < kThreadN; ++j) acc[i][j] = dev::fma(af[i], bf[j], acc[i][j]);
  }
}

// Forward and backward-data: the tile's columns are 64 positions of one image,
// K runs over (c, r, s). blockIdx.x = m tile * col_tiles + image * pos_tiles +
// pos tile. Problem supplies M, depth and store(grp, m, col, slice, acc) with
// col = n * P*Q + position.
template <typename T, class Problem, int Vec>
__global__ void __launch_bounds__(kThreads) implicit_gemm_v4_staged_columns(Problem pb, Staged<T> st,
                                                                           int col_tiles) {
  __shared__ __align__(16) SharedArray<T[kTileM * kARow<T>]> As;
  __shared__ SharedArray<T[kTileK][kTileN + 1]> Bs;  // Bs[k][col], as version 3
  __shared__ __align__(16) SharedArray<T[kPatchElems<T>]> patch;
  const PatchShape& ps = st.ps;
  const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide, lane = tid % 32, warp = tid / 32;
  const int grp = blockIdx.y;
  const int plane = ps.P * ps.Q, pos_tiles = (plane + kTileN - 1) / kTileN;
  const int m0 = (blockIdx.x / col_tiles) * kTileM;
  const int ct = blockIdx.x % col_tiles, n = ct / pos_tiles, pos0 = (ct % pos_tiles) * kTileN;
  const int npos = plane - pos0 < kTileN ? plane - pos0 : kTileN;
  const RowSpan rs = row_span(ps, pos0, npos);
  const int slot = slot_elems(rs.count, ps.W, Vec);
  const int RS = ps.R * ps.S;
  // The forming thread's column is fixed: its position at tap (0, 0).
  const int col = tid % kTileN;
  const bool col_ok = col < npos;
  const int p = (pos0 + col) / ps.Q, q = (pos0 + col) % ps.Q;
  const int h0 = p * ps.ah + ps.oh, w0 = q * ps.aw + ps.ow;
  T acc[kThreadM][kThreadN] = {};
  for (int k0 = 0; k0 < pb.depth; k0 += kTileK) {
    const int k_end = pb.depth < k0 + kTileK ? pb.depth : k0 + kTileK;
    const int c_lo = k0 / RS, nch = (k_end - 1) / RS - c_lo + 1;
    stage_a<T, Vec>(As, st, grp, pb.M, 0, m0, k0, tid);
    stage_patch<T, Vec>(patch, st, grp, n, c_lo, nch, rs, slot, warp, lane);
    dev::cp_async_commit();
    dev::cp_async_wait<0>();
    __syncthreads();
    CK_UNROLL
    for (int i = 0; i < kTileK / 4; ++i) {
      const int kk = tid / kTileN + 4 * i, k = k0 + kk;
      T v = T(0);
      if (col_ok && k < k_end) {
        const int c = k / RS, t = k - c * RS, r = t / ps.S, s = t - r * ps.S;
        const int h = h0 + r * ps.th, w = w0 + s * ps.tw;
        if (h >= 0 && h < ps.H && w >= 0 && w < ps.W)
          v = patch[(c - c_lo) * slot + patch_mis<T, Vec>(ps, grp, n, c, rs) + (h - rs.lo) * ps.W + w];
      }
      Bs[kk][col] = v;
    }
    __syncthreads();
    int amis[kThreadM];
    CK_UNROLL
    for (int i = 0; i < kThreadM; ++i) amis[i] = st.a_start(0, grp, pb.M, m0 + ty + kSide * i, k0) % Vec;
    multiply_step<T>(As, Bs, amis, tx, ty, k_end - k0, acc);
    __syncthreads();  // before the next K-step overwrites the tiles
  }
  CK_UNROLL
  for (int i = 0; i < kThreadM; ++i) {
    const int m = m0 + ty + kSide * i;
    CK_UNROLL
    for (int j = 0; j < kThreadN; ++j) {
      const int c = tx + kSide * j;
      if (m < pb.M && c < npos) pb.store(grp, m, n * plane + pos0 + c, 0, acc[i][j]);
    }
  }
}

// Backward-weights: the tile's columns are 64 of (c, r, s), K runs over the
// positions of every image in K-steps of 32 positions of one image (the last
// of an image short): steps numbered image by image, steps_per_slice of them
// per split-K slice (blockIdx.z), total_steps in all. blockIdx.x = m tile *
// col_tiles + col tile. Problem supplies M, cols and store(grp, m, col, slice, acc).
template <typename T, class Problem, int Vec>
__global__ void __launch_bounds__(kThreads) implicit_gemm_v4_staged_positions(Problem pb, Staged<T> st,
                                                                             int col_tiles, int steps_per_slice,
                                                                             int total_steps) {
  __shared__ __align__(16) SharedArray<T[kTileM * kARow<T>]> As;
  __shared__ SharedArray<T[kTileK][kTileN + 1]> Bs;  // Bs[position][col]
  __shared__ __align__(16) SharedArray<T[kPatchElems<T>]> patch;
  const PatchShape& ps = st.ps;
  const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide, lane = tid % 32, warp = tid / 32;
  const int grp = blockIdx.y, slice = blockIdx.z;
  const int plane = ps.P * ps.Q, steps_per_image = (plane + kTileK - 1) / kTileK;
  const int m0 = (blockIdx.x / col_tiles) * kTileM, c0 = (blockIdx.x % col_tiles) * kTileN;
  const int RS = ps.R * ps.S;
  const int c_lo = c0 / RS;
  const int nch = ((pb.cols < c0 + kTileN ? pb.cols : c0 + kTileN) - 1) / RS - c_lo + 1;
  // The forming thread's columns are fixed: (channel in the patch, tap shift).
  int cc[kTileN / kWarps], dr[kTileN / kWarps], ds[kTileN / kWarps];
  CK_UNROLL
  for (int i = 0; i < kTileN / kWarps; ++i) {
    const int col = c0 + warp + kWarps * i;
    const int c = col / RS, t = col - c * RS, r = t / ps.S, s = t - r * ps.S;
    cc[i] = col < pb.cols ? c - c_lo : -1;
    dr[i] = r * ps.th;
    ds[i] = s * ps.tw;
  }
  const int step_end = total_steps < (slice + 1) * steps_per_slice ? total_steps : (slice + 1) * steps_per_slice;
  T acc[kThreadM][kThreadN] = {};
  for (int step = slice * steps_per_slice; step < step_end; ++step) {
    const int n = step / steps_per_image, pos0 = (step - n * steps_per_image) * kTileK;
    const int npos = plane - pos0 < kTileK ? plane - pos0 : kTileK;
    const RowSpan rs = row_span(ps, pos0, npos);
    const int slot = slot_elems(rs.count, ps.W, Vec);
    stage_a<T, Vec>(As, st, grp, pb.M, n, m0, pos0, tid);
    stage_patch<T, Vec>(patch, st, grp, n, c_lo, nch, rs, slot, warp, lane);
    dev::cp_async_commit();
    dev::cp_async_wait<0>();
    __syncthreads();
    const int p = (pos0 + lane) / ps.Q, q = (pos0 + lane) % ps.Q;
    const int h0 = p * ps.ah + ps.oh, w0 = q * ps.aw + ps.ow;
    CK_UNROLL
    for (int i = 0; i < kTileN / kWarps; ++i) {
      T v = T(0);
      const int h = h0 + dr[i], w = w0 + ds[i];
      if (lane < npos && cc[i] >= 0 && h >= 0 && h < ps.H && w >= 0 && w < ps.W)
        v = patch[cc[i] * slot + patch_mis<T, Vec>(ps, grp, n, c_lo + cc[i], rs) + (h - rs.lo) * ps.W + w];
      Bs[lane][warp + kWarps * i] = v;
    }
    __syncthreads();
    int amis[kThreadM];
    CK_UNROLL
    for (int i = 0; i < kThreadM; ++i)
      amis[i] = st.a_start(n, grp, pb.M, m0 + ty + kSide * i, pos0) % Vec;
    multiply_step<T>(As, Bs, amis, tx, ty, npos, acc);
    __syncthreads();
  }
  CK_UNROLL
  for (int i = 0; i < kThreadM; ++i) {
    const int m = m0 + ty + kSide * i;
    CK_UNROLL
    for (int j = 0; j < kThreadN; ++j) {
      const int col = c0 + tx + kSide * j;
      if (m < pb.M && col < pb.cols) pb.store(grp, m, col, slice, acc[i][j]);
    }
  }
}

}  // namespace convkit::CK_GPU_NS::staged
