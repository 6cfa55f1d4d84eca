// Batch-norm kernels over contiguous x viewed as [N, C, S], with the fused
// ReLU (+ residual) variants of the affine map and the backward reduction.
// Per-channel sums accumulate in double (in SIMD lanes), so float32 statistics over large
// batches stay accurate; every pass runs one (n, c) plane per task.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "convkit/backend/batch_norm_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/strided_loop.h"

namespace convkit::cpu::CONVKIT_ISA_NS {

namespace {

constexpr std::int64_t kParallelWork = 32768;

struct ChannelView {
  std::int64_t N, C, S;
  explicit ChannelView(const Tensor& x)
      : N(x.size(0)), C(x.size(1)), S(x.size(0) * x.size(1) == 0 ? 0 : x.numel() / (x.size(0) * x.size(1))) {}
  std::int64_t count() const { return N * S; }  // elements per channel (M)
};

// The per-plane sums of the statistics and of the backward reduction, in
// functions of their own with local accumulators: written inline in the
// kernels' lambdas, GCC kept the reduction variables on the stack and
// gathered the captured mean every iteration (perf: 5.7% of a
// cifar10-cnn-bn step in the backward reduction alone).
// Sums of d = x - shift and of d^2 over one plane, in double.
template <typename T>
std::pair<double, double> shifted_sums(const T* x, std::int64_t n, double shift) {
  double sum = 0, sq = 0;
#pragma omp simd reduction(+ : sum, sq)
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - shift;
    sum += d;
    sq += d * d;
  }
  return {sum, sq};
}
// Sums of g and of g * (x - mean) over one plane, in double.
template <typename T>
std::pair<double, double> gradient_sums(const T* g, const T* x, std::int64_t n, double mean) {
  double sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
  for (std::int64_t i = 0; i < n; ++i) {
    const double gd = static_cast<double>(g[i]);
    sum_g += gd;
    sum_gx += gd * (static_cast<double>(x[i]) - mean);
  }
  return {sum_g, sum_gx};
}

// gradient_sums behind a ReLU whose output is y: gm = y > 0 ? g : 0 is
// written (it is also the residual's gradient), then summed, a block at a
// time so that the sums read gm back from L1. gm may be g itself: each
// element is read before it is written.
// Two loops, not one: with the mask and the sums in one loop GCC would not
// if-convert the select under -ftrapping-math (a float-to-double conversion
// on one arm), and kept a scalar loop with a branch that a ReLU's mask
// mispredicts half the time: 16.9% of a cifar10-cnn-bn step at batch 128 on
// Zen 4, which made batch norm + ReLU fused 19% slower than the two layers
// apart (docs/performance-log.md, step 35).
template <typename T>
std::pair<double, double> masked_gradient_sums(const T* g, const T* y, const T* x, T* gm, std::int64_t n,
                                               double mean) {
  constexpr std::int64_t kBlock = 2048;
  double sum_g = 0, sum_gx = 0;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const std::int64_t e = std::min(n, b + kBlock);
#pragma omp simd
    for (std::int64_t i = b; i < e; ++i) {
      const T gi = g[i];
      gm[i] = y[i] > T(0) ? gi : T(0);
    }
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (std::int64_t i = b; i < e; ++i) {
      const double gd = static_cast<double>(gm[i]);
      sum_g += gd;
      sum_gx += gd * (static_cast<double>(x[i]) - mean);
    }
  }
  return {sum_g, sum_gx};
}

// Two per-channel sums: plane_sums(offset, c) for every (n, c) plane, added
// per channel in image order. The planes are summed in parallel in memory
// order, each thread streaming one contiguous part of the tensor: a channel
// per task, as before, read N planes of a few KB, C * S values apart, which
// the prefetchers follow badly (the reductions ran at half the bandwidth of
// the elementwise passes; docs/performance-log.md, step 31). Adding the planes'
// sums in image order afterwards keeps the totals those of a sequential loop
// over the images, whatever the thread count.
template <typename PlaneSums>
std::vector<std::pair<double, double>> channel_sums(const ChannelView& v, bool parallel, PlaneSums plane_sums) {
  std::vector<std::pair<double, double>> planes(static_cast<std::size_t>(v.N * v.C));
#pragma omp parallel for schedule(static) if (parallel)
  for (std::int64_t p = 0; p < v.N * v.C; ++p) planes[p] = plane_sums(p * v.S, p % v.C);
  std::vector<std::pair<double, double>> totals(static_cast<std::size_t>(v.C), {0.0, 0.0});
  for (std::int64_t n = 0; n < v.N; ++n) {
    for (std::int64_t c = 0; c < v.C; ++c) {
      totals[c].first += planes[n * v.C + c].first;
      totals[c].second += planes[n * v.C + c].second;
    }
  }
  return totals;
}

}  // namespace

