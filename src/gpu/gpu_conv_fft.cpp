// The FFT convolution on the GPU (kernels/conv2d_fft.cu, docs/gpu/conv2d_fft.md).
//
// Each pass is the CPU algorithm's correlation, from the device-neutral
// geometry both share (src/conv/correlation.h: backward-data as a
// correlation with flipped filters; src/conv/fft_tiling.h: the overlap-save
// tiles and their size), run as a sequence of kernels per chunk of images:
//   forward / backward-data   filter spectra once; per chunk: tile spectra,
//                             per-frequency channel sums, inverse + crop (+ bias)
//   backward-weights          per chunk: input and dy tile spectra, dW spectra
//                             += conj(DY) X^T; at the end one inverse per filter
// All spectra live in the caller's workspace, carved here; a chunk holds as
// many images as keep the workspace within Conv2dDesc::workspace_limit, aiming
// at kTargetTilesPerChunk tiles so the channel-sum GEMMs are wide.
#include <algorithm>
#include <string>

#include "conv/fft_tiling.h"
#include "gpu/gpu_conv_algorithm.h"
#include "kernels/bias_gradient.cuh"
#include "kernels/conv2d_direct.cuh"
#include "kernels/conv2d_fft.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using std::int64_t;
using conv::CorrelationShape;
using conv::FftTiling;

// Tiles per chunk to aim for: thousands of GEMM columns keep a GPU busy.
constexpr int64_t kTargetTilesPerChunk = 2048;
constexpr std::size_t kAlignment = 256;

std::string op_name(ConvPass pass) { return conv_op_name(ConvAlgo::fft, pass); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::size_t align_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// What a pass transforms: `in` channels of tiles in, `out` channels of tiles
// out (or dy tiles, backward-weights), and `filters` filter spectra.
struct FftPlan {
  ConvPass pass;
  int version = 2;
  CorrelationShape shape;
  FftTiling tiling;
  int64_t chunk_images = 1;
  int64_t in_channels = 0, out_channels = 0, filters = 0;

  int64_t spectrum() const { return tiling.spectrum_size(); }
  int64_t tiles(int64_t images) const { return images * tiling.tiles_per_image(); }
};

struct FftBuffers {
  unsigned char* filters = nullptr;  // [f][filters]
  unsigned char* inputs = nullptr;   // [f][in_channels * M]
  unsigned char* outputs = nullptr;  // [f][out_channels * M]
  unsigned char* scratch = nullptr;  // cuFFT's (v3 only)
  std::size_t bytes = 0;
};

// Lays the buffers out from `base` (nullptr: only measures). The scratch covers
// every transform of the pass, for full and last chunks alike.
FftBuffers carve(const FftPlan& plan, DType dtype, int64_t chunk_images, bool with_scratch, void* base) {
  const std::size_t complex_bytes = 2 * dtype_size(dtype);
  const int64_t F = plan.spectrum(), M = plan.tiles(chunk_images);
  std::size_t offset = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t at = offset;
    offset = align_up(offset + bytes);
    return base != nullptr ? static_cast<unsigned char*>(base) + at : nullptr;
  };
  FftBuffers b;
  b.filters = take(static_cast<std::size_t>(F * plan.filters) * complex_bytes);
  b.inputs = take(static_cast<std::size_t>(F * plan.in_channels * M) * complex_bytes);
  b.outputs = take(static_cast<std::size_t>(F * plan.out_channels * M) * complex_bytes);
  if (with_scratch) {
    const FftTiling& t = plan.tiling;
    const int64_t last = plan.shape.N % chunk_images == 0 ? chunk_images : plan.shape.N % chunk_images;
    std::size_t scratch = fft_transform_scratch_bytes(plan.version, dtype, static_cast<int>(t.tile_h),
                                                      static_cast<int>(t.tile_w), plan.filters);
    for (int64_t images : {chunk_images, last}) {
      for (int64_t channels : {plan.in_channels, plan.out_channels}) {
        scratch = std::max(scratch, fft_transform_scratch_bytes(plan.version, dtype, static_cast<int>(t.tile_h),
                                                                static_cast<int>(t.tile_w), channels * plan.tiles(images)));
      }
    }
    if (scratch > 0) b.scratch = take(scratch);
  }
  // Room to align a base that is not 256-byte aligned.
  b.bytes = offset == 0 ? 0 : offset + kAlignment - 1;
  return b;
}

