// Max and average pooling over NCHW planes, forward and backward, with the
// cpu backend's semantics bit for bit: windows clipped to the input (padding
// never wins a maximum and never adds to a sum), the max scan takes v when
// v > best or v is NaN (the first maximum, or the last NaN), the average
// divides by the window clipped to the padded input (count_include_pad) or to
// the input, and every sum adds its terms in the cpu's order.
//
// Floors, per plane of H x W inputs, OH x OW outputs and a kh x kw window:
//   forward:   read H W, write OH OW (+ OH OW int64 argmax for max) elements;
//              OH OW kh kw compares or adds, far below the bandwidth limit.
//   backward:  read OH OW (+ OH OW int64 argmax), write H W elements.
// Every version is memory-bound; what they change is how many memory
// instructions it takes to move those bytes.
//
// Forward ("pool2d_forward"):
//   v1 one thread per output; the window is read straight from global memory.
//      Neighbouring threads read addresses `stride` apart, and overlapping
//      windows (stride < kernel) read each input up to ceil(k/s)^2 times; the
//      L1 cache absorbs most of that, but every read is a load instruction.
//   v2 a 32 x 8 block computes a 32 x 8 tile of outputs of one plane. It first
//      copies the input patch under the tile, ((8-1) sh + kh) x ((32-1) sw + kw)
//      elements, into shared memory with consecutive threads on consecutive
//      addresses (fully coalesced, each input loaded once per tile), then scans
//      windows from shared memory. A lane's window starts `sw` words after its
//      neighbour's, so stride 2 costs a 2-way bank conflict on float reads.
//      Runs when the patch fits in 48 KiB (pool2d_tiled_can_implement). The
//      family's default is v2 where it applies and the tile is at least half
//      full (see choose_forward), v1 elsewhere.
// Backward ("pool2d_backward"): one version, a gather. One thread per input
//   element walks the outputs whose windows cover it, oh then ow ascending:
//   max adds grad_out where argmax names this element, average adds
//   grad_out / divisor. No two threads write one element, so overlapping
//   windows (stride < kernel) need no atomics, the result is deterministic,
//   and the terms are added in exactly the order of the cpu's per-plane
//   scatter, so the two agree bit for bit. Scattering with atomicAdd would
//   add in whatever order threads arrive: not reproducible from run to run
//   once three or more windows share a winner.
#include <algorithm>
#include <cmath>

#include "convkit/backend/kernel_versions.h"
#include "kernels/dispatch.cuh"
#include "kernels/pooling.cuh"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

