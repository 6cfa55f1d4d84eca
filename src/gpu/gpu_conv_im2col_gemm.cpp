// im2col + GEMM convolution on the GPU: the cpu algorithm's plan
// (src/cpu/conv/conv_im2col_gemm.cpp, shapes in src/conv/implicit_gemm.h)
// with kernels for each step.
//
//   forward           y[n, g]  = w[g] * col(x[n])[g]               (+ bias)
//   backward-data     dx[n]    = col2im( w[g]^T * dy[n, g] )
//   backward-weights  dw[g]    = sum over n of dy[n, g] * col(x[n])[g]^T
//
// w[g] is group g's Kg x Cg*R*S filter matrix, dy[n, g] its Kg x P*Q block of
// the output (gradient), col(x[n])[g] its Cg*R*S x P*Q block of image n's
// column matrix (kernels/im2col.cuh). A 1x1, stride-1, unpadded convolution
// needs no im2col: the image itself (C x H*W) is its column matrix.
//
// Images go through in chunks: im2col writes a whole chunk's column matrices
// in one launch, and each group's product is one strided-batched GEMM over
// the chunk (the filter matrix broadcast with batch stride 0), so a launch
// has chunk times more blocks than a per-image GEMM would. The chunk size is
// the largest (at most kMaxChunk, at most N) whose buffers fit in
// desc.workspace_limit, a pure function of the descriptor like the cpu's lane
// count, so workspace_bytes() never disagrees with a pass.
//
// Backward-weights sums over images. A chunk of c images uses c accumulator
// slots: slot s receives images s, s + c, s + 2c, ... (the GEMM's beta is 0
// for the first chunk, 1 after), and a last kernel adds the slots up in slot
// order. That splits the reduction over images across blocks, in an order
// fixed by the descriptor, so results are deterministic.
//
// All of that is the explicit path, version 1 of the conv2d_implicit_gemm
// family. Versions 2, 3 (the default) and 4 (3 where 4 cannot) run each pass
// as one implicit GEMM per group (kernels/conv2d_implicit_gemm.cuh): no column matrix, no chunks,
// the batch folded into the product, and a workspace of at most the split-K
// partials of backward-weights (or backward-data's transposed filter). A
// descriptor the implicit kernels cannot index (a tensor of 2^31 elements or
// more) runs the explicit path whatever the version.
//
// Below the highest float32 precision (convkit/backend/precision.h), float32
// passes run on the tensor cores instead
// (kernels/conv2d_implicit_gemm_tensor_core.cuh), in tf32 at high and bf16
// at medium, whatever conv2d_implicit_gemm's version; float64 always runs
// strict. The setting is read once per pass. workspace_bytes cannot know what it will be
// when the pass runs, so for float32 it is the larger of the two paths'
// needs: a pure function of the descriptor, enough for either. With the
// default versions the two are equal (the tensor-core kernel cuts the same
// split-K and transposes the same filter as version 3), so nothing grows.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "conv/implicit_gemm.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/backend/precision.h"
#include "gpu/gpu_backend.h"
#include "gpu/gpu_conv_algorithm.h"
#include "kernels/bias_gradient.cuh"
#include "kernels/conv2d_implicit_gemm.cuh"
#include "kernels/conv2d_implicit_gemm_tensor_core.cuh"
#include "kernels/dispatch.cuh"
#include "kernels/gemm.cuh"
#include "kernels/im2col.cuh"

