// Direct convolution: the defining sums, evaluated as loops over the output.
//
// Every pass is organised as "row axpys": for one filter tap (r, s) and one
// output row p, a whole row of outputs is updated from one row of inputs with
// a single scalar weight. With stride_w == 1 the row is contiguous in memory
// and the inner loop vectorises; other strides gather or scatter. The
// columns whose tap lands in the padding are cut off up front (valid_range),
// so the inner loops carry no bounds checks.
//
// Parallelisation never needs atomics: forward gives each thread whole output
// planes (n, k), backward-data whole input-gradient planes (n, c), and
// backward-weights whole filters (k, c).
#include <algorithm>
#include <cstdint>

#include "cpu/conv/conv_common.h"
#include "cpu/conv/implementations.h"

namespace convkit::cpu {
namespace {

// Sizes of one descriptor, as plain locals for the loops below.
struct Dims {
  std::int64_t N, C, H, W, K, R, S, P, Q, Cg, Kg;
  std::int64_t sh, sw, pt, pl, dh, dw;
  explicit Dims(const Conv2dDesc& d)
      : N(d.N), C(d.C), H(d.H), W(d.W), K(d.K), R(d.R), S(d.S), P(d.P()), Q(d.Q()),
        Cg(d.C_per_group()), Kg(d.K_per_group()), sh(d.stride_h), sw(d.stride_w),
        pt(d.pad_top), pl(d.pad_left), dh(d.dilation_h), dw(d.dilation_w) {}
};

// y[n][k][p][q] = b[k] + sum_{c,r,s} x[n][g*Cg + c][p*sh - pt + r*dh][q*sw - pl + s*dw] * w[k][c][r][s]
template <typename T>
void direct_forward(const Dims& d, const T* x, const T* w, const T* b, T* y) {
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t n = 0; n < d.N; ++n) {
    for (std::int64_t k = 0; k < d.K; ++k) {
      T* y_plane = y + (n * d.K + k) * d.P * d.Q;
      std::fill(y_plane, y_plane + d.P * d.Q, b != nullptr ? b[k] : T(0));
      const std::int64_t group = k / d.Kg;
      for (std::int64_t c = 0; c < d.Cg; ++c) {
        const T* x_plane = x + (n * d.C + group * d.Cg + c) * d.H * d.W;
        const T* w_filter = w + (k * d.Cg + c) * d.R * d.S;
        for (std::int64_t r = 0; r < d.R; ++r) {
          // Output rows whose tap r lands inside the image.
          const IndexRange rows = valid_range(d.P, d.sh, r * d.dh - d.pt, d.H);
          for (std::int64_t s = 0; s < d.S; ++s) {
            const T weight = w_filter[r * d.S + s];
            const std::int64_t col_offset = s * d.dw - d.pl;
            const IndexRange cols = valid_range(d.Q, d.sw, col_offset, d.W);
            for (std::int64_t p = rows.begin; p < rows.end; ++p) {
              const T* x_row = x_plane + (p * d.sh + r * d.dh - d.pt) * d.W;
              T* y_row = y_plane + p * d.Q;
              if (d.sw == 1) {
#pragma omp simd
                for (std::int64_t q = cols.begin; q < cols.end; ++q) y_row[q] += weight * x_row[q + col_offset];
              } else {
                for (std::int64_t q = cols.begin; q < cols.end; ++q)
                  y_row[q] += weight * x_row[q * d.sw + col_offset];
              }
            }
          }
        }
      }
    }
  }
}

// dx[n][c][h][w] = sum over (k, r, s, p, q) with h = p*sh - pt + r*dh and
// w = q*sw - pl + s*dw of dy[n][k][p][q] * w[k][c][r][s]: the forward sum
// read backwards, scattering each dy row into the dx row it came from.
template <typename T>
void direct_backward_data(const Dims& d, const T* dy, const T* w, T* dx) {
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t n = 0; n < d.N; ++n) {
    for (std::int64_t c = 0; c < d.C; ++c) {
      T* dx_plane = dx + (n * d.C + c) * d.H * d.W;
      std::fill(dx_plane, dx_plane + d.H * d.W, T(0));
      const std::int64_t group = c / d.Cg, c_in_group = c % d.Cg;
      for (std::int64_t kk = 0; kk < d.Kg; ++kk) {
        const std::int64_t k = group * d.Kg + kk;
        const T* dy_plane = dy + (n * d.K + k) * d.P * d.Q;
        const T* w_filter = w + (k * d.Cg + c_in_group) * d.R * d.S;
        for (std::int64_t r = 0; r < d.R; ++r) {
          const IndexRange rows = valid_range(d.P, d.sh, r * d.dh - d.pt, d.H);
          for (std::int64_t s = 0; s < d.S; ++s) {
            const T weight = w_filter[r * d.S + s];
            const std::int64_t col_offset = s * d.dw - d.pl;
            const IndexRange cols = valid_range(d.Q, d.sw, col_offset, d.W);
            for (std::int64_t p = rows.begin; p < rows.end; ++p) {
              T* dx_row = dx_plane + (p * d.sh + r * d.dh - d.pt) * d.W;
              const T* dy_row = dy_plane + p * d.Q;
              if (d.sw == 1) {
#pragma omp simd
                for (std::int64_t q = cols.begin; q < cols.end; ++q) dx_row[q + col_offset] += weight * dy_row[q];
              } else {
                // Distinct q hit distinct columns, so the scatter has no conflicts.
                for (std::int64_t q = cols.begin; q < cols.end; ++q)
                  dx_row[q * d.sw + col_offset] += weight * dy_row[q];
              }
            }
          }
        }
      }
    }
  }
}

