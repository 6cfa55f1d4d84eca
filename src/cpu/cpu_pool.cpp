// Pooling kernels on contiguous NCHW planes. Forward passes are split over
// (plane, output row); backward passes scatter into one input plane per task,
// so overlapping windows never race.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_pool.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

constexpr std::int64_t kParallelWork = 32768;


// The input rows (or columns) [begin, end) that output index o covers; the op
// guarantees that every window holds at least one input element.
struct Span {
  std::int64_t begin, end;
};
inline Span clip(std::int64_t o, std::int64_t stride, std::int64_t pad, std::int64_t kernel,
                 std::int64_t size) {
  const std::int64_t start = o * stride - pad;
  return {std::max<std::int64_t>(start, 0), std::min(start + kernel, size)};
}

// PyTorch's divisor: the window clipped to the padded input, or to the input.
inline std::int64_t avg_divisor(std::int64_t oh, std::int64_t ow, const PoolWindow& w,
                                std::int64_t H, std::int64_t W) {
  if (w.count_include_pad) {
    const std::int64_t h0 = oh * w.stride_h - w.pad_h, w0 = ow * w.stride_w - w.pad_w;
    const std::int64_t h1 = std::min(h0 + w.kernel_h, H + w.pad_h);
    const std::int64_t w1 = std::min(w0 + w.kernel_w, W + w.pad_w);
    return (h1 - h0) * (w1 - w0);
  }
  const Span hs = clip(oh, w.stride_h, w.pad_h, w.kernel_h, H);
  const Span ws = clip(ow, w.stride_w, w.pad_w, w.kernel_w, W);
  return (hs.end - hs.begin) * (ws.end - ws.begin);
}

}  // namespace

// The generic window loop: any kernel, stride and padding. It is the
// reference the 2x2 stride-2 version below is tested against.
template <typename T>
void max_pool2d_generic(const T* xp, T* yp, std::int64_t* ap, const PoolGeometry& g, const PoolWindow& w) {
  const std::int64_t work = g.count * g.OH * g.OW * w.kernel_h * w.kernel_w;
#pragma omp parallel for collapse(2) schedule(static) if (work > kParallelWork)
  for (std::int64_t p = 0; p < g.count; ++p) {
    for (std::int64_t oh = 0; oh < g.OH; ++oh) {
      const T* plane = xp + p * g.H * g.W;
      const Span hs = clip(oh, w.stride_h, w.pad_h, w.kernel_h, g.H);
      const std::int64_t o_row = (p * g.OH + oh) * g.OW;
      for (std::int64_t ow = 0; ow < g.OW; ++ow) {
        const Span ws = clip(ow, w.stride_w, w.pad_w, w.kernel_w, g.W);
        T best = -std::numeric_limits<T>::infinity();
        std::int64_t best_i = hs.begin * g.W + ws.begin;
        for (std::int64_t h = hs.begin; h < hs.end; ++h) {
          for (std::int64_t c = ws.begin; c < ws.end; ++c) {
            const T v = plane[h * g.W + c];
            if (v > best || std::isnan(v)) {  // torch's rule: a NaN always takes over
              best = v;
              best_i = h * g.W + c;
            }
          }
        }
        yp[o_row + ow] = best;
        ap[o_row + ow] = best_i;
      }
    }
  }
}

// Kernel 2x2, stride 2, no padding (every Keras MaxPooling2D(2)): the window
// never needs clipping, so each output reads two adjacent pairs of one input
// row pair with no bounds arithmetic. The same comparisons in the same order
// as the generic loop, so values, argmax and NaN handling are identical. The
// gain (3x) comes from the loop vectorising, which the sizes held in locals
// allow (docs/performance-log.md, step 2), not from the missing bounds.
template <typename T>
void max_pool2d_2x2s2(const T* xp, T* yp, std::int64_t* ap, const PoolGeometry& g) {
  // Locals, not g's fields: the argmax stores are int64 and may alias g as far
  // as the compiler knows, which reloads the sizes every output and keeps the
  // row loop from vectorising (4x slower).
  const std::int64_t count = g.count, H = g.H, W = g.W, OH = g.OH, OW = g.OW;
  const std::int64_t work = count * OH * OW * 4;
#pragma omp parallel for collapse(2) schedule(static) if (work > kParallelWork)
  for (std::int64_t p = 0; p < count; ++p) {
    for (std::int64_t oh = 0; oh < OH; ++oh) {
      const T* top = xp + p * H * W + 2 * oh * W;
      const T* bottom = top + W;
      T* y = yp + (p * OH + oh) * OW;
      std::int64_t* a = ap + (p * OH + oh) * OW;
      const std::int64_t top_i = 2 * oh * W;
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const std::int64_t c = 2 * ow;
        T best = top[c];
        std::int64_t best_i = top_i + c;
        // Selects, not branches: which of the four wins is unpredictable.
        auto take = [&](T v, std::int64_t i) {
          const bool wins = (v > best) | (v != v);  // v != v: NaN takes over
          best = wins ? v : best;
          best_i = wins ? i : best_i;
        };
        take(top[c + 1], top_i + c + 1);
        take(bottom[c], top_i + W + c);
        take(bottom[c + 1], top_i + W + c + 1);
        y[ow] = best;
        a[ow] = best_i;
      }
    }
  }
}