namespace convkit::CK_GPU_NS {
namespace {

// Enough images per GEMM launch to fill a large GPU even for small layers,
// without making the column buffer of a large layer huge.
constexpr std::int64_t kMaxChunk = 32;

using conv::GemmShape;  // the matrix sizes (conv/implicit_gemm.h)

// Slices of the workspace: the chunk's column matrices, then (backward-
// weights with chunk > 1) its accumulator slots. Measures with base ==
// nullptr, so workspace_bytes() and the passes share one layout.
struct Layout {
  void* cols = nullptr;
  void* accumulators = nullptr;
  std::size_t bytes = 0;
};

constexpr std::size_t kAlignment = 256;  // what cudaMalloc guarantees; keeps GEMM's vector loads

Layout carve(const GemmShape& g, ConvPass pass, std::int64_t chunk, std::size_t elem, void* base) {
  std::size_t offset = 0;
  unsigned char* aligned = nullptr;
  if (base != nullptr) {
    const auto addr = reinterpret_cast<std::uintptr_t>(base);
    aligned = static_cast<unsigned char*>(base) + ((kAlignment - addr % kAlignment) % kAlignment);
  }
  auto take = [&](std::int64_t count) -> void* {
    offset = (offset + kAlignment - 1) / kAlignment * kAlignment;
    void* slice = aligned != nullptr && count > 0 ? aligned + offset : nullptr;
    offset += static_cast<std::size_t>(count) * elem;
    return slice;
  };
  Layout l;
  l.cols = take(chunk * g.col_elems());
  if (pass == ConvPass::backward_weights && chunk > 1) l.accumulators = take(chunk * g.dw_elems());
  l.bytes = offset == 0 ? 0 : offset + kAlignment - 1;
  return l;
}

std::string op_name(ConvPass pass) { return conv_op_name(ConvAlgo::im2col_gemm, pass); }

// The largest chunk whose buffers fit in workspace_limit.
std::int64_t plan_chunk(const Conv2dDesc& d, ConvPass pass, std::size_t elem) {
  const GemmShape g(d);
  for (std::int64_t chunk = std::min(d.N, kMaxChunk); chunk >= 1; --chunk)
    if (carve(g, pass, chunk, elem, nullptr).bytes <= d.workspace_limit) return chunk;
  CK_FAIL(op_name(pass), ": one image needs ", carve(g, pass, 1, elem, nullptr).bytes,
          " bytes of workspace (column matrix C*R*S x P*Q = ", g.groups * g.depth, " x ", g.plane,
          ") but workspace_limit is ", d.workspace_limit,
          " bytes; raise Conv2dDesc::workspace_limit or use the direct algorithm; descriptor: ", d.str());
}


// The implicit version that runs `d` in `dtype` (2 to 5), or 0 for the
// explicit path: the family's choice when it can; versions 4 and 5
// hand what they cannot run to version 3.
int implicit_version(const Conv2dDesc& d, DType dtype) {
  register_conv2d_implicit_gemm_family();
  int v = kernel_version("conv2d_implicit_gemm");
  if (v == kImplicitGemmExplicitVersion) return 0;
  if ((v == kImplicitGemmStagedVersion || v == kImplicitGemmPipelinedVersion) &&
      !conv2d_implicit_gemm_cannot_implement(dtype, d, v).empty())
    v = kImplicitGemmTiledVersion;
  return conv2d_implicit_gemm_cannot_implement(dtype, d, v).empty() ? v : 0;
}

// The tensor-core version that would run `d` in `dtype` with allow_tf32 on,
// or 0: float32 only, and a descriptor the family can run.
int tensor_core_version(const Conv2dDesc& d, DType dtype) {
  if (dtype != DType::float32) return 0;
  register_conv2d_implicit_gemm_tensor_core_family();
  const int v = kernel_version("conv2d_implicit_gemm_tensor_core");
  return conv2d_implicit_gemm_tensor_core_cannot_implement(dtype, d, v).empty() ? v : 0;
}

// The tensor-core version this pass runs, or 0 for strict float32 (or
// float64). Reduced precision (allow_tf32, or a float32 precision below
// highest) takes the tensor cores wherever their family can run the
// descriptor. Until version 3 existed it took them only where the family was
// pinned, because version 2 lost to the strict version 5; on the H200
// (docs/results/nvidia-h200-2026-11-28) version 3 in tf32 took 0.71-0.97x
// strict v5's time on all 45 passes of both layer sets.
int reduced_precision_version(const Conv2dDesc& d, DType dtype) {
  return allow_tf32() ? tensor_core_version(d, dtype) : 0;
}

// What every pass checks before touching memory.
void check_call(const Conv2dDesc& d, ConvPass pass, DType dtype, std::initializer_list<const void*> required,
                const void* workspace, std::size_t needed) {
  const std::string op = op_name(pass);
  d.validate(op.c_str());
  CK_CHECK(is_floating(dtype), op, ": dtype ", dtype, " is not supported (float32 or float64)");
  for (const void* p : required) CK_CHECK(p != nullptr, op, ": a required buffer is null; descriptor ", d.str());
  CK_CHECK(needed == 0 || workspace != nullptr, op, ": needs ", needed,
           " bytes of workspace but workspace is null; descriptor ", d.str());
}

// y[n0 .. n0+count) for one chunk of images: one GEMM per group.
void forward_chunk(DType dtype, const GemmShape& g, const unsigned char* w, const unsigned char* cols,
                   unsigned char* y, std::int64_t count, bool has_bias, std::size_t elem) {
  for (std::int64_t grp = 0; grp < g.groups; ++grp) {
    GemmArgs a;
    const conv::GemmDims dims = g.dims(ConvPass::forward);
    a.M = dims.M;
    a.N = dims.N;
    a.K = dims.K;
    a.batch = count;
    a.a = w + grp * g.Kg * g.depth * elem;
    a.lda = g.depth;
    a.stride_a = 0;
    a.b = cols + grp * g.depth * g.plane * elem;
    a.ldb = g.plane;
    a.stride_b = g.col_stride();
    a.c = y + grp * g.Kg * g.plane * elem;
    a.ldc = g.plane;
    a.stride_c = g.K * g.plane;
    a.beta = has_bias ? 1 : 0;  // y already holds the bias
    launch_gemm(dtype, a);
  }
}

// The strict path's workspace (implicit or explicit).
std::size_t strict_workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) {
  if (const int v = implicit_version(desc, dtype)) return conv2d_implicit_gemm_workspace_bytes(dtype, desc, pass, v);
  const std::size_t elem = dtype_size(dtype);
  return carve(GemmShape(desc), pass, plan_chunk(desc, pass, elem), elem, nullptr).bytes;
}

class Im2colGemmGpuConv final : public conv::ConvAlgorithm {
 public:
  ConvAlgo algo() const override { return ConvAlgo::im2col_gemm; }

