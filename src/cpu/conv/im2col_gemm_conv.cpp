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
// Memory: images are processed by "lanes". Lane i handles images i, i+lanes,
// i+2*lanes, ...; lanes run in parallel, each GEMM single-threaded. The lane
// count is fixed by the descriptor (at most kMaxLanes, fewer when
// desc.workspace_limit demands), never by the thread count, so
// workspace_bytes() is a pure function of the descriptor, and which images
// backward-weights sums together, in which order, does not depend on how many
// threads run. The workspace holds one column buffer per lane, used by thread
// (slot_cols). Backward-weights gives every lane but the first its own dw
// accumulator (lane 0 accumulates in dw itself) and adds them up in lane
// order at the end. It sums the bias gradient in the same lane loop, right
// after each image's GEMM has brought dy[n] into the cache: a separate pass
// would read all of dy from memory a second time (a quarter of the pass's
// time on a first layer, where dy is 16.8 MB and the GEMM is short).
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>

#include "cpu/conv/conv_common.h"
#include "cpu/conv/eigen_maps.h"
#include "cpu/conv/im2col.h"
#include "cpu/conv/implementations.h"

namespace convkit::cpu {
namespace {

// Enough images in flight for 16 threads to work on whole images; machines
// with more threads fall back to Eigen's multi-threaded GEMM per image
// whenever lanes < threads (see run_lanes).
constexpr std::int64_t kMaxLanes = 16;

// Matrix sizes of one descriptor.
struct GemmShape {
  std::int64_t N, C, K, groups, Cg, Kg;
  std::int64_t image;       // C*H*W: elements of one input image
  std::int64_t plane;       // P*Q: columns of every matrix product
  std::int64_t depth;       // Cg*R*S: rows of one group's column block
  bool image_is_col;        // 1x1, stride 1, no padding: skip im2col
  explicit GemmShape(const Conv2dDesc& d)
      : N(d.N), C(d.C), K(d.K), groups(d.groups), Cg(d.C_per_group()), Kg(d.K_per_group()),
        image(d.C * d.H * d.W), plane(d.P() * d.Q()), depth(d.C_per_group() * d.R * d.S),
        image_is_col(d.R == 1 && d.S == 1 && d.stride_h == 1 && d.stride_w == 1 && d.pad_top == 0 &&
                     d.pad_bottom == 0 && d.pad_left == 0 && d.pad_right == 0) {}
  std::int64_t col_elems() const { return image_is_col ? 0 : groups * depth * plane; }
  std::int64_t dw_elems() const { return K * depth; }
};

template <typename T>
struct LaneBuffers {
  T* cols = nullptr;            // lanes x col_elems
  T* accumulators = nullptr;    // (lanes - 1) x dw_elems, backward-weights only
  double* bias_sums = nullptr;  // lanes x K, backward-weights only
  std::size_t bytes = 0;
};

template <typename T>
LaneBuffers<T> carve_lanes(const GemmShape& g, ConvPass pass, std::int64_t lanes, void* base) {
  WorkspaceCarver carver(base);
  LaneBuffers<T> out;
  out.cols = carver.take<T>(static_cast<std::size_t>(lanes * g.col_elems()));
  if (pass == ConvPass::backward_weights) {
    out.accumulators = carver.take<T>(static_cast<std::size_t>((lanes - 1) * g.dw_elems()));
    out.bias_sums = carver.take<double>(static_cast<std::size_t>(lanes * g.K));
  }
  out.bytes = carver.bytes();
  return out;
}

// The most lanes (<= kMaxLanes, <= N) whose buffers fit in workspace_limit.
template <typename T>
std::int64_t plan_lanes(const Conv2dDesc& d, ConvPass pass) {
  const GemmShape g(d);
  for (std::int64_t lanes = std::min(d.N, kMaxLanes); lanes >= 1; --lanes) {
    if (carve_lanes<T>(g, pass, lanes, nullptr).bytes <= d.workspace_limit) return lanes;
  }
  CK_FAIL(conv_op_name(ConvAlgo::im2col_gemm, pass), ": one image needs ",
          carve_lanes<T>(g, pass, 1, nullptr).bytes, " bytes of workspace (column matrix C*R*S x P*Q = ",
          g.groups * g.depth, " x ", g.plane, " ", dtype_of<T>::value, " values) but workspace_limit is ",
          d.workspace_limit, " bytes; raise Conv2dDesc::workspace_limit or use the direct algorithm; descriptor: ",
          d.str());
}

// The column buffer for run_lanes' `slot`. A thread reusing one buffer keeps
// it in its core's L2 from image to image, where cycling through the buffers
// of all its lanes would not (~12% faster for a 32-channel 3x3 layer).
template <typename T>
T* slot_cols(const LaneBuffers<T>& buffers, const GemmShape& g, std::int64_t slot) {
  return buffers.cols + slot * g.col_elems();
}

template <typename T>
void im2col_gemm_forward(const Conv2dDesc& d, const T* x, const T* w, const T* b, T* y, void* workspace) {
  const GemmShape g(d);
  const std::int64_t lanes = plan_lanes<T>(d, ConvPass::forward);
  const LaneBuffers<T> buffers = carve_lanes<T>(g, ConvPass::forward, lanes, workspace);
  run_lanes(lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool inner_parallel) {
    for (std::int64_t n = lane; n < g.N; n += lanes) {
      const T* cols = x + n * g.image;
      if (!g.image_is_col) {
        T* lane_cols = slot_cols(buffers, g, slot);
        im2col(d, cols, lane_cols, inner_parallel);
        cols = lane_cols;
      }
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
void im2col_gemm_backward_data(const Conv2dDesc& d, const T* dy, const T* w, T* dx, void* workspace) {
  const GemmShape g(d);
  const std::int64_t lanes = plan_lanes<T>(d, ConvPass::backward_data);
  const LaneBuffers<T> buffers = carve_lanes<T>(g, ConvPass::backward_data, lanes, workspace);
  run_lanes(lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool inner_parallel) {
    for (std::int64_t n = lane; n < g.N; n += lanes) {
      // Without im2col the column-gradient is the image gradient itself.
      T* dcols = g.image_is_col ? dx + n * g.image : slot_cols(buffers, g, slot);
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
void im2col_gemm_backward_weights(const Conv2dDesc& d, const T* x, const T* dy, T* dw, T* db,
                                  void* workspace) {
  const GemmShape g(d);
  const std::int64_t lanes = plan_lanes<T>(d, ConvPass::backward_weights);
  const LaneBuffers<T> buffers = carve_lanes<T>(g, ConvPass::backward_weights, lanes, workspace);
  auto accumulator = [&](std::int64_t lane) {
    return lane == 0 ? dw : buffers.accumulators + (lane - 1) * g.dw_elems();
  };
  run_lanes(lanes, worth_parallelising(d), [&](std::int64_t lane, std::int64_t slot, bool inner_parallel) {
    T* acc = accumulator(lane);
    std::fill(acc, acc + g.dw_elems(), T(0));
    double* bias_sums = buffers.bias_sums + lane * g.K;
    std::fill(bias_sums, bias_sums + g.K, 0.0);
    for (std::int64_t n = lane; n < g.N; n += lanes) {
      const T* cols = x + n * g.image;
      if (!g.image_is_col) {
        T* lane_cols = slot_cols(buffers, g, slot);
        im2col(d, cols, lane_cols, inner_parallel);
        cols = lane_cols;
      }
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        ConstMatrixMap<T> dy_g(dy + (n * g.K + grp * g.Kg) * g.plane, g.Kg, g.plane);
        ConstMatrixMap<T> col_g(cols + grp * g.depth * g.plane, g.depth, g.plane);
        MatrixMap<T> dw_g(acc + grp * g.Kg * g.depth, g.Kg, g.depth);
        dw_g.noalias() += dy_g * col_g.transpose();
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
      bytes = carve_lanes<T>(GemmShape(desc), pass, plan_lanes<T>(desc, pass), nullptr).bytes;
    });
    return bytes;
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b,
               void* y, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::forward, {{x, "x"}, {w, "w"}, {y, "y"}}, workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      im2col_gemm_forward<T>(desc, static_cast<const T*>(x), static_cast<const T*>(w),
                             static_cast<const T*>(b), static_cast<T*>(y), workspace);
    });
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_data, {{dy, "dy"}, {w, "w"}, {dx, "dx"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      im2col_gemm_backward_data<T>(desc, static_cast<const T*>(dy), static_cast<const T*>(w),
                                   static_cast<T*>(dx), workspace);
    });
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw,
                        void* db, void* workspace) const override {
    check_conv_call(*this, desc, dtype, ConvPass::backward_weights, {{x, "x"}, {dy, "dy"}, {dw, "dw"}},
                    workspace);
    dispatch_floating(dtype, [&]<typename T>() {
      im2col_gemm_backward_weights<T>(desc, static_cast<const T*>(x), static_cast<const T*>(dy),
                                      static_cast<T*>(dw), static_cast<T*>(db), workspace);
    });
  }
};

}  // namespace

const ConvAlgorithm& im2col_gemm_conv_algorithm() {
  static const Im2colGemmConv instance;
  return instance;
}

}  // namespace convkit::cpu
