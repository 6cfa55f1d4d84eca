// im2col + GEMM convolution: every pass becomes one matrix product per image
// and group, run by Eigen on maps of the caller's buffers (no copies besides
// the column matrix itself).
//
//   forward           y[n, g]  = w[g] * col(x[n])[g]                 (+ bias)
//   backward-data     dx[n]    = col2im( w[g]^T * dy[n, g] )
//   backward-weights  dw[g]   += dy[n, g] * col(x[n])[g]^T            (summed over n)
//
// with w[g] the Kg x Cg*R*S filter matrix of group g, dy[n, g] the Kg x P*Q
// output-gradient block, col(x[n])[g] the Cg*R*S x P*Q block of the image's
// column matrix (im2col.h). A 1x1, stride-1, unpadded convolution needs no
// im2col at all: the image itself (C x H*W) is its column matrix.
//
// Two GEMM kernels compute these products (GemmKernel). `eigen` forms the
// column matrix and hands it to Eigen: the simple twin, and the only path in
// float64. `taps` (tap_gemm.h) is our implicit GEMM for stride-1 float32: it
// reads the column matrix's rows straight out of a zero-padded copy of the
// image, so a pass's scratch is one padded image (or output gradient) instead
// of C*R*S x P*Q floats. `automatic` takes taps where it measured faster
// (taps_pays_off; docs/algorithms/im2col_gemm.md has the figures).
//
// Memory: images are processed by "lanes". Lane i handles images i, i+lanes,
// i+2*lanes, ...; lanes run in parallel, each GEMM single-threaded. The lane
// count is fixed by the descriptor (at most kMaxLanes, fewer when
// desc.workspace_limit demands), never by the thread count, so
// workspace_bytes() is a pure function of the descriptor, and which images
// backward-weights sums together, in which order, does not depend on how many
// threads run. The workspace holds one column buffer per lane, used by thread
// (LaneBuffers::slot_scratch). Backward-weights gives every lane but the first its own dw
// accumulator (lane 0 accumulates in dw itself) and adds them up in lane
// order at the end. It sums the bias gradient in the same lane loop, right
// after each image's GEMM has brought dy[n] into the cache: a separate pass
// would read all of dy from memory a second time (a quarter of the pass's
// time on a first layer, where dy is 16.8 MB and the GEMM is short).
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "conv/implicit_gemm.h"
#include "cpu/conv/conv_common.h"
#include "cpu/conv/eigen_maps.h"
#include "cpu/conv/im2col.h"
#include "cpu/conv/implementations.h"
#include "cpu/conv/tap_gemm.h"
#include "cpu/isa_namespace.h"

namespace convkit::cpu::CONVKIT_ISA_NS {
namespace {

// Enough images in flight for 16 threads to work on whole images; machines
// with more threads fall back to Eigen's multi-threaded GEMM per image
// whenever lanes < threads (see run_lanes).
constexpr std::int64_t kMaxLanes = 16;

using conv::GemmShape;  // the matrix sizes (conv/implicit_gemm.h)

// Whether automatic runs `pass` of `d` with the tap kernels. Measured on the
// cifar10-cnn and fmnist-cnn layers at batch 128, against Eigen in the same
// run (im2col_gemm.md has the table):
//  - forward wins 1.1-1.7x with 27 or more taps per output (C*R*S) and
//    loses 0.8x with 9 (a 1-channel 3x3 layer), where a tile's fixed costs
//    outweigh its 9 steps;
//  - backward-data, whose tile covers min(6, C/groups) input channels, wins
//    1.3-1.7x from 3 channels up and loses 0.7x with 1, where the tile's two
//    accumulator chains leave the FMA units waiting on their latency;
//  - backward-weights wins 1.4-2.0x on 28- to 32-column images and loses
//    0.45-0.7x on 13 and 15 columns, where each tile's rows are too short to
//    pay for its final reductions;
//  - forward and backward-data need rows of 12 columns or more (Q, or W for
//    backward-data): a tile is 16 columns wide, and on resnet18-cifar's 8x8
//    and 4x4 layers (half or a quarter of each tile used) they lost 0.6-0.8x,
//    while on 13 to 15 columns they still won.
bool taps_pays_off(const Conv2dDesc& d, ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return d.C_per_group() * d.R * d.S >= 18 && d.Q() >= 12;
    case ConvPass::backward_data: return d.C_per_group() >= 3 && d.W >= 12;
    case ConvPass::backward_weights: return d.Q() >= 24;
  }
  return false;
}

// Which GEMM kernel runs a pass: taps only in float32, on shapes it computes,
// in builds that have it, and never for the 1x1 case that needs no im2col.
template <typename T>
bool use_taps(const Conv2dDesc& d, ConvPass pass, GemmKernel kernel) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (kernel == GemmKernel::eigen || !tap_gemm_compiled() || !tap_gemm_shape(d) || GemmShape(d).image_is_col)
      return false;
    return kernel == GemmKernel::taps || taps_pays_off(d, pass);
  }
}