  Support supports(const Conv2dDesc& desc) const override {
    try {
      desc.validate("conv2d (GPU, im2col_gemm)");
    } catch (const Error& e) {
      return Support::no(e.what());
    }
    return Support::yes();
  }

  // Reduced precision times the tensor-core family where it can run the
  // descriptor (its version 4 is a candidate there; version 5 not before a
  // GPU has run it, kImplicitGemmTcNewestTunedVersion), else the strict one.
  KernelChoices kernel_choices(const Conv2dDesc& desc, DType dtype) const override {
    if (allow_tf32() && dtype == DType::float32) {
      register_conv2d_implicit_gemm_tensor_core_family();
      KernelChoices tc = kernel_choices_of("conv2d_implicit_gemm_tensor_core", [&](int v) {
        return v <= kImplicitGemmTcNewestTunedVersion &&
               conv2d_implicit_gemm_tensor_core_cannot_implement(dtype, desc, v).empty();
      });
      if (!tc.versions.empty() || reduced_precision_version(desc, dtype) != 0) return tc;
    }
    register_conv2d_implicit_gemm_family();
    return kernel_choices_of("conv2d_implicit_gemm",
                             [&](int v) { return conv2d_implicit_gemm_cannot_implement(dtype, desc, v).empty(); });
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    desc.validate(op_name(pass).c_str());
    CK_CHECK(is_floating(dtype), op_name(pass), ": dtype ", dtype, " is not supported (float32 or float64)");
    const std::size_t tensor_core =
        tensor_core_version(desc, dtype) != 0
            ? conv2d_implicit_gemm_tensor_core_workspace_bytes(dtype, desc, pass, tensor_core_version(desc, dtype))
            : 0;
    return std::max(tensor_core, strict_workspace_bytes(desc, dtype, pass));
  }