// One pass over x per channel, not two (mean, then squared deviations): the
// sums of d = x - K and d^2 in double, with K the channel's first value, so
// that var = E[d^2] - E[d]^2 does not cancel when the mean is large next to
// the spread (d is then of the order of the spread itself).
void CpuBackend::batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  const ChannelView v(x);
  dispatch_floating(x.dtype(), "batch_norm_stats", [&]<typename T>() {
    const T* xp = x.data<T>();
    T* mp = mean.data<T>();
    T* vp = var.data<T>();
    const double inv_m = 1.0 / static_cast<double>(v.count());
    std::vector<double> shifts(static_cast<std::size_t>(v.C), 0.0);
    if (v.count() > 0)
      for (std::int64_t c = 0; c < v.C; ++c) shifts[c] = static_cast<double>(xp[c * v.S]);
    const auto sums = channel_sums(v, x.numel() > kParallelWork, [&](std::int64_t off, std::int64_t c) {
      return shifted_sums(xp + off, v.S, shifts[c]);
    });
    for (std::int64_t c = 0; c < v.C; ++c) {
      const auto [sum, sq] = sums[c];
      const double mean_d = sum * inv_m;
      mp[c] = static_cast<T>(shifts[c] + mean_d);
      vp[c] = static_cast<T>(std::max(0.0, sq * inv_m - mean_d * mean_d));
    }
  });
}

void CpuBackend::batch_norm_coefficients(const Tensor& mean, const Tensor& var, const Tensor& weight,
                                         const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                                         BatchNormCoefficientStep step, const Tensor& invstd, const Tensor& scale,
                                         const Tensor& shift) {
  dispatch_floating(mean.dtype(), "batch_norm_coefficients", [&]<typename T>() {
    const batch_norm_math::CoefficientScalars<T> s = batch_norm_math::coefficient_scalars<T>(step);
    const auto or_null = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    const batch_norm_math::CoefficientArrays<T> a{mean.data<T>(),      var.data<T>(),        weight.data<T>(),
                                                  or_null(bias),       or_null(running_mean), or_null(running_var),
                                                  invstd.data<T>(),    scale.data<T>(),      shift.data<T>()};
    for (std::int64_t c = 0; c < mean.numel(); ++c) batch_norm_math::coefficients_of_channel(s, a, c);
  });
}

void CpuBackend::batch_norm_affine(const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu,
                                   const Tensor& out) {
  const ChannelView v(x);
  dispatch_floating(x.dtype(), "batch_norm_affine", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* a = scale.data<T>();
    const T* b = shift.data<T>();
    T* yp = out.data<T>();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelWork)
    for (std::int64_t p = 0; p < v.N * v.C; ++p) {
      const T k = a[p % v.C], d = b[p % v.C];
      const T* xi = xp + p * v.S;
      T* yi = yp + p * v.S;
      if (relu) {  // two loops, so that neither tests the flag per element
        for (std::int64_t s = 0; s < v.S; ++s) {
          const T y = xi[s] * k + d;
          yi[s] = y > T(0) ? y : T(0);  // as relu: NaN gives 0
        }
      } else {
        for (std::int64_t s = 0; s < v.S; ++s) yi[s] = xi[s] * k + d;
      }
    }
  });
}