template void max_pool2d_generic<float>(const float*, float*, std::int64_t*, const PoolGeometry&, const PoolWindow&);
template void max_pool2d_generic<double>(const double*, double*, std::int64_t*, const PoolGeometry&,
                                         const PoolWindow&);
template void max_pool2d_2x2s2<float>(const float*, float*, std::int64_t*, const PoolGeometry&);
template void max_pool2d_2x2s2<double>(const double*, double*, std::int64_t*, const PoolGeometry&);

void CpuBackend::max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& argmax,
                                    PoolWindow w) {
  const PoolGeometry g = pool_geometry(x, out);
  dispatch_floating(x.dtype(), "max_pool2d", [&]<typename T>() {
    // ceil_mode can give a last window that runs past the input: the 2x2
    // version assumes every window is whole.
    if (is_2x2_stride_2(w) && 2 * g.OH <= g.H && 2 * g.OW <= g.W) {
      max_pool2d_2x2s2(x.data<T>(), out.data<T>(), argmax.data<std::int64_t>(), g);
    } else {
      max_pool2d_generic(x.data<T>(), out.data<T>(), argmax.data<std::int64_t>(), g, w);
    }
  });
}

// Each task owns one input plane and scatters into it in output order, so
// the window is not needed here.
void CpuBackend::max_pool2d_backward(const Tensor& grad_out, const Tensor& argmax,
                                     const Tensor& grad_in, PoolWindow /*window*/) {
  const PoolGeometry g = pool_geometry(grad_in, grad_out);
  dispatch_floating(grad_out.dtype(), "max_pool2d_backward", [&]<typename T>() {
    const T* gop = grad_out.data<T>();
    const std::int64_t* ap = argmax.data<std::int64_t>();
    T* gip = grad_in.data<T>();
    const std::int64_t plane_in = g.H * g.W, plane_out = g.OH * g.OW;
#pragma omp parallel for schedule(static) if (g.count * (plane_in + plane_out) > kParallelWork)
    for (std::int64_t p = 0; p < g.count; ++p) {
      T* gi = gip + p * plane_in;
      std::fill(gi, gi + plane_in, T(0));
      const T* go = gop + p * plane_out;
      const std::int64_t* a = ap + p * plane_out;
      for (std::int64_t i = 0; i < plane_out; ++i) gi[a[i]] += go[i];
    }
  });
}

void CpuBackend::avg_pool2d_forward(const Tensor& x, const Tensor& out, PoolWindow w) {
  const PoolGeometry g = pool_geometry(x, out);
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    const std::int64_t work = g.count * g.OH * g.OW * w.kernel_h * w.kernel_w;
#pragma omp parallel for collapse(2) schedule(static) if (work > kParallelWork)
    for (std::int64_t p = 0; p < g.count; ++p) {
      for (std::int64_t oh = 0; oh < g.OH; ++oh) {
        const T* plane = xp + p * g.H * g.W;
        const Span hs = clip(oh, w.stride_h, w.pad_h, w.kernel_h, g.H);
        const std::int64_t o_row = (p * g.OH + oh) * g.OW;
        for (std::int64_t ow = 0; ow < g.OW; ++ow) {
          const Span ws = clip(ow, w.stride_w, w.pad_w, w.kernel_w, g.W);
          T acc = 0;
          for (std::int64_t h = hs.begin; h < hs.end; ++h)
            for (std::int64_t c = ws.begin; c < ws.end; ++c) acc += plane[h * g.W + c];
          const std::int64_t divisor = avg_divisor(oh, ow, w, g.H, g.W);
          yp[o_row + ow] = divisor > 0 ? acc / static_cast<T>(divisor) : T(0);
        }
      }
    }
  });
}

void CpuBackend::avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, PoolWindow w) {
  const PoolGeometry g = pool_geometry(grad_in, grad_out);
  dispatch_floating(grad_out.dtype(), "avg_pool2d_backward", [&]<typename T>() {
    const T* gop = grad_out.data<T>();
    T* gip = grad_in.data<T>();
    const std::int64_t plane_in = g.H * g.W, plane_out = g.OH * g.OW;
    const std::int64_t work = g.count * (plane_in + plane_out * w.kernel_h * w.kernel_w);
#pragma omp parallel for schedule(static) if (work > kParallelWork)
    for (std::int64_t p = 0; p < g.count; ++p) {
      T* gi = gip + p * plane_in;
      std::fill(gi, gi + plane_in, T(0));
      const T* go = gop + p * plane_out;
      for (std::int64_t oh = 0; oh < g.OH; ++oh) {
        const Span hs = clip(oh, w.stride_h, w.pad_h, w.kernel_h, g.H);
        for (std::int64_t ow = 0; ow < g.OW; ++ow) {
          const Span ws = clip(ow, w.stride_w, w.pad_w, w.kernel_w, g.W);
          const std::int64_t divisor = avg_divisor(oh, ow, w, g.H, g.W);
          if (divisor == 0) continue;
          const T share = go[oh * g.OW + ow] / static_cast<T>(divisor);
          for (std::int64_t h = hs.begin; h < hs.end; ++h)
            for (std::int64_t c = ws.begin; c < ws.end; ++c) gi[h * g.W + c] += share;
        }
      }
    }
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