  void forward(const Conv2dDesc& d, DType dtype, const void* x, const void* w, const void* b, void* y,
               void* workspace) const override {
    check_call(d, ConvPass::forward, dtype, {x, w, y}, workspace, workspace_bytes(d, dtype, ConvPass::forward));
    if (const int v = reduced_precision_version(d, dtype)) {
      launch_conv2d_implicit_gemm_tensor_core_forward(tensor_core_precision(float32_precision()), dtype, d, x, w, b, y,
                                                      workspace, v);
      return;
    }
    if (const int v = implicit_version(d, dtype)) {
      launch_conv2d_implicit_gemm_forward(dtype, d, x, w, b, y, v);
      return;
    }
    const GemmShape g(d);
    const std::size_t elem = dtype_size(dtype);
    const std::int64_t chunk = plan_chunk(d, ConvPass::forward, elem);
    const Layout l = carve(g, ConvPass::forward, chunk, elem, workspace);
    const auto* xp = static_cast<const unsigned char*>(x);
    auto* yp = static_cast<unsigned char*>(y);
    for (std::int64_t n0 = 0; n0 < g.N; n0 += chunk) {
      const std::int64_t count = std::min(chunk, g.N - n0);
      const unsigned char* cols = xp + n0 * g.image * elem;
      if (!g.image_is_col) {
        launch_im2col(dtype, d, cols, count, l.cols);
        cols = static_cast<const unsigned char*>(l.cols);
      }
      unsigned char* y_chunk = yp + n0 * g.K * g.plane * elem;
      if (b != nullptr) launch_bias_fill(dtype, b, count, g.K, g.plane, y_chunk);
      forward_chunk(dtype, g, static_cast<const unsigned char*>(w), cols, y_chunk, count, b != nullptr, elem);
    }
  }

  void backward_data(const Conv2dDesc& d, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    check_call(d, ConvPass::backward_data, dtype, {dy, w, dx}, workspace,
               workspace_bytes(d, dtype, ConvPass::backward_data));
    if (const int v = reduced_precision_version(d, dtype)) {
      launch_conv2d_implicit_gemm_tensor_core_backward_data(tensor_core_precision(float32_precision()), dtype, d, dy,
                                                            w, dx, workspace, v);
      return;
    }
    if (const int v = implicit_version(d, dtype)) {
      launch_conv2d_implicit_gemm_backward_data(dtype, d, dy, w, dx, workspace, v);
      return;
    }
    const GemmShape g(d);
    const std::size_t elem = dtype_size(dtype);
    const std::int64_t chunk = plan_chunk(d, ConvPass::backward_data, elem);
    const Layout l = carve(g, ConvPass::backward_data, chunk, elem, workspace);
    const auto* dyp = static_cast<const unsigned char*>(dy);
    const auto* wp = static_cast<const unsigned char*>(w);
    auto* dxp = static_cast<unsigned char*>(dx);
    for (std::int64_t n0 = 0; n0 < g.N; n0 += chunk) {
      const std::int64_t count = std::min(chunk, g.N - n0);
      // Without im2col the column gradient is the image gradient itself.
      unsigned char* dcols = g.image_is_col ? dxp + n0 * g.image * elem : static_cast<unsigned char*>(l.cols);
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        GemmArgs a;  // dcol[n, g] = w[g]^T * dy[n, g]
        const conv::GemmDims dims = g.dims(ConvPass::backward_data);
        a.M = dims.M;
        a.N = dims.N;
        a.K = dims.K;
        a.batch = count;
        a.trans_a = true;
        a.a = wp + grp * g.Kg * g.depth * elem;
        a.lda = g.depth;
        a.stride_a = 0;
        a.b = dyp + (n0 * g.K + grp * g.Kg) * g.plane * elem;
        a.ldb = g.plane;
        a.stride_b = g.K * g.plane;
        a.c = dcols + grp * g.depth * g.plane * elem;
        a.ldc = g.plane;
        a.stride_c = g.col_stride();
        launch_gemm(dtype, a);
      }
      if (!g.image_is_col) launch_col2im(dtype, d, dcols, count, dxp + n0 * g.image * elem);
    }
  }

