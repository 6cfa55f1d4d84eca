// GpuBackend::matmul: one strided-batched GEMM (kernels/gemm.cu). Each
// operand's layout becomes GEMM arguments without a copy: unit stride on the
// last dim is a row-major matrix, unit stride on the middle dim a transposed
// one, and a batch of 1 (or a batch stride of 0) broadcasts. Below the
// highest float32 precision (convkit/backend/precision.h), float32 products go
// to the tensor-core GEMM (kernels/gemm_tensor_core.cu) instead: tf32
// operands at high, bf16 at medium.
#include "convkit/backend/precision.h"
#include "gpu/gpu_backend.h"
#include "kernels/gemm.cuh"
#include "kernels/gemm_tensor_core.cuh"

namespace convkit::CK_GPU_NS {

namespace {

struct OperandLayout {
  bool transposed = false;
  std::int64_t ld = 0, batch_stride = 0;
};

// How GEMM sees the [B, rows, cols] operand t; ld = -1 when t must be copied
// first (neither row- nor column-major). A dim of size 1 imposes
// nothing, so its stride is replaced by the natural one (which keeps
// alignment checks and cuBLAS's ld rule happy); a leading dim smaller than
// the matrix extent can only come from an expanded (stride 0) view, which
// GEMM reads fine but cuBLAS rejects, so such operands are copied.
OperandLayout layout_of(const Tensor& t) {
  const std::int64_t rows = t.size(1), cols = t.size(2);
  OperandLayout l;
  l.batch_stride = t.size(0) == 1 ? 0 : t.stride(0);
  if (t.stride(2) == 1 || cols == 1) {
    l.ld = rows == 1 ? cols : t.stride(1);
    if (l.ld < cols) l.ld = -1;
  } else if (t.stride(1) == 1 || rows == 1) {
    l.transposed = true;
    l.ld = cols == 1 ? rows : t.stride(2);
    if (l.ld < rows) l.ld = -1;
  } else {
    l.ld = -1;
  }
  return l;
}

}  // namespace

void GpuBackend::matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  CK_CHECK(out.is_contiguous(), "matmul: the GPU backend writes a contiguous output, got a strided view of shape ",
           out.shape());
  OperandLayout la = layout_of(a_in), lb = layout_of(b_in);
  // A dense copy by this backend's own copy kernel: Tensor::contiguous is an
  // op, and a backend calls none.
  const auto dense = [this](const Tensor& t) {
    Tensor copy = Tensor::empty(t.shape(), TensorOptions().dtype(t.dtype()).device(t.device()));
    unary(UnaryOp::copy, t, copy, 0, 0);
    return copy;
  };
  const Tensor a = la.ld < 0 ? dense(a_in) : a_in;
  const Tensor b = lb.ld < 0 ? dense(b_in) : b_in;
  if (la.ld < 0) la = layout_of(a);
  if (lb.ld < 0) lb = layout_of(b);

  GemmArgs g;
  g.M = out.size(1);
  g.N = out.size(2);
  g.K = a.size(2);
  g.batch = out.size(0);
  g.a = a.raw_data();
  g.trans_a = la.transposed;
  g.lda = la.ld;
  g.stride_a = la.batch_stride;
  g.b = b.raw_data();
  g.trans_b = lb.transposed;
  g.ldb = lb.ld;
  g.stride_b = lb.batch_stride;
  g.c = out.raw_data();
  g.ldc = g.N;
  g.stride_c = g.M * g.N;
  const Float32Precision precision = float32_precision();
  if (out.dtype() != DType::float32 || precision == Float32Precision::highest) {
    launch_gemm(out.dtype(), g);
  } else {
    launch_gemm_tensor_core(tensor_core_precision(precision), out.dtype(), g);
  }
}

}  // namespace convkit::CK_GPU_NS
