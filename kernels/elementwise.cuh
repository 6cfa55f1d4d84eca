#pragma once
// Launchers of the elementwise kernels (kernels/elementwise.cu). Pointers are
// device pointers of the given dtype; views describe each operand's layout.
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/dtype.h"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

// Registers the "elementwise" kernel family (idempotent), so that
// set_kernel_version("elementwise", v) works before the first launch. It
// chooses the version of launch_unary (not copy) and launch_binary.
void register_elementwise_kernels();

// out = value, for every element of the (possibly strided) out view.
void launch_fill(DType dtype, void* out, const StridedView& out_view, std::int64_t n, double value);
// out = op(x) with scalar parameters a, b (see UnaryOp). x and out share a
// dtype, except UnaryOp::copy, which converts between any two dtypes.
void launch_unary(UnaryOp op, DType x_dtype, const void* x, const StridedView& x_view, DType out_dtype,
                  void* out, const StridedView& out_view, std::int64_t n, double a, double b);
// out = op(a, b); a and b are expanded to out's shape (stride 0 where broadcast).
void launch_binary(BinaryOp op, DType dtype, const void* a, const StridedView& a_view, const void* b,
                   const StridedView& b_view, void* out, const StridedView& out_view, std::int64_t n);
// out = cond != 0 ? a : b.
void launch_where(DType cond_dtype, const void* cond, const StridedView& cond_view, DType dtype,
                  const void* a, const StridedView& a_view, const void* b, const StridedView& b_view,
                  void* out, const StridedView& out_view, std::int64_t n);
// out[i] = start + i * step (contiguous out).
void launch_arange(DType dtype, void* out, std::int64_t n, double start, double step);
// out[i] = lo + (hi - lo) * philox::uniform(seed, offset, i), or a normal draw.
void launch_uniform(DType dtype, void* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                    double lo, double hi);
void launch_normal(DType dtype, void* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset,
                   double mean, double std);

}  // namespace convkit::CK_GPU_NS
