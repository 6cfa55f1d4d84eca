// Winograd convolution on the GPU, F(2x2,3x3) and F(4x4,3x3)
// (kernels/conv2d_winograd.cu, docs/algorithms/winograd.md).
//
// The cpu algorithm's passes (src/cpu/conv/conv_winograd.cpp) on device
// memory, from the geometry both share (conv/correlation.h,
// conv/winograd_tiling.h): the same supports(), the same tile choice per pass.
//   forward / backward-data   U once; per chunk of tiles: V, M = U V, outputs
//                             (backward-data: dy with the flipped, transposed filters)
//   backward-weights          per chunk: V of x, A E A^T of dy, W += E V^T;
//                             at the end dw = G^T W G; db from dy by the shared
//                             bias-gradient kernel (the cpu reads it off E instead)
// Below the highest float32 precision the products run in tf32 on the tensor
// cores (kernels/conv2d_winograd.cuh, winograd_products_precision).
// Buffers live in the caller's workspace; a chunk holds as many tiles as keep
// it within Conv2dDesc::workspace_limit, up to kTargetTilesPerChunk.
#include <algorithm>
#include <string>

#include "conv/correlation.h"
#include "conv/winograd_tiling.h"
#include "gpu/gpu_conv_algorithm.h"
#include "kernels/bias_gradient.cuh"
#include "kernels/conv2d_direct.cuh"
#include "kernels/conv2d_winograd.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;
using conv::CorrelationShape;

// Thousands of GEMM columns per point keep a GPU busy.
constexpr int64_t kTargetTilesPerChunk = 4096;
constexpr std::size_t kAlignment = 256;

std::string op_name(ConvPass pass) { return conv_op_name(ConvAlgo::winograd, pass); }
std::size_t align_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

struct WinogradPlan {
  ConvPass pass;
  WinogradGeometry geo;
  int64_t N = 0;
  int64_t chunk = 1;  // tiles per chunk
  int64_t tiles() const { return N * geo.tiles_h * geo.tiles_w; }
  int64_t points() const { return conv::winograd_points(geo.m); }
};

struct WinogradBuffers {
  unsigned char* filters = nullptr;   // U (or W in backward-weights): [xi][O][I/g]
  unsigned char* inputs = nullptr;    // V: [xi][I][chunk]
  unsigned char* products = nullptr;  // M (or E): [xi][O][chunk]
  std::size_t bytes = 0;
};

WinogradBuffers carve(const WinogradPlan& plan, DType dtype, int64_t chunk, void* base) {
  const auto size = static_cast<int64_t>(dtype_size(dtype));
  const WinogradGeometry& g = plan.geo;
  std::size_t offset = 0;
  auto take = [&](int64_t elems) {
    const std::size_t at = offset;
    offset = align_up(offset + static_cast<std::size_t>(elems * size));
    return base != nullptr ? static_cast<unsigned char*>(base) + at : nullptr;
  };
  WinogradBuffers b;
  b.filters = take(plan.points() * g.out_channels * (g.in_channels / g.groups));
  b.inputs = take(plan.points() * g.in_channels * chunk);
  b.products = take(plan.points() * g.out_channels * chunk);
  b.bytes = offset + kAlignment - 1;  // room to align a base that is not
  return b;
}

WinogradBuffers carve_aligned(const WinogradPlan& plan, DType dtype, void* base) {
  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  return carve(plan, dtype, plan.chunk, static_cast<unsigned char*>(base) + (align_up(addr) - addr));
}

