#pragma once
// Reduced-precision matmul and convolution on the GPU, opt-in as in PyTorch.
//
// float32_precision() has PyTorch's three levels
// (torch.set_float32_matmul_precision):
//   highest  strict float32, the default;
//   high     tf32 operands (10 mantissa bits, cvt.rna) on the tensor cores;
//   medium   bf16 operands (7 mantissa bits, round to nearest even), for
//            the matrix products and the im2col_gemm convolutions alike
//            (PyTorch's "medium" is bf16 where a bf16 kernel exists).
// Every level accumulates in float32 and keeps float32 tensors: weights,
// activations and gradients stay float32 (the master copies), only the
// operands of each product are rounded as they are staged. The error per
// product is about u = 2^-11 (tf32) or 2^-8 (bf16) relative instead of 2^-24.
//
// What it covers: float32 matrix products (kernels/gemm_tensor_core.cu) and
// im2col_gemm convolutions, all three passes
// (kernels/conv2d_implicit_gemm_tensor_core.cu), on a GPU backend (sim or
// cuda); winograd's products too, in tf32 at high and medium alike, because
// its transforms amplify the operands' rounding
// (kernels/conv2d_winograd.cuh, docs/algorithms/winograd.md). The direct
// and fft convolutions stay strict; float64 and the cpu backend ignore the
// setting. With highest, results are bit for bit those of a build without it.
//
// allow_tf32() is "anything below highest" (the tensor cores may run), as
// torch.backends.cuda.matmul.allow_tf32 reads; set_allow_tf32(true) sets high
// and set_allow_tf32(false) highest.
//
// The initial value comes from the environment: CONVKIT_FLOAT32_PRECISION
// (highest, high or medium), or CONVKIT_ALLOW_TF32 (1 or true: high; 0,
// false, unset or empty: highest). Both set and disagreeing is an error, as is
// any other value: a typo must not silently change the arithmetic.
#include <string>

namespace convkit {

enum class Float32Precision { highest, high, medium };

Float32Precision float32_precision();
void set_float32_precision(Float32Precision precision);
// "highest", "high" or "medium"; parse_float32_precision names a bad value.
std::string to_string(Float32Precision precision);
Float32Precision parse_float32_precision(const std::string& name);
// The unit roundoff u of a product's operands at `precision` on the tensor
// cores: 0 at highest (exact operands), 2^-11 at high, 2^-8 at medium. A
// product of two rounded operands is off by at most 2u + u^2 relative.
double operand_unit_roundoff(Float32Precision precision);

bool allow_tf32();
void set_allow_tf32(bool allowed);

// Sets float32_precision for a scope and restores the previous value after it.
class ScopedFloat32Precision {
 public:
  explicit ScopedFloat32Precision(Float32Precision precision) : previous_(float32_precision()) {
    set_float32_precision(precision);
  }
  ~ScopedFloat32Precision() { set_float32_precision(previous_); }
  ScopedFloat32Precision(const ScopedFloat32Precision&) = delete;
  ScopedFloat32Precision& operator=(const ScopedFloat32Precision&) = delete;

 private:
  Float32Precision previous_;
};

// Sets allow_tf32 for a scope: ScopedFloat32Precision(allowed ? high : highest).
class ScopedAllowTf32 : public ScopedFloat32Precision {
 public:
  explicit ScopedAllowTf32(bool allowed)
      : ScopedFloat32Precision(allowed ? Float32Precision::high : Float32Precision::highest) {}
};

}  // namespace convkit
