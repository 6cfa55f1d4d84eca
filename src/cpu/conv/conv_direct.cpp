// Direct convolution: the defining sums, evaluated as loops over the output.
//
// Every pass is organised as "row axpys": for one filter tap (r, s) and one
// output row p, a whole row of outputs is updated from one row of inputs with
// a single scalar weight. With stride_w == 1 the row is contiguous in memory
// and the inner loop vectorises; other strides gather or scatter. The
// columns whose tap lands in the padding are cut off up front (valid_range),
// so the inner loops carry no bounds checks.
//
// Channel blocking: each input row that is loaded feeds kBlock rows of
// output channels (forward, backward-weights) or of input channels
// (backward-data) at once, with kBlock weights held in registers. That cuts
// the loads per multiply-add from about 3 to about 1.5, which is what bounds
// these loops. Block sizes are compile-time constants; the channels left over
// at the end of a group go through the same code with a block of 1, which is
// the plain one-channel-at-a-time loop.
//
// Parallelisation never needs atomics: forward gives each thread whole output
// planes (n, k-block), backward-data whole input-gradient planes (n, c-block),
// and backward-weights whole filters (k-block, c). Tasks are handed out
// dynamically, so a thread that loses its core for a while on a shared
// machine does not hold the others up.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "cpu/conv/conv_common.h"
#include "cpu/conv/implementations.h"