void CpuBackend::batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& scale,
                                     const Tensor& shift, const Tensor& out) {
  const ChannelView v(x);
  dispatch_floating(x.dtype(), "batch_norm_add_relu", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* rp = residual.data<T>();
    const T* a = scale.data<T>();
    const T* b = shift.data<T>();
    T* yp = out.data<T>();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelWork)
    for (std::int64_t p = 0; p < v.N * v.C; ++p) {
      const T k = a[p % v.C], d = b[p % v.C];
      const T* xi = xp + p * v.S;
      const T* ri = rp + p * v.S;
      T* yi = yp + p * v.S;
      for (std::int64_t s = 0; s < v.S; ++s) {
        const T y = (xi[s] * k + d) + ri[s];  // rounded as batch_norm, then add
        yi[s] = y > T(0) ? y : T(0);          // as relu: NaN gives 0
      }
    }
  });
}

void CpuBackend::batch_norm_relu_backward_reduce(const Tensor& grad_out, const Tensor& out, const Tensor& x,
                                                 const Tensor& mean, const Tensor& grad_masked,
                                                 const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  const ChannelView v(x);
  dispatch_floating(x.dtype(), "batch_norm_relu_backward_reduce", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* gp = grad_out.data<T>();
    const T* yp = out.data<T>();
    const T* mp = mean.data<T>();
    T* gmp = grad_masked.data<T>();
    T* s1 = sum_dy.data<T>();
    T* s2 = sum_dy_xmu.data<T>();
    const auto sums = channel_sums(v, x.numel() > kParallelWork, [&](std::int64_t off, std::int64_t c) {
      return masked_gradient_sums(gp + off, yp + off, xp + off, gmp + off, v.S, static_cast<double>(mp[c]));
    });
    for (std::int64_t c = 0; c < v.C; ++c) {
      s1[c] = static_cast<T>(sums[c].first);
      s2[c] = static_cast<T>(sums[c].second);
    }
  });
}

void CpuBackend::batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& x,
                                            const Tensor& mean, const Tensor& sum_dy,
                                            const Tensor& sum_dy_xmu) {
  const ChannelView v(x);
  dispatch_floating(x.dtype(), "batch_norm_backward_reduce", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* gp = grad_out.data<T>();
    const T* mp = mean.data<T>();
    T* s1 = sum_dy.data<T>();
    T* s2 = sum_dy_xmu.data<T>();
    const auto sums = channel_sums(v, x.numel() > kParallelWork, [&](std::int64_t off, std::int64_t c) {
      return gradient_sums(gp + off, xp + off, v.S, static_cast<double>(mp[c]));
    });
    for (std::int64_t c = 0; c < v.C; ++c) {
      s1[c] = static_cast<T>(sums[c].first);
      s2[c] = static_cast<T>(sums[c].second);
    }
  });
}

void CpuBackend::batch_norm_backward_input(const Tensor& grad_out, const Tensor& x,
                                           const Tensor& mean, const Tensor& invstd,
                                           const Tensor& weight, const Tensor& sum_dy,
                                           const Tensor& sum_dy_xmu, const Tensor& grad_in) {
  const ChannelView v(x);
  dispatch_floating(x.dtype(), "batch_norm_backward_input", [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* gp = grad_out.data<T>();
    const T* mp = mean.data<T>();
    const T* ip = invstd.data<T>();
    const T* wp = weight.data<T>();
    const T* s1 = sum_dy.data<T>();
    const T* s2 = sum_dy_xmu.data<T>();
    T* gip = grad_in.data<T>();
    const T inv_m = T(1) / static_cast<T>(v.count());
#pragma omp parallel for schedule(static) if (x.numel() > kParallelWork)
    for (std::int64_t p = 0; p < v.N * v.C; ++p) {
      const std::int64_t c = p % v.C;
      const T mu = mp[c], istd = ip[c];
      const T mean_dy = s1[c] * inv_m;
      const T proj = s2[c] * inv_m * istd * istd;  // coefficient of (x - mean)
      const T scale = wp[c] * istd;
      const T* xi = xp + p * v.S;
      const T* gi = gp + p * v.S;
      T* out = gip + p * v.S;
      for (std::int64_t s = 0; s < v.S; ++s) out[s] = scale * (gi[s] - mean_dy - (xi[s] - mu) * proj);
    }
  });
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