template <typename T>
struct LaneBuffers {
  T* cols = nullptr;            // lanes x lane_elems (column matrix, or the taps' padded image)
  std::int64_t lane_elems = 0;
  T* flipped_filters = nullptr; // backward-data with taps only
  T* accumulators = nullptr;    // (lanes - 1) x dw_elems, backward-weights only
  double* bias_sums = nullptr;  // lanes x K, backward-weights only
  std::size_t bytes = 0;
  // The scratch buffer for run_lanes' `slot`. A thread reusing one buffer
  // keeps it in its core's L2 from image to image, where cycling through the
  // buffers of all its lanes would not (~12% faster for a 32-channel 3x3 layer).
  T* slot_scratch(std::int64_t slot) const { return cols + slot * lane_elems; }
};

// Scratch of one lane: the column matrix, or with taps the padded image.
std::int64_t lane_scratch_elems(const Conv2dDesc& d, ConvPass pass, bool taps) {
  return taps ? tap_gemm_scratch_floats(d, pass) : GemmShape(d).col_elems();
}

template <typename T>
LaneBuffers<T> carve_lanes(const Conv2dDesc& d, ConvPass pass, bool taps, std::int64_t lanes, void* base) {
  const GemmShape g(d);
  WorkspaceCarver carver(base);
  LaneBuffers<T> out;
  out.lane_elems = lane_scratch_elems(d, pass, taps);
  out.cols = carver.take<T>(static_cast<std::size_t>(lanes * out.lane_elems));
  if (taps && pass == ConvPass::backward_data)
    out.flipped_filters = carver.take<T>(static_cast<std::size_t>(tap_gemm_flipped_filter_floats(d)));
  if (pass == ConvPass::backward_weights) {
    out.accumulators = carver.take<T>(static_cast<std::size_t>((lanes - 1) * g.dw_elems()));
    out.bias_sums = carver.take<double>(static_cast<std::size_t>(lanes * g.K));
  }
  out.bytes = carver.bytes();
  return out;
}

// The most lanes (<= kMaxLanes, <= N) whose buffers fit in workspace_limit.
template <typename T>
std::int64_t plan_lanes(const Conv2dDesc& d, ConvPass pass, bool taps) {
  const GemmShape g(d);
  for (std::int64_t lanes = std::min(d.N, kMaxLanes); lanes >= 1; --lanes) {
    if (carve_lanes<T>(d, pass, taps, lanes, nullptr).bytes <= d.workspace_limit) return lanes;
  }
  const std::string scratch =
      taps ? "a zero-padded image of " + std::to_string(lane_scratch_elems(d, pass, taps)) + " float32 values"
           : "column matrix C*R*S x P*Q = " + std::to_string(g.groups * g.depth) + " x " + std::to_string(g.plane) +
                 " " + std::string(dtype_name(dtype_of<T>::value)) + " values";
  CK_FAIL(conv_op_name(ConvAlgo::im2col_gemm, pass), ": one image needs ",
          carve_lanes<T>(d, pass, taps, 1, nullptr).bytes, " bytes of workspace (", scratch,
          ") but workspace_limit is ", d.workspace_limit,
          " bytes; raise Conv2dDesc::workspace_limit or use the direct algorithm; descriptor: ", d.str());
}

// The column matrix of one image: formed in `scratch`, or the image itself
// when the 1x1 shortcut needs no im2col.
template <typename T>
const T* column_matrix(const Conv2dDesc& d, const T* image, T* scratch, bool parallel) {
  if (GemmShape(d).image_is_col) return image;
  im2col(d, image, scratch, parallel);
  return scratch;
}