namespace convkit::cpu {
namespace {

constexpr std::int64_t kBlock = 4;

// Sizes of one descriptor, as plain locals for the loops below.
struct Dims {
  std::int64_t N, C, H, W, K, R, S, P, Q, Cg, Kg;
  std::int64_t sh, sw, pt, pl, dh, dw;
  explicit Dims(const Conv2dDesc& d)
      : N(d.N), C(d.C), H(d.H), W(d.W), K(d.K), R(d.R), S(d.S), P(d.P()), Q(d.Q()),
        Cg(d.C_per_group()), Kg(d.K_per_group()), sh(d.stride_h), sw(d.stride_w),
        pt(d.pad_top), pl(d.pad_left), dh(d.dilation_h), dw(d.dilation_w) {}
};

// Runs fn(outer, first_channel, count) for outer in [0, outer_count) and every
// block of up to kBlock consecutive channels within each of `groups` groups of
// `per_group` channels; in parallel when `parallel`.
template <typename Fn>
void for_each_channel_block(std::int64_t outer_count, std::int64_t groups, std::int64_t per_group, bool parallel,
                            Fn fn) {
  const std::int64_t blocks_per_group = (per_group + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) schedule(dynamic) if (parallel)
  for (std::int64_t outer = 0; outer < outer_count; ++outer) {
    for (std::int64_t gb = 0; gb < groups * blocks_per_group; ++gb) {
      const std::int64_t first = (gb / blocks_per_group) * per_group + (gb % blocks_per_group) * kBlock;
      fn(outer, first, std::min(kBlock, per_group - (gb % blocks_per_group) * kBlock));
    }
  }
}

// Calls body.template operator()<B>() with B = kBlock for a full block, else
// once per channel with B = 1 (`first` advanced accordingly).
template <typename Body>
void run_block(std::int64_t first, std::int64_t count, Body body) {
  if (count == kBlock) {
    body.template operator()<kBlock>(first);
  } else {
    for (std::int64_t i = 0; i < count; ++i) body.template operator()<1>(first + i);
  }
}

// Forward for output channels k0 .. k0+B-1 of image x_image:
// y[k][p][q] = b[k] + sum_{c,r,s} x[g*Cg + c][p*sh - pt + r*dh][q*sw - pl + s*dw] * w[k][c][r][s]
template <std::int64_t B, typename T>
void forward_block(const Dims& d, const T* x_image, const T* w, const T* b, T* y_image, std::int64_t k0) {
  std::array<T*, B> y_plane;
  for (std::int64_t j = 0; j < B; ++j) {
    y_plane[j] = y_image + (k0 + j) * d.P * d.Q;
    std::fill(y_plane[j], y_plane[j] + d.P * d.Q, b != nullptr ? b[k0 + j] : T(0));
  }
  const std::int64_t group = k0 / d.Kg;
  for (std::int64_t c = 0; c < d.Cg; ++c) {
    const T* x_plane = x_image + (group * d.Cg + c) * d.H * d.W;
    for (std::int64_t r = 0; r < d.R; ++r) {
      // Output rows whose tap r lands inside the image.
      const IndexRange rows = valid_range(d.P, d.sh, r * d.dh - d.pt, d.H);
      for (std::int64_t s = 0; s < d.S; ++s) {
        std::array<T, B> weight;
        for (std::int64_t j = 0; j < B; ++j) weight[j] = w[(((k0 + j) * d.Cg + c) * d.R + r) * d.S + s];
        const std::int64_t col_offset = s * d.dw - d.pl;
        const IndexRange cols = valid_range(d.Q, d.sw, col_offset, d.W);
        for (std::int64_t p = rows.begin; p < rows.end; ++p) {
          const T* x_row = x_plane + (p * d.sh + r * d.dh - d.pt) * d.W;
          std::array<T*, B> y_row;
          for (std::int64_t j = 0; j < B; ++j) y_row[j] = y_plane[j] + p * d.Q;
          if (d.sw == 1) {
#pragma omp simd
            for (std::int64_t q = cols.begin; q < cols.end; ++q) {
              const T v = x_row[q + col_offset];
              for (std::int64_t j = 0; j < B; ++j) y_row[j][q] += weight[j] * v;
            }
          } else {
            for (std::int64_t q = cols.begin; q < cols.end; ++q) {
              const T v = x_row[q * d.sw + col_offset];
              for (std::int64_t j = 0; j < B; ++j) y_row[j][q] += weight[j] * v;
            }
          }
        }
      }
    }
  }
}

template <typename T>
void direct_forward(const Dims& d, const T* x, const T* w, const T* b, T* y, bool parallel) {
  for_each_channel_block(d.N, d.C / d.Cg, d.Kg, parallel, [&](std::int64_t n, std::int64_t k0, std::int64_t count) {
    run_block(k0, count, [&]<std::int64_t B>(std::int64_t k) {
      forward_block<B>(d, x + n * d.C * d.H * d.W, w, b, y + n * d.K * d.P * d.Q, k);
    });
  });
}

// Backward-data for input channels c0 .. c0+B-1 (one group) of one image:
// dx[c][h][w] = sum over (k, r, s, p, q) with h = p*sh - pt + r*dh and
// w = q*sw - pl + s*dw of dy[k][p][q] * w[k][c][r][s] -- the forward sum read
// backwards, scattering each dy row into the dx rows it came from.
template <std::int64_t B, typename T>
void backward_data_block(const Dims& d, const T* dy_image, const T* w, T* dx_image, std::int64_t c0) {
  std::array<T*, B> dx_plane;
  for (std::int64_t j = 0; j < B; ++j) {
    dx_plane[j] = dx_image + (c0 + j) * d.H * d.W;
    std::fill(dx_plane[j], dx_plane[j] + d.H * d.W, T(0));
  }
  const std::int64_t group = c0 / d.Cg, c_in_group = c0 % d.Cg;
  for (std::int64_t kk = 0; kk < d.Kg; ++kk) {
    const std::int64_t k = group * d.Kg + kk;
    const T* dy_plane = dy_image + k * d.P * d.Q;
    for (std::int64_t r = 0; r < d.R; ++r) {
      const IndexRange rows = valid_range(d.P, d.sh, r * d.dh - d.pt, d.H);
      for (std::int64_t s = 0; s < d.S; ++s) {
        std::array<T, B> weight;
        for (std::int64_t j = 0; j < B; ++j) weight[j] = w[((k * d.Cg + c_in_group + j) * d.R + r) * d.S + s];
        const std::int64_t col_offset = s * d.dw - d.pl;
        const IndexRange cols = valid_range(d.Q, d.sw, col_offset, d.W);
        for (std::int64_t p = rows.begin; p < rows.end; ++p) {
          const std::int64_t h = p * d.sh + r * d.dh - d.pt;
          const T* dy_row = dy_plane + p * d.Q;
          std::array<T*, B> dx_row;
          for (std::int64_t j = 0; j < B; ++j) dx_row[j] = dx_plane[j] + h * d.W;
          if (d.sw == 1) {
#pragma omp simd
            for (std::int64_t q = cols.begin; q < cols.end; ++q) {
              const T v = dy_row[q];
              for (std::int64_t j = 0; j < B; ++j) dx_row[j][q + col_offset] += weight[j] * v;
            }
          } else {
            // Distinct q hit distinct columns, so the scatter has no conflicts.
            for (std::int64_t q = cols.begin; q < cols.end; ++q) {
              const T v = dy_row[q];
              for (std::int64_t j = 0; j < B; ++j) dx_row[j][q * d.sw + col_offset] += weight[j] * v;
            }
          }
        }
      }
    }
  }
}

template <typename T>
void direct_backward_data(const Dims& d, const T* dy, const T* w, T* dx, bool parallel) {
  for_each_channel_block(d.N, d.C / d.Cg, d.Cg, parallel, [&](std::int64_t n, std::int64_t c0, std::int64_t count) {
    run_block(c0, count, [&]<std::int64_t B>(std::int64_t c) {
      backward_data_block<B>(d, dy + n * d.K * d.P * d.Q, w, dx + n * d.C * d.H * d.W, c);
    });
  });
}

// Backward-weights for output channels k0 .. k0+B-1 and input channel c (in group):
// dw[k][c][r][s] = sum_{n,p,q} dy[n][k][p][q] * x[n][g*Cg + c][p*sh - pt + r*dh][q*sw - pl + s*dw]
// Per (n, r, s) the products are first accumulated column by column in
// `partial` (B rows of Q: an axpy, which vectorises without a reduction) and
// summed once, rather than reducing a short dot product per output row.
template <std::int64_t B, typename T>
void backward_weights_block(const Dims& d, const T* x, const T* dy, T* dw, std::int64_t k0, std::int64_t c,
                            std::vector<T>& partial) {
  partial.resize(static_cast<std::size_t>(B * d.Q));
  std::array<T*, B> dw_filter, acc;
  for (std::int64_t j = 0; j < B; ++j) {
    dw_filter[j] = dw + ((k0 + j) * d.Cg + c) * d.R * d.S;
    std::fill(dw_filter[j], dw_filter[j] + d.R * d.S, T(0));
    acc[j] = partial.data() + j * d.Q;
  }
  const std::int64_t group = k0 / d.Kg;
  for (std::int64_t n = 0; n < d.N; ++n) {
    const T* x_plane = x + (n * d.C + group * d.Cg + c) * d.H * d.W;
    const T* dy_plane = dy + (n * d.K + k0) * d.P * d.Q;  // plane j at + j*P*Q
    for (std::int64_t r = 0; r < d.R; ++r) {
      const IndexRange rows = valid_range(d.P, d.sh, r * d.dh - d.pt, d.H);
      for (std::int64_t s = 0; s < d.S; ++s) {
        const std::int64_t col_offset = s * d.dw - d.pl;
        const IndexRange cols = valid_range(d.Q, d.sw, col_offset, d.W);
        std::fill(partial.begin(), partial.end(), T(0));
        for (std::int64_t p = rows.begin; p < rows.end; ++p) {
          const T* x_row = x_plane + (p * d.sh + r * d.dh - d.pt) * d.W;
          std::array<const T*, B> dy_row;
          for (std::int64_t j = 0; j < B; ++j) dy_row[j] = dy_plane + j * d.P * d.Q + p * d.Q;
          if (d.sw == 1) {
#pragma omp simd
            for (std::int64_t q = cols.begin; q < cols.end; ++q) {
              const T v = x_row[q + col_offset];
              for (std::int64_t j = 0; j < B; ++j) acc[j][q] += dy_row[j][q] * v;
            }
          } else {
            for (std::int64_t q = cols.begin; q < cols.end; ++q) {
              const T v = x_row[q * d.sw + col_offset];
              for (std::int64_t j = 0; j < B; ++j) acc[j][q] += dy_row[j][q] * v;
            }
          }
        }
        for (std::int64_t j = 0; j < B; ++j) {
          T sum = 0;
          for (std::int64_t q = cols.begin; q < cols.end; ++q) sum += acc[j][q];
          dw_filter[j][r * d.S + s] += sum;
        }
      }
    }
  }
}

template <typename T>
void direct_backward_weights(const Dims& d, const T* x, const T* dy, T* dw, bool parallel) {
  // Blocks of output channels (outer) x input channels of the group (inner).
  const std::int64_t groups = d.C / d.Cg, blocks_per_group = (d.Kg + kBlock - 1) / kBlock;
#pragma omp parallel if (parallel)
  {
    std::vector<T> partial;
#pragma omp for collapse(2) schedule(dynamic)
    for (std::int64_t gb = 0; gb < groups * blocks_per_group; ++gb) {
      for (std::int64_t c = 0; c < d.Cg; ++c) {
        const std::int64_t first = (gb / blocks_per_group) * d.Kg + (gb % blocks_per_group) * kBlock;
        const std::int64_t count = std::min(kBlock, d.Kg - (gb % blocks_per_group) * kBlock);
        run_block(first, count, [&]<std::int64_t B>(std::int64_t k) {
          backward_weights_block<B>(d, x, dy, dw, k, c, partial);
        });
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
                        static_cast<const T*>(b), static_cast<T*>(y), worth_parallelising(desc));
    });
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_data, {{dy, "dy"}, {w, "w"}, {dx, "dx"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      direct_backward_data<T>(Dims(desc), static_cast<const T*>(dy), static_cast<const T*>(w),
                              static_cast<T*>(dx), worth_parallelising(desc));
    });
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw,
                        void* db, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_weights, {{x, "x"}, {dy, "dy"}, {dw, "dw"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      direct_backward_weights<T>(Dims(desc), static_cast<const T*>(x), static_cast<const T*>(dy),
                                 static_cast<T*>(dw), worth_parallelising(desc));
      if (db != nullptr) bias_gradient<T>(desc, static_cast<const T*>(dy), static_cast<T*>(db));
    });
  }
};

}  // namespace

const ConvAlgorithm& direct_conv_algorithm() {
  static const DirectConv instance;
  return instance;
}

namespace {
const conv::ConvAlgorithmRegistrar kRegistered(conv_registry(), direct_conv_algorithm());
}  // namespace

}  // namespace convkit::cpu
