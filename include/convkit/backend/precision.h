#pragma once
// Reduced-precision matmul and convolution on the GPU, opt-in as in PyTorch
// (torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32 in one).
//
// When allowed, float32 matrix products and im2col_gemm convolutions (all
// three passes) on a GPU backend (sim or cuda) round their operands to tf32
// (10 mantissa bits, cvt.rna) and run on the tensor cores
// (kernels/gemm_tensor_core.cu, kernels/conv2d_implicit_gemm_tensor_core.cu),
// accumulating in float32: a relative error of about 2^-11 per product
// instead of 2^-24. The direct, fft and winograd convolutions stay strict.
// The default is strict float32, and results with the setting off are bit
// for bit those of a build without it. float64 and the cpu backend ignore
// the setting.
//
// The initial value comes from CONVKIT_ALLOW_TF32 (1 or true: allowed; unset,
// empty or 0: not); set_allow_tf32 overrides it for the whole process.
namespace convkit {

bool allow_tf32();
void set_allow_tf32(bool allowed);

// Sets allow_tf32 for a scope and restores the previous value after it.
class ScopedAllowTf32 {
 public:
  explicit ScopedAllowTf32(bool allowed) : previous_(allow_tf32()) { set_allow_tf32(allowed); }
  ~ScopedAllowTf32() { set_allow_tf32(previous_); }
  ScopedAllowTf32(const ScopedAllowTf32&) = delete;
  ScopedAllowTf32& operator=(const ScopedAllowTf32&) = delete;

 private:
  bool previous_;
};

}  // namespace convkit
