// The direct convolution on the GPU (kernels/conv2d_direct.cu,
// docs/gpu/conv2d_direct.md): every descriptor; a workspace only for the
// backward-weights partials of v4 and v5.
//
// Version choice: the selected "conv2d_direct" version (default v5: v4's
// register-tiled kernels with backward-weights split over the pixels, and
// its own backward-data for groups of at most 4 input channels; they run
// v2's tiled kernels for the passes and shapes they do not cover). Where
// v2's tiles do not fit in shared memory (a huge dilation or stride) or its
// grid would be too tall, the pass runs v1, which handles every descriptor;
// that keeps the algorithm's promise of supporting them all.
#include <string>

#include "gpu/gpu_conv_algorithm.h"
#include "kernels/bias_gradient.cuh"
#include "kernels/conv2d_direct.cuh"

namespace convkit::CK_GPU_NS {

namespace {

class DirectGpuConv final : public conv::ConvAlgorithm {
 public:
  ConvAlgo algo() const override { return ConvAlgo::direct; }

  Support supports(const Conv2dDesc& desc) const override {
    try {
      desc.validate("conv2d (gpu, direct)");
      conv_geometry(desc);
    } catch (const Error& e) {
      return Support::no(e.what());
    }
    return Support::yes();
  }

  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const override {
    if (pass != ConvPass::backward_weights) return 0;
    const ConvGeometry g = checked(desc, dtype, pass);
    return conv2d_direct_weights_workspace_bytes(version_for(g, dtype), dtype, g, desc.workspace_limit);
  }

  void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w, const void* b, void* y,
               void*) const override {
    const ConvGeometry g = checked(desc, dtype, ConvPass::forward);
    launch_conv2d_direct_forward(version_for(g, dtype), dtype, g, x, w, b, y);
  }

  void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w, void* dx,
                     void*) const override {
    const ConvGeometry g = checked(desc, dtype, ConvPass::backward_data);
    launch_conv2d_direct_backward_data(version_for(g, dtype), dtype, g, dy, w, dx);
  }

  void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy, void* dw, void* db,
                        void* workspace) const override {
    const ConvGeometry g = checked(desc, dtype, ConvPass::backward_weights);
    launch_conv2d_direct_backward_weights(version_for(g, dtype), dtype, g, x, dy, dw, workspace,
                                          desc.workspace_limit);
    if (db != nullptr) launch_bias_gradient(dtype, dy, desc.N, desc.K, desc.P() * desc.Q(), db);
  }

  KernelChoices kernel_choices(const Conv2dDesc& desc, DType dtype) const override {
    conv2d_direct_version();  // registers the family
    const ConvGeometry g = conv_geometry(desc);
    return kernel_choices_of("conv2d_direct",
                             [&](int v) { return conv2d_direct_can_implement(v, g, dtype, nullptr); });
  }

 private:
  // Every pass re-checks what it relies on, so a direct caller of the
  // algorithm gets an Error, not a wrong launch.
  static ConvGeometry checked(const Conv2dDesc& desc, DType dtype, ConvPass pass) {
    const std::string op = conv_op_name(ConvAlgo::direct, pass);
    desc.validate(op.c_str());
    CK_CHECK(is_floating(dtype), op, ": dtype ", dtype, " is not supported (float32 or float64); ", desc.str());
    return conv_geometry(desc);
  }

  static int version_for(const ConvGeometry& g, DType dtype) {
    const int selected = conv2d_direct_version();
    return conv2d_direct_can_implement(selected, g, dtype, nullptr) ? selected : 1;
  }
};

const conv::ConvAlgorithmRegistrar kRegistered(conv_registry(), direct_gpu_conv_algorithm());

}  // namespace

const conv::ConvAlgorithm& direct_gpu_conv_algorithm() {
  static const DirectGpuConv instance;
  return instance;
}

}  // namespace convkit::CK_GPU_NS