FftBuffers carve_aligned(const FftPlan& plan, DType dtype, void* base) {
  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  void* aligned = static_cast<unsigned char*>(base) + (align_up(addr) - addr);
  return carve(plan, dtype, plan.chunk_images, true, aligned);
}

FftPlan plan_fft(const Conv2dDesc& d, DType dtype, ConvPass pass) {
  FftPlan plan;
  plan.pass = pass;
  plan.version = conv2d_fft_version();
  plan.shape = pass == ConvPass::backward_data ? conv::backward_data_correlation(d) : conv::forward_correlation(d);
  plan.tiling = conv::choose_fft_tiling(plan.shape);
  const CorrelationShape& s = plan.shape;
  if (pass == ConvPass::backward_weights) {
    plan.in_channels = d.C;
    plan.out_channels = d.K;
    plan.filters = d.K * d.C_per_group();
  } else {
    plan.in_channels = s.in_channels;
    plan.out_channels = s.out_channels;
    plan.filters = s.out_channels * s.in_per_group();
  }
  // Largest chunk (up to the target) whose spectra fit, then halve while
  // cuFFT's scratch pushes it over.
  int64_t chunk = std::min(d.N, ceil_div(kTargetTilesPerChunk, plan.tiling.tiles_per_image()));
  while (chunk > 1 && carve(plan, dtype, chunk, false, nullptr).bytes > d.workspace_limit) --chunk;
  while (chunk > 1 && carve(plan, dtype, chunk, true, nullptr).bytes > d.workspace_limit) chunk = (chunk + 1) / 2;
  plan.chunk_images = chunk;
  const std::size_t bytes = carve(plan, dtype, chunk, true, nullptr).bytes;
  const FftTiling& t = plan.tiling;
  CK_CHECK(bytes <= d.workspace_limit, op_name(pass), ": one image needs ", bytes, " bytes of workspace (",
           t.tile_h, "x", t.tile_w, " tiles, ", t.tiles_per_image(), " per image, spectra of ", t.spectrum_size(),
           " complex ", dtype, " values for ", plan.filters, " filters + ", plan.in_channels + plan.out_channels,
           " channels x tiles) but workspace_limit is ", d.workspace_limit,
           " bytes; raise Conv2dDesc::workspace_limit or use the direct algorithm; descriptor: ", d.str());
  return plan;
}

// Tiles of the padded input (or of dy for backward-data): windows of the
// whole tile, advancing by the valid output size, starting at minus the padding.
FftTileSource input_tiles(const FftPlan& plan, const void* planes, int64_t n0, int64_t images) {
  const CorrelationShape& s = plan.shape;
  const FftTiling& t = plan.tiling;
  return {planes,
          static_cast<int>(s.in_channels),
          static_cast<int>(s.H),
          static_cast<int>(s.W),
          static_cast<int>(t.out_h),
          static_cast<int>(t.out_w),
          static_cast<int>(-s.pad_top),
          static_cast<int>(-s.pad_left),
          static_cast<int>(t.tile_h),
          static_cast<int>(t.tile_w),
          static_cast<int>(t.tiles_w),
          static_cast<int>(t.tiles_per_image()),
          static_cast<int>(n0),
          plan.tiles(images)};
}

// The dy tiles of backward-weights: each tile's valid outputs, zero padded.
FftTileSource dy_tiles(const FftPlan& plan, const void* dy, int64_t n0, int64_t images) {
  const CorrelationShape& s = plan.shape;
  const FftTiling& t = plan.tiling;
  return {dy,
          static_cast<int>(s.out_channels),
          static_cast<int>(s.P),
          static_cast<int>(s.Q),
          static_cast<int>(t.out_h),
          static_cast<int>(t.out_w),
          0,
          0,
          static_cast<int>(t.out_h),
          static_cast<int>(t.out_w),
          static_cast<int>(t.tiles_w),
          static_cast<int>(t.tiles_per_image()),
          static_cast<int>(n0),
          plan.tiles(images)};
}

FftTileSink output_tiles(const FftPlan& plan, void* out, const void* bias, int64_t n0, int64_t images) {
  const CorrelationShape& s = plan.shape;
  const FftTiling& t = plan.tiling;
  return {out,
          bias,
          static_cast<int>(s.out_channels),
          static_cast<int>(s.P),
          static_cast<int>(s.Q),
          static_cast<int>(t.out_h),
          static_cast<int>(t.out_w),
          static_cast<int>(t.tiles_w),
          static_cast<int>(t.tiles_per_image()),
          static_cast<int>(n0),
          plan.tiles(images),
          1.0 / static_cast<double>(t.tile_h * t.tile_w)};
}