  void backward_weights(const Conv2dDesc& d, DType dtype, const void* x, const void* dy, void* dw, void* db,
                        void* workspace) const override {
    check_call(d, ConvPass::backward_weights, dtype, {x, dy, dw}, workspace,
               workspace_bytes(d, dtype, ConvPass::backward_weights));
    if (const int v = reduced_precision_version(d, dtype)) {
      launch_conv2d_implicit_gemm_tensor_core_backward_weights(tensor_core_precision(float32_precision()), dtype, d,
                                                               x, dy, dw, workspace, v);
      if (db != nullptr) launch_bias_gradient(dtype, dy, d.N, d.K, d.P() * d.Q(), db);
      return;
    }
    if (const int v = implicit_version(d, dtype)) {
      launch_conv2d_implicit_gemm_backward_weights(dtype, d, x, dy, dw, workspace, v);
      if (db != nullptr) launch_bias_gradient(dtype, dy, d.N, d.K, d.P() * d.Q(), db);
      return;
    }
    const GemmShape g(d);
    const std::size_t elem = dtype_size(dtype);
    const std::int64_t chunk = plan_chunk(d, ConvPass::backward_weights, elem);
    const Layout l = carve(g, ConvPass::backward_weights, chunk, elem, workspace);
    const auto* xp = static_cast<const unsigned char*>(x);
    const auto* dyp = static_cast<const unsigned char*>(dy);
    // One image at a time accumulates straight into dw.
    auto* acc = static_cast<unsigned char*>(chunk > 1 ? l.accumulators : dw);
    for (std::int64_t n0 = 0; n0 < g.N; n0 += chunk) {
      const std::int64_t count = std::min(chunk, g.N - n0);
      const unsigned char* cols = xp + n0 * g.image * elem;
      if (!g.image_is_col) {
        launch_im2col(dtype, d, cols, count, l.cols);
        cols = static_cast<const unsigned char*>(l.cols);
      }
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        GemmArgs a;  // slot[n mod chunk][g] (+)= dy[n, g] * col[n, g]^T
        const conv::GemmDims dims = g.dims(ConvPass::backward_weights);
        a.M = dims.M;
        a.N = dims.N;
        a.K = dims.K;
        a.batch = count;
        a.a = dyp + (n0 * g.K + grp * g.Kg) * g.plane * elem;
        a.lda = g.plane;
        a.stride_a = g.K * g.plane;
        a.trans_b = true;
        a.b = cols + grp * g.depth * g.plane * elem;
        a.ldb = g.plane;
        a.stride_b = g.col_stride();
        a.c = acc + grp * g.Kg * g.depth * elem;
        a.ldc = g.depth;
        a.stride_c = g.dw_elems();
        a.beta = n0 == 0 ? 0 : 1;
        launch_gemm(dtype, a);
      }
    }
    if (chunk > 1) launch_sum_slices(dtype, l.accumulators, chunk, g.dw_elems(), dw);
    if (db != nullptr) launch_bias_gradient(dtype, dyp, g.N, g.K, g.plane, db);
  }
};

}  // namespace

const conv::ConvAlgorithm& im2col_gemm_gpu_conv_algorithm() {
  static const Im2colGemmGpuConv instance;
  return instance;
}

namespace {
const conv::ConvAlgorithmRegistrar kRegistered(conv_registry(), im2col_gemm_gpu_conv_algorithm());
}  // namespace

}  // namespace convkit::CK_GPU_NS
