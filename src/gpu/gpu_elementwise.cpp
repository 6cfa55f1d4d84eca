// GpuBackend's elementwise and factory methods: kernels/elementwise.cu.
#include "gpu/gpu_backend.h"
#include "kernels/elementwise.cuh"

namespace convkit::CK_GPU_NS {

void GpuBackend::fill(const Tensor& out, double value) {
  launch_fill(out.dtype(), out.raw_data(), strided_view(out), out.numel(), value);
}

void GpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b) {
  launch_unary(op, x.dtype(), x.raw_data(), strided_view(x), out.dtype(), out.raw_data(), strided_view(out),
               out.numel(), a, b);
}

void GpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  launch_binary(op, out.dtype(), a.raw_data(), strided_view(a), b.raw_data(), strided_view(b), out.raw_data(),
                strided_view(out), out.numel());
}

void GpuBackend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  launch_where(cond.dtype(), cond.raw_data(), strided_view(cond), out.dtype(), a.raw_data(), strided_view(a),
               b.raw_data(), strided_view(b), out.raw_data(), strided_view(out), out.numel());
}

void GpuBackend::arange(const Tensor& out, double start, double step) {
  launch_arange(out.dtype(), out.raw_data(), out.numel(), start, step);
}

void GpuBackend::uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo, double hi) {
  launch_uniform(out.dtype(), out.raw_data(), out.numel(), seed, offset, lo, hi);
}

void GpuBackend::normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean, double std) {
  launch_normal(out.dtype(), out.raw_data(), out.numel(), seed, offset, mean, std);
}

}  // namespace convkit::CK_GPU_NS