namespace {

constexpr int kTileW = 32, kTileH = 8;  // forward v2: outputs per block, and its block shape
constexpr std::int64_t kSharedLimit = 48 * 1024;  // dynamic shared memory without an opt-in attribute
constexpr std::int64_t kIntLimit = 2147483647;
constexpr std::int64_t kMaxBlocks = 1024;  // forward v2 grid: tiles x plane blocks, about this many

// Sizes as the kernels index them (32-bit within a plane).
struct Geometry {
  std::int64_t planes;
  int H, W, OH, OW;
  int kh, kw, sh, sw, ph, pw;
  bool count_include_pad;
};

__device__ __forceinline__ std::int64_t grid_start() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_step() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// The input rows (or columns) [begin, end) that output index o covers.
struct Span {
  int begin, end;
};
__device__ __forceinline__ Span clip(int o, int stride, int pad, int kernel, int size) {
  const int start = o * stride - pad;
  const int end = start + kernel;
  return {start > 0 ? start : 0, end < size ? end : size};
}

// PyTorch's divisor: the window clipped to the padded input, or to the input.
__device__ __forceinline__ int avg_divisor(int oh, int ow, const Geometry& g) {
  if (g.count_include_pad) {
    const int h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    const int h1 = min(h0 + g.kh, g.H + g.ph), w1 = min(w0 + g.kw, g.W + g.pw);
    return (h1 - h0) * (w1 - w0);
  }
  const Span hs = clip(oh, g.sh, g.ph, g.kh, g.H), ws = clip(ow, g.sw, g.pw, g.kw, g.W);
  return (hs.end - hs.begin) * (ws.end - ws.begin);
}

// The window rows hs x columns ws of a plane, read from `src` where plane
// element (h, w) sits at src[(h - h0) * pitch + (w - w0)]: the plane itself
// (v1) or a shared-memory patch whose corner is (h0, w0) (v2).
template <typename T>
__device__ __forceinline__ void max_window(const T* src, int pitch, int h0, int w0, Span hs, Span ws, int W,
                                           T& best_out, std::int64_t& index_out) {
  T best = -static_cast<T>(INFINITY);
  int best_h = hs.begin, best_w = ws.begin;
  for (int h = hs.begin; h < hs.end; ++h) {
    for (int c = ws.begin; c < ws.end; ++c) {
      const T v = src[(h - h0) * pitch + (c - w0)];
      if (v > best || v != v) {  // torch's rule: a NaN always takes over
        best = v;
        best_h = h;
        best_w = c;
      }
    }
  }
  best_out = best;
  index_out = static_cast<std::int64_t>(best_h) * W + best_w;
}

template <typename T>
__device__ __forceinline__ T avg_window(const T* src, int pitch, int h0, int w0, Span hs, Span ws, int divisor) {
  T acc = T(0);
  for (int h = hs.begin; h < hs.end; ++h)
    for (int c = ws.begin; c < ws.end; ++c) acc += src[(h - h0) * pitch + (c - w0)];
  return divisor > 0 ? acc / static_cast<T>(divisor) : T(0);
}

// ---- forward v1: one thread per output, window read from global memory.
template <typename T, bool kMax>
__global__ void pool_forward_v1(const T* __restrict__ x, T* __restrict__ out, std::int64_t* __restrict__ argmax,
                                Geometry g) {
  const std::int64_t plane_out = static_cast<std::int64_t>(g.OH) * g.OW;
  const std::int64_t n = g.planes * plane_out;
  for (std::int64_t i = grid_start(); i < n; i += grid_step()) {
    const std::int64_t p = i / plane_out;
    const int r = static_cast<int>(i - p * plane_out);
    const int oh = r / g.OW, ow = r % g.OW;
    const T* plane = x + p * g.H * g.W;
    const Span hs = clip(oh, g.sh, g.ph, g.kh, g.H), ws = clip(ow, g.sw, g.pw, g.kw, g.W);
    if constexpr (kMax) {
      max_window(plane, g.W, 0, 0, hs, ws, g.W, out[i], argmax[i]);
    } else {
      out[i] = avg_window(plane, g.W, 0, 0, hs, ws, avg_divisor(oh, ow, g));
    }
  }
}

// ---- forward v2: a kTileH x kTileW tile of outputs per block, its input
// patch staged in shared memory. blockIdx.x picks the tile, blockIdx.y the
// first plane; the block walks planes gridDim.y apart.
template <typename T, bool kMax>
__global__ void pool_forward_v2(const T* __restrict__ x, T* __restrict__ out, std::int64_t* __restrict__ argmax,
                                Geometry g, int tiles_w, int patch_h, int patch_w) {
  CK_DYNAMIC_SHARED(T, patch);
  const int oh0 = static_cast<int>(blockIdx.x / tiles_w) * kTileH;
  const int ow0 = static_cast<int>(blockIdx.x % tiles_w) * kTileW;
  const int h0 = oh0 * g.sh - g.ph, w0 = ow0 * g.sw - g.pw;  // the patch's corner in plane coordinates
  const int oh = oh0 + static_cast<int>(threadIdx.y), ow = ow0 + static_cast<int>(threadIdx.x);
  const bool has_output = oh < g.OH && ow < g.OW;
  const int tid = static_cast<int>(threadIdx.y) * kTileW + static_cast<int>(threadIdx.x);
  const int patch_size = patch_h * patch_w;
  Span hs{0, 0}, ws{0, 0};
  int divisor = 0;
  if (has_output) {
    hs = clip(oh, g.sh, g.ph, g.kh, g.H);
    ws = clip(ow, g.sw, g.pw, g.kw, g.W);
    if constexpr (!kMax) divisor = avg_divisor(oh, ow, g);
  }
  for (std::int64_t p = blockIdx.y; p < g.planes; p += gridDim.y) {
    const T* plane = x + p * g.H * g.W;
    // Row-major over the patch: consecutive threads load consecutive inputs.
    // Cells outside the input are never read (windows are clipped); they get 0.
    for (int i = tid; i < patch_size; i += kTileW * kTileH) {
      const int h = h0 + i / patch_w, c = w0 + i % patch_w;
      patch[i] = (h >= 0 && h < g.H && c >= 0 && c < g.W) ? plane[h * g.W + c] : T(0);
    }
    __syncthreads();
    if (has_output) {
      const std::int64_t o = p * g.OH * g.OW + static_cast<std::int64_t>(oh) * g.OW + ow;
      if constexpr (kMax) {
        max_window(patch, patch_w, h0, w0, hs, ws, g.W, out[o], argmax[o]);
      } else {
        out[o] = avg_window(patch, patch_w, h0, w0, hs, ws, divisor);
      }
    }
    __syncthreads();  // the next plane's patch overwrites this one
  }
}

// ---- backward: one thread per input element gathers from the outputs whose
// windows cover it, oh then ow ascending (the cpu's scatter order).
// Outputs covering input row h: oh * sh - ph <= h < oh * sh - ph + kh.
__device__ __forceinline__ Span covering(int h, int stride, int pad, int kernel, int out_size) {
  const int first = h + pad < kernel ? 0 : (h + pad - kernel) / stride + 1;
  const int last = (h + pad) / stride + 1;
  return {first, last < out_size ? last : out_size};
}

template <typename T, bool kMax>
__global__ void pool_backward_v1(const T* __restrict__ grad_out, const std::int64_t* __restrict__ argmax,
                                 T* __restrict__ grad_in, Geometry g) {
  const std::int64_t plane_in = static_cast<std::int64_t>(g.H) * g.W;
  const std::int64_t plane_out = static_cast<std::int64_t>(g.OH) * g.OW;
  const std::int64_t n = g.planes * plane_in;
  for (std::int64_t i = grid_start(); i < n; i += grid_step()) {
    const std::int64_t p = i / plane_in;
    const int r = static_cast<int>(i - p * plane_in);
    const int h = r / g.W, c = r % g.W;
    const Span ohs = covering(h, g.sh, g.ph, g.kh, g.OH), ows = covering(c, g.sw, g.pw, g.kw, g.OW);
    const T* go = grad_out + p * plane_out;
    T acc = T(0);
    if constexpr (kMax) {
      const std::int64_t* a = argmax + p * plane_out;
      for (int oh = ohs.begin; oh < ohs.end; ++oh)
        for (int ow = ows.begin; ow < ows.end; ++ow)
          if (a[oh * g.OW + ow] == r) acc += go[oh * g.OW + ow];
    } else {
      for (int oh = ohs.begin; oh < ohs.end; ++oh)
        for (int ow = ows.begin; ow < ows.end; ++ow) {
          const int divisor = avg_divisor(oh, ow, g);
          if (divisor > 0) acc += go[oh * g.OW + ow] / static_cast<T>(divisor);
        }
    }
    grad_in[i] = acc;
  }
}

// ---- host side

std::int64_t patch_bytes(DType dtype, const PoolWindow& w) {
  const std::int64_t h = (kTileH - 1) * w.stride_h + w.kernel_h, c = (kTileW - 1) * w.stride_w + w.kernel_w;
  return h * c * static_cast<std::int64_t>(dtype_size(dtype));
}

// Checks what the kernels assume and narrows the sizes to their 32-bit plane indexing.
Geometry geometry(const char* op, const PoolShape& s, const PoolWindow& w) {
  CK_CHECK(s.planes >= 0 && s.H > 0 && s.W > 0 && s.OH > 0 && s.OW > 0, op, ": bad sizes: ", s.planes,
           " planes of ", s.H, "x", s.W, " inputs and ", s.OH, "x", s.OW, " outputs");
  CK_CHECK(s.H * s.W < kIntLimit && s.OH * s.OW < kIntLimit, op, ": planes of ", s.H, "x", s.W, " inputs and ",
           s.OH, "x", s.OW, " outputs exceed the kernels' 32-bit indexing within a plane");
  CK_CHECK(w.kernel_h > 0 && w.kernel_w > 0 && w.stride_h > 0 && w.stride_w > 0 && w.pad_h >= 0 && w.pad_w >= 0,
           op, ": bad window: kernel ", w.kernel_h, "x", w.kernel_w, ", stride ", w.stride_h, "x", w.stride_w,
           ", padding ", w.pad_h, "x", w.pad_w);
  CK_CHECK((s.OH - 1) * w.stride_h + w.kernel_h < kIntLimit && (s.OW - 1) * w.stride_w + w.kernel_w < kIntLimit &&
               s.H + w.pad_h + w.kernel_h < kIntLimit && s.W + w.pad_w + w.kernel_w < kIntLimit,
           op, ": window coordinates exceed 32 bits");
  return {s.planes,
          static_cast<int>(s.H),
          static_cast<int>(s.W),
          static_cast<int>(s.OH),
          static_cast<int>(s.OW),
          static_cast<int>(w.kernel_h),
          static_cast<int>(w.kernel_w),
          static_cast<int>(w.stride_h),
          static_cast<int>(w.stride_w),
          static_cast<int>(w.pad_h),
          static_cast<int>(w.pad_w),
          w.count_include_pad};
}

// The family's choice runs v2 only where it pays: the patch fits in shared
// memory, and at least half of the block's 256 threads own an output (a
// 5 x 5 plane would leave 231 of them idle at every barrier; v1 packs small
// planes' outputs densely into its grid-stride loop instead).
int choose_forward(const char* op, int version, DType dtype, const PoolShape& shape, const PoolWindow& w) {
  register_pooling_kernels();
  CK_CHECK(version >= 0 && version <= 2, op, ": pool2d_forward has versions 1..2, got ", version);
  const bool tiled_ok = pool2d_tiled_can_implement(dtype, w);
  if (version == 0) {
    const int chosen = kernel_version("pool2d_forward");
    const std::int64_t busy = (shape.OH < kTileH ? shape.OH : kTileH) * (shape.OW < kTileW ? shape.OW : kTileW);
    return chosen == 2 && !(tiled_ok && 2 * busy >= kTileH * kTileW) ? 1 : chosen;
  }
  CK_CHECK(version != 2 || tiled_ok, op, ": pool2d_forward v2 stages a ", (kTileH - 1) * w.stride_h + w.kernel_h,
           "x", (kTileW - 1) * w.stride_w + w.kernel_w, " input patch (", patch_bytes(dtype, w),
           " B) in shared memory, above the ", kSharedLimit, " B limit; use v1 for kernel ", w.kernel_h, "x",
           w.kernel_w, ", stride ", w.stride_h, "x", w.stride_w);
  return version;
}

void check_backward_version(const char* op, int version) {
  register_pooling_kernels();
  CK_CHECK(version >= 0 && version <= 1, op, ": pool2d_backward has version 1 only, got ", version);
  (void)kernel_version("pool2d_backward");  // validates CONVKIT_KERNEL_POOL2D_BACKWARD
}

template <bool kMax>
void launch_forward(const char* op, DType dtype, const void* x, void* out, std::int64_t* argmax,
                    const PoolShape& shape, const PoolWindow& window, int version) {
  const int v = choose_forward(op, version, dtype, shape, window);
  const Geometry g = geometry(op, shape, window);
  if (g.planes == 0) return;
  dispatch_floating(dtype, op, [&](auto t) {
    using T = decltype(t);
    if (v == 1) {
      const LaunchShape s = grid_stride_shape(g.planes * g.OH * g.OW);
      launch(pool_forward_v1<T, kMax>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<const T*>(x),
             static_cast<T*>(out), argmax, g);
      return;
    }
    const int tiles_w = (g.OW + kTileW - 1) / kTileW, tiles_h = (g.OH + kTileH - 1) / kTileH;
    const int patch_h = (kTileH - 1) * g.sh + g.kh, patch_w = (kTileW - 1) * g.sw + g.kw;
    // About as many blocks as grid_stride_shape launches (enough to fill a
    // large GPU); each block then walks planes gridDim.y apart.
    const std::int64_t wanted = kMaxBlocks / (static_cast<std::int64_t>(tiles_w) * tiles_h);
    const std::int64_t plane_blocks = std::max<std::int64_t>(1, std::min<std::int64_t>({wanted, g.planes, 65535}));
    launch(pool_forward_v2<T, kMax>, dim3(static_cast<unsigned>(tiles_w) * static_cast<unsigned>(tiles_h), static_cast<unsigned>(plane_blocks)),
           dim3(kTileW, kTileH), static_cast<std::size_t>(patch_bytes(dtype, window)), nullptr,
           static_cast<const T*>(x), static_cast<T*>(out), argmax, g, tiles_w, patch_h, patch_w);
  });
}

}  // namespace

