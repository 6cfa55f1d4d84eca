// The cpu backend's run-time ISA dispatch (cpu/cpu_isa.h): the backend the
// registry makes is the chosen ISA copy's, and the free functions that
// callers outside the copies use (tap_gemm.h, implementations.h) forward to
// that copy.
#include "cpu/isa_dispatch.h"

#include <functional>
#include <utility>

#include "cpu/conv/conv_algorithm.h"
#include "cpu/conv/tap_gemm.h"

namespace convkit::cpu {

namespace {

CpuIsa isa() { return selected_cpu_isa().isa; }

Backend& chosen_backend() { CONVKIT_CPU_ISA_CALL(isa(), backend()); }

// The registry makes the backend on first use, so an unusable
// CONVKIT_CPU_ISA is reported there (and by every later use), not at load.
const BackendRegistrar registrar(DeviceType::cpu, [] { return &chosen_backend(); });

// A conv algorithm with one implementation per ISA copy; each call goes to
// the chosen copy's. Registered once, so the registry and the table see one
// algorithm. Copies are reached only through `of_`, lazily: running any code
// of a copy the CPU lacks, even a constructor at load, can fault (an ASan
// build's shadow stores in the AVX-512 copy were AVX-512 instructions).
class IsaConv final : public ConvAlgorithm {
 public:
  using Accessor = std::function<const ConvAlgorithm&(CpuIsa)>;
  explicit IsaConv(Accessor of) : of_(std::move(of)) {}
  // Every copy's is the same algorithm; asking the baseline copy, which runs
  // everywhere, keeps registration (at load) from choosing the ISA.
  ConvAlgo algo() const override { return of_(CpuIsa::baseline).algo(); }
  Support supports(const Conv2dDesc& desc) const override { return chosen().supports(desc); }
  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    return chosen().workspace_bytes(desc, dtype, pass);
  }
  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b, void* y,
               void* workspace) const override {
    chosen().forward(desc, dtype, x, w, b, y, workspace);
  }
  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void* workspace) const override {
    chosen().backward_data(desc, dtype, dy, w, dx, workspace);
  }
  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw, void* db,
                        void* workspace) const override {
    chosen().backward_weights(desc, dtype, x, dy, dw, db, workspace);
  }

 private:
  const ConvAlgorithm& chosen() const { return of_(isa()); }
  Accessor of_;
};

const ConvAlgorithm& im2col_gemm_of(CpuIsa which, GemmKernel kernel) {
  CONVKIT_CPU_ISA_CALL(which, im2col_gemm_conv_algorithm_with_kernel(kernel));
}

const ConvAlgorithm& winograd_of(CpuIsa which, int output_tile, GemmKernel kernel) {
  CONVKIT_CPU_ISA_CALL(which, winograd_conv_algorithm_with(output_tile, kernel));
}

}  // namespace

const ConvAlgorithm& im2col_gemm_conv_algorithm() { return im2col_gemm_conv_algorithm_with_kernel(GemmKernel::automatic); }

const ConvAlgorithm& im2col_gemm_conv_algorithm_with_kernel(GemmKernel kernel) {
  auto make = [](GemmKernel k) { return IsaConv([k](CpuIsa which) -> const ConvAlgorithm& { return im2col_gemm_of(which, k); }); };
  static const IsaConv variants[3] = {make(GemmKernel::automatic), make(GemmKernel::eigen), make(GemmKernel::taps)};
  return variants[static_cast<int>(kernel)];
}

const ConvAlgorithm& winograd_conv_algorithm() { return winograd_conv_algorithm_with(0, GemmKernel::automatic); }

const ConvAlgorithm& winograd_conv_algorithm_with(int output_tile, GemmKernel kernel) {
  CK_CHECK(output_tile == 0 || output_tile == 2 || output_tile == 4, "winograd_conv_algorithm_with: output tile ",
           output_tile, " is not 0 (per pass), 2 or 4");
  auto make = [](int tile, GemmKernel k) {
    return IsaConv([tile, k](CpuIsa which) -> const ConvAlgorithm& { return winograd_of(which, tile, k); });
  };
  static const IsaConv variants[3][3] = {
      {make(0, GemmKernel::automatic), make(0, GemmKernel::eigen), make(0, GemmKernel::taps)},
      {make(2, GemmKernel::automatic), make(2, GemmKernel::eigen), make(2, GemmKernel::taps)},
      {make(4, GemmKernel::automatic), make(4, GemmKernel::eigen), make(4, GemmKernel::taps)}};
  return variants[output_tile / 2][static_cast<int>(kernel)];
}

bool tap_gemm_compiled() { CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_compiled()); }
bool tap_gemm_shape(const Conv2dDesc& d) { CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_shape(d)); }
std::int64_t tap_gemm_scratch_floats(const Conv2dDesc& d, ConvPass pass) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_scratch_floats(d, pass));
}
std::int64_t tap_gemm_flipped_filter_floats(const Conv2dDesc& d) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_flipped_filter_floats(d));
}
void tap_gemm_flip_filters(const Conv2dDesc& d, const float* w, float* wflip) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_flip_filters(d, w, wflip));
}
void tap_gemm_forward_image(const Conv2dDesc& d, const float* x_image, const float* w, const float* b,
                            float* y_image, float* scratch, bool parallel) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_forward_image(d, x_image, w, b, y_image, scratch, parallel));
}
void tap_gemm_backward_data_image(const Conv2dDesc& d, const float* dy_image, const float* wflip,
                                  float* dx_image, float* scratch, bool parallel) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_backward_data_image(d, dy_image, wflip, dx_image, scratch, parallel));
}
void tap_gemm_multiply(const float* a, std::int64_t rows, const std::int64_t* offsets, std::int64_t taps,
                       const float* b, std::int64_t cols, float* out, std::int64_t out_stride) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_multiply(a, rows, offsets, taps, b, cols, out, out_stride));
}
void tap_gemm_backward_weights_image(const Conv2dDesc& d, const float* x_image, const float* dy_image,
                                     float* dw, float* scratch, bool parallel) {
  CONVKIT_CPU_ISA_CALL(isa(), tap_gemm_backward_weights_image(d, x_image, dy_image, dw, scratch, parallel));
}

namespace {
const conv::ConvAlgorithmRegistrar kIm2colGemm(conv_registry(), im2col_gemm_conv_algorithm());
const conv::ConvAlgorithmRegistrar kWinograd(conv_registry(), winograd_conv_algorithm());
}  // namespace

}  // namespace convkit::cpu