// out = correlate(in, filters) + bias, for forward and backward-data.
void correlate(const FftPlan& plan, DType dtype, const void* in, const FftFilterSource& filters, const void* bias,
               void* out, void* workspace) {
  const CorrelationShape& s = plan.shape;
  const int th = static_cast<int>(plan.tiling.tile_h), tw = static_cast<int>(plan.tiling.tile_w);
  const FftBuffers buf = carve_aligned(plan, dtype, workspace);
  launch_fft_filters_forward(plan.version, dtype, filters, th, tw, buf.filters, buf.scratch);
  const int64_t O = s.out_channels, I = s.in_per_group(), Og = s.out_per_group();
  for (int64_t n0 = 0; n0 < s.N; n0 += plan.chunk_images) {
    const int64_t images = std::min(plan.chunk_images, s.N - n0), M = plan.tiles(images);
    launch_fft_tiles_forward(plan.version, dtype, input_tiles(plan, in, n0, images), th, tw, buf.inputs, buf.scratch);
    SpectralGemm g{};
    g.a = buf.filters;
    g.b = buf.inputs;
    g.c = buf.outputs;
    g.F = static_cast<int>(plan.spectrum());
    g.groups = static_cast<int>(s.groups);
    g.rows = static_cast<int>(Og);
    g.cols = static_cast<int>(M);
    g.depth = static_cast<int>(I);
    g.a_f = O * I, g.a_g = Og * I, g.a_r = I, g.a_k = 1;
    g.b_f = s.in_channels * M, g.b_g = I * M, g.b_k = M, g.b_c = 1;
    g.c_f = O * M, g.c_g = Og * M, g.c_r = M, g.c_c = 1;
    g.conj_a = true;
    g.accumulate = false;
    launch_spectral_gemm(plan.version, dtype, g);
    launch_fft_tiles_inverse(plan.version, dtype, buf.outputs, th, tw, output_tiles(plan, out, bias, n0, images),
                             buf.scratch);
  }
}

Support check_supported(const Conv2dDesc& desc) {
  try {
    desc.validate("conv2d (gpu, fft)");
    conv_geometry(desc);
  } catch (const Error& e) {
    return Support::no(e.what());
  }
  if (desc.stride_h != 1 || desc.stride_w != 1) {
    return Support::no(detail::concat(
        "fft computes every output position of the correlation, so a stride s would compute s^2 times too many; it "
        "supports stride 1 only (got stride ", desc.stride_h, "x", desc.stride_w, "); use im2col_gemm or direct"));
  }
  const CorrelationShape s = conv::forward_correlation(desc);
  if (s.extent_h() > conv::kMaxFftTile || s.extent_w() > conv::kMaxFftTile) {
    return Support::no(detail::concat("fft supports dilated filter extents up to ", conv::kMaxFftTile,
                                      " (the largest transform tile; got ", s.extent_h(), "x", s.extent_w(), ")"));
  }
  std::string why;
  if (!conv2d_fft_version_available(conv2d_fft_version(), &why)) return Support::no(why);
  return Support::yes();
}

class FftGpuConv final : public conv::ConvAlgorithm {
 public:
  ConvAlgo algo() const override { return ConvAlgo::fft; }

  Support supports(const Conv2dDesc& desc) const override { return check_supported(desc); }