template <typename T>
void im2col_gemm_forward(const Conv2dDesc& d, GemmKernel kernel, const T* x, const T* w, const T* b, T* y,
                         void* workspace) {
  const GemmShape g(d);
  const bool taps = use_taps<T>(d, ConvPass::forward, kernel);
  const std::int64_t lanes = plan_lanes<T>(d, ConvPass::forward, taps);
  const LaneBuffers<T> buffers = carve_lanes<T>(d, ConvPass::forward, taps, lanes, workspace);
  run_lanes(lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool inner_parallel) {
    for (std::int64_t n = lane; n < g.N; n += lanes) {
      if constexpr (std::is_same_v<T, float>) {
        if (taps) {
          tap_gemm_forward_image(d, x + n * g.image, w, b, y + n * g.K * g.plane,
                                 buffers.slot_scratch(slot), inner_parallel);
          continue;
        }
      }
      const T* cols = column_matrix(d, x + n * g.image, buffers.slot_scratch(slot), inner_parallel);
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        ConstMatrixMap<T> w_g(w + grp * g.Kg * g.depth, g.Kg, g.depth);
        ConstMatrixMap<T> col_g(cols + grp * g.depth * g.plane, g.depth, g.plane);
        MatrixMap<T> y_g(y + (n * g.K + grp * g.Kg) * g.plane, g.Kg, g.plane);
        // Eigen's GEMM accumulates into its destination, so start from the
        // bias (or zero): one pass over y instead of zeroing, then adding the bias.
        if (b != nullptr) {
          y_g = ConstVectorMap<T>(b + grp * g.Kg, g.Kg).replicate(1, g.plane);
        } else {
          y_g.setZero();
        }
        y_g.noalias() += w_g * col_g;
      }
    }
  });
}

template <typename T>
void im2col_gemm_backward_data(const Conv2dDesc& d, GemmKernel kernel, const T* dy, const T* w, T* dx,
                               void* workspace) {
  const GemmShape g(d);
  const bool taps = use_taps<T>(d, ConvPass::backward_data, kernel);
  const std::int64_t lanes = plan_lanes<T>(d, ConvPass::backward_data, taps);
  const LaneBuffers<T> buffers = carve_lanes<T>(d, ConvPass::backward_data, taps, lanes, workspace);
  if constexpr (std::is_same_v<T, float>) {
    if (taps) tap_gemm_flip_filters(d, w, buffers.flipped_filters);
  }
  run_lanes(lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool inner_parallel) {
    for (std::int64_t n = lane; n < g.N; n += lanes) {
      if constexpr (std::is_same_v<T, float>) {
        if (taps) {
          tap_gemm_backward_data_image(d, dy + n * g.K * g.plane, buffers.flipped_filters, dx + n * g.image,
                                       buffers.slot_scratch(slot), inner_parallel);
          continue;
        }
      }
      // Without im2col the column-gradient is the image gradient itself.
      T* dcols = g.image_is_col ? dx + n * g.image : buffers.slot_scratch(slot);
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        ConstMatrixMap<T> w_g(w + grp * g.Kg * g.depth, g.Kg, g.depth);
        ConstMatrixMap<T> dy_g(dy + (n * g.K + grp * g.Kg) * g.plane, g.Kg, g.plane);
        MatrixMap<T> dcol_g(dcols + grp * g.depth * g.plane, g.depth, g.plane);
        dcol_g.noalias() = w_g.transpose() * dy_g;
      }
      if (!g.image_is_col) col2im(d, dcols, dx + n * g.image, inner_parallel);
    }
  });
}