void register_pooling_kernels() {
  static const bool registered = [] {
    register_kernel_family({"pool2d_forward", 2, 2,
                            "v1 one thread per output, window read from global memory; "
                            "v2 32x8 output tile per block, input patch staged in shared memory"});
    register_kernel_family({"pool2d_backward", 1, 1,
                            "v1 gather: one thread per input element over the outputs covering it"});
    return true;
  }();
  (void)registered;
}

bool pool2d_tiled_can_implement(DType dtype, const PoolWindow& window) {
  return window.kernel_h <= kSharedLimit && window.kernel_w <= kSharedLimit && window.stride_h <= kSharedLimit &&
         window.stride_w <= kSharedLimit && patch_bytes(dtype, window) <= kSharedLimit;
}

void launch_max_pool2d_forward(DType dtype, const void* x, void* out, std::int64_t* argmax, const PoolShape& shape,
                               const PoolWindow& window, int version) {
  CK_CHECK(argmax != nullptr, "max_pool2d_forward: argmax output is null");
  launch_forward<true>("max_pool2d_forward", dtype, x, out, argmax, shape, window, version);
}

void launch_avg_pool2d_forward(DType dtype, const void* x, void* out, const PoolShape& shape,
                               const PoolWindow& window, int version) {
  launch_forward<false>("avg_pool2d_forward", dtype, x, out, nullptr, shape, window, version);
}