  KernelChoices kernel_choices(const Conv2dDesc& desc, DType dtype) const override {
    (void)desc;
    (void)dtype;
    conv2d_fft_version();  // registers the family
    return kernel_choices_of("conv2d_fft", [](int v) { return conv2d_fft_version_available(v, nullptr); });
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    check(desc, dtype, pass);
    const FftPlan plan = plan_fft(desc, dtype, pass);
    return carve(plan, dtype, plan.chunk_images, true, nullptr).bytes;
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b, void* y,
               void* workspace) const override {
    const FftPlan plan = checked_plan(desc, dtype, ConvPass::forward, workspace);
    const FftFilterSource filters{w,
                                  static_cast<int>(desc.K),
                                  static_cast<int>(desc.C_per_group()),
                                  static_cast<int>(desc.R),
                                  static_cast<int>(desc.S),
                                  static_cast<int>(desc.dilation_h),
                                  static_cast<int>(desc.dilation_w),
                                  false,
                                  static_cast<int>(desc.C_per_group()),
                                  static_cast<int>(desc.K_per_group())};
    correlate(plan, dtype, x, filters, b, y, workspace);
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    const FftPlan plan = checked_plan(desc, dtype, ConvPass::backward_data, workspace);
    // Output channel c of the correlation (dx) reads the dy channels of its
    // group through the flipped filters w[g*Kg + i][c mod Cg].
    const FftFilterSource filters{w,
                                  static_cast<int>(desc.C),
                                  static_cast<int>(desc.K_per_group()),
                                  static_cast<int>(desc.R),
                                  static_cast<int>(desc.S),
                                  static_cast<int>(desc.dilation_h),
                                  static_cast<int>(desc.dilation_w),
                                  true,
                                  static_cast<int>(desc.C_per_group()),
                                  static_cast<int>(desc.K_per_group())};
    correlate(plan, dtype, dy, filters, nullptr, dx, workspace);
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw, void* db,
                        void* workspace) const override {
    const FftPlan plan = checked_plan(desc, dtype, ConvPass::backward_weights, workspace);
    const FftTiling& t = plan.tiling;
    const int th = static_cast<int>(t.tile_h), tw = static_cast<int>(t.tile_w);
    const FftBuffers buf = carve_aligned(plan, dtype, workspace);
    const int64_t K = desc.K, C = desc.C, Kg = desc.K_per_group(), Cg = desc.C_per_group();
    for (int64_t n0 = 0; n0 < desc.N; n0 += plan.chunk_images) {
      const int64_t images = std::min(plan.chunk_images, desc.N - n0), M = plan.tiles(images);
      launch_fft_tiles_forward(plan.version, dtype, input_tiles(plan, x, n0, images), th, tw,
                               buf.inputs, buf.scratch);
      launch_fft_tiles_forward(plan.version, dtype, dy_tiles(plan, dy, n0, images), th, tw,
                               buf.outputs, buf.scratch);
      // dW_f (Kg x Cg) (+)= conj(DY_f) (Kg x M) * X_f^T (M x Cg), per group.
      SpectralGemm g{};
      g.a = buf.outputs;
      g.b = buf.inputs;
      g.c = buf.filters;
      g.F = static_cast<int>(plan.spectrum());
      g.groups = static_cast<int>(desc.groups);
      g.rows = static_cast<int>(Kg);
      g.cols = static_cast<int>(Cg);
      g.depth = static_cast<int>(M);
      g.a_f = K * M, g.a_g = Kg * M, g.a_r = M, g.a_k = 1;
      g.b_f = C * M, g.b_g = Cg * M, g.b_k = 1, g.b_c = M;
      g.c_f = K * Cg, g.c_g = Kg * Cg, g.c_r = Cg, g.c_c = 1;
      g.conj_a = true;
      g.accumulate = n0 > 0;
      launch_spectral_gemm(plan.version, dtype, g);
    }
    const FftFilterSink sink{dw, static_cast<int>(desc.R), static_cast<int>(desc.S),
                             static_cast<int>(desc.dilation_h), static_cast<int>(desc.dilation_w),
                             1.0 / static_cast<double>(t.tile_h * t.tile_w)};
    launch_fft_filters_inverse(plan.version, dtype, buf.filters, th, tw, K * Cg, sink, buf.scratch);
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

  // The caller promises at least workspace_bytes() (conv/conv_dispatch.h
  // checks a tensor's size); a null workspace is caught here.
  static FftPlan checked_plan(const Conv2dDesc& desc, DType dtype, ConvPass pass, const void* workspace) {
    check(desc, dtype, pass);
    const FftPlan plan = plan_fft(desc, dtype, pass);
    const std::size_t needed = carve(plan, dtype, plan.chunk_images, true, nullptr).bytes;
    CK_CHECK(needed == 0 || workspace != nullptr, op_name(pass), ": needs ", needed,
             " bytes of workspace but workspace is null; descriptor: ", desc.str());
    return plan;
  }
};

}  // namespace

const conv::ConvAlgorithm& fft_gpu_conv_algorithm() {
  static const FftGpuConv instance;
  return instance;
}

namespace {
const conv::ConvAlgorithmRegistrar kRegistered(conv_registry(), fft_gpu_conv_algorithm());
}  // namespace

}  // namespace convkit::CK_GPU_NS
