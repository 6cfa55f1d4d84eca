#pragma once
// The precisions the tensor-core kernels round their float32 operands to,
// shared by the GEMM (gemm_tensor_core.cuh) and the convolution
// (conv2d_implicit_gemm_tensor_core.cuh). Host code includes this; the device
// helpers that go with it (dev::mma<P>, kMmaStepK<P>) are in tensor_core.cuh.
#include "convkit/backend/precision.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// tf32: 10 mantissa bits (cvt.rna), one element per 32-bit fragment word,
//       mma.sync m16n8k8;
// bf16: 7 mantissa bits (round to nearest even), two elements adjacent along k
//       per word, mma.sync m16n8k16.
// Both take the same fragment layout in words, so one staging layout serves both.
enum class TensorCorePrecision { tf32, bf16 };
const char* precision_name(TensorCorePrecision p);

// The rounding a float32 precision below highest asks of the tensor cores:
// bf16 at medium, tf32 at high.
inline TensorCorePrecision tensor_core_precision(Float32Precision p) {
  return p == Float32Precision::medium ? TensorCorePrecision::bf16 : TensorCorePrecision::tf32;
}

}  // namespace convkit::CK_GPU_NS