// dw[k][c][r][s] = sum_{n,p,q} dy[n][k][p][q] * x[n][g*Cg + c][p*sh - pt + r*dh][q*sw - pl + s*dw]
// Loop order n -> (r, s) -> p keeps one dy plane and one x plane in L1 while
// all R*S taps of the filter are accumulated.
template <typename T>
void direct_backward_weights(const Dims& d, const T* x, const T* dy, T* dw) {
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t k = 0; k < d.K; ++k) {
    for (std::int64_t c = 0; c < d.Cg; ++c) {
      T* dw_filter = dw + (k * d.Cg + c) * d.R * d.S;
      std::fill(dw_filter, dw_filter + d.R * d.S, T(0));
      const std::int64_t group = k / d.Kg;
      for (std::int64_t n = 0; n < d.N; ++n) {
        const T* dy_plane = dy + (n * d.K + k) * d.P * d.Q;
        const T* x_plane = x + (n * d.C + group * d.Cg + c) * d.H * d.W;
        for (std::int64_t r = 0; r < d.R; ++r) {
          const IndexRange rows = valid_range(d.P, d.sh, r * d.dh - d.pt, d.H);
          for (std::int64_t s = 0; s < d.S; ++s) {
            const std::int64_t col_offset = s * d.dw - d.pl;
            const IndexRange cols = valid_range(d.Q, d.sw, col_offset, d.W);
            T sum = 0;
            for (std::int64_t p = rows.begin; p < rows.end; ++p) {
              const T* x_row = x_plane + (p * d.sh + r * d.dh - d.pt) * d.W;
              const T* dy_row = dy_plane + p * d.Q;
              if (d.sw == 1) {
#pragma omp simd reduction(+ : sum)
                for (std::int64_t q = cols.begin; q < cols.end; ++q) sum += dy_row[q] * x_row[q + col_offset];
              } else {
                for (std::int64_t q = cols.begin; q < cols.end; ++q) sum += dy_row[q] * x_row[q * d.sw + col_offset];
              }
            }
            dw_filter[r * d.S + s] += sum;
          }
        }
      }
    }
  }
}

class DirectConv final : public ConvAlgorithm {
 public:
  ConvAlgo algo() const override { return ConvAlgo::direct; }

  Support supports(const Conv2dDesc& desc) const override {
    try {
      desc.validate("conv2d (cpu, direct)");
    } catch (const Error& e) {
      return Support::no(e.what());
    }
    return Support::yes();
  }

  std::size_t workspace_bytes(const Conv2dDesc&, DType, ConvPass) const override { return 0; }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b,
               void* y, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::forward, {{x, "x"}, {w, "w"}, {y, "y"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      direct_forward<T>(Dims(desc), static_cast<const T*>(x), static_cast<const T*>(w),
                        static_cast<const T*>(b), static_cast<T*>(y));
    });
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_data, {{dy, "dy"}, {w, "w"}, {dx, "dx"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      direct_backward_data<T>(Dims(desc), static_cast<const T*>(dy), static_cast<const T*>(w),
                              static_cast<T*>(dx));
    });
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw,
                        void* db, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_weights, {{x, "x"}, {dy, "dy"}, {dw, "dw"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      direct_backward_weights<T>(Dims(desc), static_cast<const T*>(x), static_cast<const T*>(dy),
                                 static_cast<T*>(dw));
      if (db != nullptr) bias_gradient<T>(desc, static_cast<const T*>(dy), static_cast<T*>(db));
    });
  }
};

}  // namespace

const ConvAlgorithm& direct_conv_algorithm() {
  static const DirectConv instance;
  return instance;
}

}  // namespace convkit::cpu