// db, when not null, gets the bias gradient, summed in double per lane and
// then over lanes in lane order (so, like dw, independent of the thread count).
template <typename T>
void im2col_gemm_backward_weights(const Conv2dDesc& d, GemmKernel kernel, const T* x, const T* dy, T* dw, T* db,
                                  void* workspace) {
  const GemmShape g(d);
  const bool taps = use_taps<T>(d, ConvPass::backward_weights, kernel);
  const std::int64_t lanes = plan_lanes<T>(d, ConvPass::backward_weights, taps);
  const LaneBuffers<T> buffers = carve_lanes<T>(d, ConvPass::backward_weights, taps, lanes, workspace);
  auto accumulator = [&](std::int64_t lane) {
    return lane == 0 ? dw : buffers.accumulators + (lane - 1) * g.dw_elems();
  };
  run_lanes(lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool inner_parallel) {
    T* acc = accumulator(lane);
    std::fill(acc, acc + g.dw_elems(), T(0));
    double* bias_sums = buffers.bias_sums + lane * g.K;
    std::fill(bias_sums, bias_sums + g.K, 0.0);
    for (std::int64_t n = lane; n < g.N; n += lanes) {
      bool added = false;  // this image's dw, by the tap kernels
      if constexpr (std::is_same_v<T, float>) {
        if (taps) {
          tap_gemm_backward_weights_image(d, x + n * g.image, dy + n * g.K * g.plane, acc, buffers.slot_scratch(slot),
                                          inner_parallel);
          added = true;
        }
      }
      if (!added) {
        const T* cols = column_matrix(d, x + n * g.image, buffers.slot_scratch(slot), inner_parallel);
        for (std::int64_t grp = 0; grp < g.groups; ++grp) {
          ConstMatrixMap<T> dy_g(dy + (n * g.K + grp * g.Kg) * g.plane, g.Kg, g.plane);
          ConstMatrixMap<T> col_g(cols + grp * g.depth * g.plane, g.depth, g.plane);
          MatrixMap<T> dw_g(acc + grp * g.Kg * g.depth, g.Kg, g.depth);
          dw_g.noalias() += dy_g * col_g.transpose();
        }
      }
      if (db != nullptr) {
        for (std::int64_t k = 0; k < g.K; ++k) bias_sums[k] += sum_in_double(dy + (n * g.K + k) * g.plane, g.plane);
      }
    }
  });
  if (lanes > 1) {
    const std::int64_t count = g.dw_elems();
#pragma omp parallel for schedule(static) if (worth_parallelising(d))
    for (std::int64_t i = 0; i < count; ++i) {
      T sum = dw[i];
      for (std::int64_t lane = 1; lane < lanes; ++lane) sum += accumulator(lane)[i];
      dw[i] = sum;
    }
  }
  if (db != nullptr) {
    for (std::int64_t k = 0; k < g.K; ++k) {
      double total = 0;
      for (std::int64_t lane = 0; lane < lanes; ++lane) total += buffers.bias_sums[lane * g.K + k];
      db[k] = static_cast<T>(total);
    }
  }
}

class Im2colGemmConv final : public ConvAlgorithm {
 public:
  explicit Im2colGemmConv(GemmKernel kernel) : kernel_(kernel) {}
  ConvAlgo algo() const override { return ConvAlgo::im2col_gemm; }

  Support supports(const Conv2dDesc& desc) const override {
    try {
      desc.validate("conv2d (cpu, im2col_gemm)");
    } catch (const Error& e) {
      return Support::no(e.what());
    }
    return Support::yes();
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    desc.validate(conv_op_name(algo(), pass).c_str());
    std::size_t bytes = 0;
    dispatch_floating(dtype, [&]<typename T>() {
      const bool taps = use_taps<T>(desc, pass, kernel_);
      bytes = carve_lanes<T>(desc, pass, taps, plan_lanes<T>(desc, pass, taps), nullptr).bytes;
    });
    return bytes;
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b,
               void* y, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::forward, {{x, "x"}, {w, "w"}, {y, "y"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      im2col_gemm_forward<T>(desc, kernel_, static_cast<const T*>(x), static_cast<const T*>(w),
                             static_cast<const T*>(b), static_cast<T*>(y), workspace);
    });
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_data, {{dy, "dy"}, {w, "w"}, {dx, "dx"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      im2col_gemm_backward_data<T>(desc, kernel_, static_cast<const T*>(dy), static_cast<const T*>(w),
                                   static_cast<T*>(dx), workspace);
    });
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw,
                        void* db, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_weights, {{x, "x"}, {dy, "dy"}, {dw, "dw"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      im2col_gemm_backward_weights<T>(desc, kernel_, static_cast<const T*>(x), static_cast<const T*>(dy),
                                      static_cast<T*>(dw), static_cast<T*>(db), workspace);
    });
  }

 private:
  GemmKernel kernel_;
};

}  // namespace

const ConvAlgorithm& im2col_gemm_conv_algorithm_with_kernel(GemmKernel kernel) {
  static const Im2colGemmConv automatic(GemmKernel::automatic), eigen(GemmKernel::eigen), taps(GemmKernel::taps);
  switch (kernel) {
    case GemmKernel::eigen: return eigen;
    case GemmKernel::taps: return taps;
    case GemmKernel::automatic: break;
  }
  return automatic;
}

}  // namespace convkit::cpu::CONVKIT_ISA_NS