WinogradPlan plan_winograd(const Conv2dDesc& d, DType dtype, ConvPass pass, int forced_tile) {
  const CorrelationShape s =
      pass == ConvPass::backward_data ? conv::backward_data_correlation(d) : conv::forward_correlation(d);
  const conv::WinogradTiling tiling(conv::choose_winograd_tile(s.P, s.Q, forced_tile), s.P, s.Q);
  WinogradPlan plan{pass,
                    {tiling.m, static_cast<int>(s.in_channels), static_cast<int>(s.out_channels),
                     static_cast<int>(s.groups), static_cast<int>(s.H), static_cast<int>(s.W), static_cast<int>(s.P),
                     static_cast<int>(s.Q), static_cast<int>(s.pad_top), static_cast<int>(s.pad_left),
                     static_cast<int>(tiling.tiles_h), static_cast<int>(tiling.tiles_w)},
                    s.N};
  // Largest chunk up to the target whose buffers fit: bytes grow linearly
  // with the chunk, so one division lands within a step of it.
  int64_t chunk = std::min(plan.tiles(), kTargetTilesPerChunk);
  const std::size_t one = carve(plan, dtype, 1, nullptr).bytes;
  const std::size_t full = carve(plan, dtype, chunk, nullptr).bytes;
  if (full > d.workspace_limit && chunk > 1 && one <= d.workspace_limit) {
    const std::size_t per_tile = (full - one) / static_cast<std::size_t>(chunk - 1);
    chunk = std::max<int64_t>(1, 1 + static_cast<int64_t>((d.workspace_limit - one) / std::max<std::size_t>(per_tile, 1)));
    while (chunk > 1 && carve(plan, dtype, chunk, nullptr).bytes > d.workspace_limit) --chunk;
  }
  plan.chunk = chunk;
  const std::size_t bytes = carve(plan, dtype, chunk, nullptr).bytes;
  CK_CHECK(bytes <= d.workspace_limit, op_name(pass), ": one tile needs ", bytes, " bytes of workspace (F(",
           plan.geo.m, "x", plan.geo.m, ",3x3), ", plan.points(), " points for the filters and ",
           plan.geo.in_channels + plan.geo.out_channels, " channels) but workspace_limit is ", d.workspace_limit,
           " bytes; raise Conv2dDesc::workspace_limit or use the direct algorithm; descriptor: ", d.str());
  return plan;
}

// out = correlate(in, filters) + bias, for forward and backward-data.
void correlate(const WinogradPlan& plan, DType dtype, const void* in, const WinogradFilterSource& filters,
               const void* bias, void* out, void* workspace) {
  const int version = conv2d_winograd_version();
  const Float32Precision precision = float32_precision();
  const WinogradBuffers buf = carve_aligned(plan, dtype, workspace);
  launch_winograd_filter_transform(version, dtype, plan.geo.m, filters, buf.filters);
  for (int64_t t0 = 0; t0 < plan.tiles(); t0 += plan.chunk) {
    const int64_t count = std::min(plan.chunk, plan.tiles() - t0);
    launch_winograd_input_transform(version, dtype, plan.geo, in, t0, count, plan.chunk, buf.inputs);
    launch_winograd_products(version, dtype, precision, plan.geo, buf.filters, buf.inputs, count, plan.chunk,
                             buf.products);
    launch_winograd_output_transform(version, dtype, plan.geo, buf.products, bias, t0, count, plan.chunk, out);
  }
}

Support check_supported(const Conv2dDesc& desc) {
  try {
    desc.validate("conv2d (gpu, winograd)");
    conv_geometry(desc);
  } catch (const Error& e) {
    return Support::no(e.what());
  }
  return conv::winograd_shape_support(desc);
}

class WinogradGpuConv final : public conv::ConvAlgorithm {
 public:
  // forced_tile: 2 or 4 runs every pass with that output tile; 0 chooses per pass.
  explicit WinogradGpuConv(int forced_tile) : forced_tile_(forced_tile) {}
  ConvAlgo algo() const override { return ConvAlgo::winograd; }

  Support supports(const Conv2dDesc& desc) const override { return check_supported(desc); }