void launch_max_pool2d_backward(DType dtype, const void* grad_out, const std::int64_t* argmax, void* grad_in,
                                const PoolShape& shape, const PoolWindow& window, int version) {
  check_backward_version("max_pool2d_backward", version);
  const Geometry g = geometry("max_pool2d_backward", shape, window);
  if (g.planes == 0) return;
  dispatch_floating(dtype, "max_pool2d_backward", [&](auto t) {
    using T = decltype(t);
    const LaunchShape s = grid_stride_shape(g.planes * g.H * g.W);
    launch(pool_backward_v1<T, true>, dim3(s.blocks), dim3(s.threads), 0, nullptr, static_cast<const T*>(grad_out),
           argmax, static_cast<T*>(grad_in), g);
  });
}

void launch_avg_pool2d_backward(DType dtype, const void* grad_out, void* grad_in, const PoolShape& shape,
                                const PoolWindow& window, int version) {
  check_backward_version("avg_pool2d_backward", version);
  const Geometry g = geometry("avg_pool2d_backward", shape, window);
  if (g.planes == 0) return;
  dispatch_floating(dtype, "avg_pool2d_backward", [&](auto t) {
    using T = decltype(t);
    const LaunchShape s = grid_stride_shape(g.planes * g.H * g.W);
    launch(pool_backward_v1<T, false>, dim3(s.blocks), dim3(s.threads), 0, nullptr,
           static_cast<const T*>(grad_out), static_cast<const std::int64_t*>(nullptr), static_cast<T*>(grad_in), g);
  });
}

}  // namespace convkit::CK_GPU_NS