  KernelChoices kernel_choices(const Conv2dDesc& desc, DType dtype) const override {
    (void)desc;
    (void)dtype;
    conv2d_winograd_version();  // registers the family
    return kernel_choices_of("conv2d_winograd", [](int) { return true; });
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    check(desc, dtype, pass);
    const WinogradPlan plan = plan_winograd(desc, dtype, pass, forced_tile_);
    return carve(plan, dtype, plan.chunk, nullptr).bytes;
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b, void* y,
               void* workspace) const override {
    const WinogradPlan plan = checked_plan(desc, dtype, ConvPass::forward, workspace);
    const WinogradFilterSource filters{w, static_cast<int>(desc.K), static_cast<int>(desc.C_per_group()), false,
                                       static_cast<int>(desc.C_per_group()), static_cast<int>(desc.K_per_group())};
    correlate(plan, dtype, x, filters, b, y, workspace);
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    const WinogradPlan plan = checked_plan(desc, dtype, ConvPass::backward_data, workspace);
    // Output channel c of the correlation (dx) reads the dy channels of its
    // group through the flipped filters w[g*Kg + i][c mod Cg].
    const WinogradFilterSource filters{w, static_cast<int>(desc.C), static_cast<int>(desc.K_per_group()), true,
                                       static_cast<int>(desc.C_per_group()), static_cast<int>(desc.K_per_group())};
    correlate(plan, dtype, dy, filters, nullptr, dx, workspace);
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw, void* db,
                        void* workspace) const override {
    const WinogradPlan plan = checked_plan(desc, dtype, ConvPass::backward_weights, workspace);
    const int version = conv2d_winograd_version();
    const Float32Precision precision = float32_precision();
    const WinogradBuffers buf = carve_aligned(plan, dtype, workspace);
    for (int64_t t0 = 0; t0 < plan.tiles(); t0 += plan.chunk) {
      const int64_t count = std::min(plan.chunk, plan.tiles() - t0);
      launch_winograd_input_transform(version, dtype, plan.geo, x, t0, count, plan.chunk, buf.inputs);
      launch_winograd_output_gradient_transform(version, dtype, plan.geo, dy, t0, count, plan.chunk, buf.products);
      launch_winograd_weight_products(version, dtype, precision, plan.geo, buf.products, buf.inputs, count,
                                      plan.chunk, t0 > 0, buf.filters);
    }
    launch_winograd_weight_transform(version, dtype, plan.geo.m, static_cast<int>(desc.K),
                                     static_cast<int>(desc.C_per_group()), buf.filters, dw);
    if (db != nullptr) launch_bias_gradient(dtype, dy, desc.N, desc.K, desc.P() * desc.Q(), db);
  }

 private:
  static void check(const Conv2dDesc& desc, DType dtype, ConvPass pass) {
    const std::string op = op_name(pass);
    desc.validate(op.c_str());
    const Support support = check_supported(desc);
    CK_CHECK(support.ok, op, ": not supported: ", support.reason, "; descriptor: ", desc.str());
    CK_CHECK(is_floating(dtype), op, ": dtype ", dtype, " is not supported (float32 or float64); ", desc.str());
  }

  // The caller promises at least workspace_bytes(); a null workspace is caught here.
  WinogradPlan checked_plan(const Conv2dDesc& desc, DType dtype, ConvPass pass, const void* workspace) const {
    check(desc, dtype, pass);
    const WinogradPlan plan = plan_winograd(desc, dtype, pass, forced_tile_);
    CK_CHECK(workspace != nullptr, op_name(pass), ": needs ", carve(plan, dtype, plan.chunk, nullptr).bytes,
             " bytes of workspace but workspace is null; descriptor: ", desc.str());
    return plan;
  }

  int forced_tile_;
};

}  // namespace

const conv::ConvAlgorithm& winograd_gpu_conv_algorithm() { return winograd_gpu_conv_algorithm_with(0); }

const conv::ConvAlgorithm& winograd_gpu_conv_algorithm_with(int output_tile) {
  CK_CHECK(output_tile == 0 || output_tile == 2 || output_tile == 4, "winograd_gpu_conv_algorithm_with: output tile ",
           output_tile, " is not 0 (per pass), 2 or 4");
  static const WinogradGpuConv variants[3] = {WinogradGpuConv(0), WinogradGpuConv(2), WinogradGpuConv(4)};
  return variants[output_tile / 2];
}

namespace {
const conv::ConvAlgorithmRegistrar kRegistered(conv_registry(), winograd_gpu_conv_algorithm());
}  // namespace

}  // namespace convkit::CK_GPU_NS
