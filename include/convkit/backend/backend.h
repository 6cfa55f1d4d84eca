#pragma once
// The seam between ops and devices. Ops (convkit/ops) check arguments, compute
// output shapes, allocate outputs and record autograd; a Backend only runs the
// kernel. Tensors handed to a backend are already on its device and of a
// supported dtype. Inputs may be strided views (a broadcast input has stride 0);
// `out` tensors are freshly allocated and contiguous unless a method says
// otherwise.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit {

enum class UnaryOp {
  copy,        // out = x (also converts dtype)
  neg, exp, log, sqrt, rsqrt, abs, sign, square, reciprocal,
  relu, sigmoid, tanh,
  add_scalar,  // x + a
  mul_scalar,  // x * a
  pow_scalar,  // x ^ a
  rsub_scalar, // a - x
  rdiv_scalar, // a / x
  clamp,       // min(max(x, a), b)
  leaky_relu,  // x > 0 ? x : a * x
  elu,         // x > 0 ? x : a * (exp(x) - 1)
  gt_scalar,   // x > a ? 1 : 0
};

enum class BinaryOp {
  add, sub, mul, div, pow, maximum, minimum,
  eq, ne, lt, le, gt, ge,  // 1 or 0 in the inputs' dtype
};

enum class ReduceOp { sum, max, min };

// What `convkit devices` prints for one backend.
struct BackendInfo {
  std::string name;        // "cpu", "sim", "cuda:0"
  bool usable = false;
  std::string detail;      // threads and SIMD width, GPU name, or why not usable
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual BackendInfo info() const = 0;

  // ---- memory
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t nbytes) = 0;
  virtual void synchronize() = 0;

  // ---- elementwise. `out` may be a strided view here (copy_ into a slice).
  virtual void fill(const Tensor& out, double value) = 0;
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out, double a = 0, double b = 0) = 0;
  // a and b are already expanded to out's shape.
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out = cond ? a : b, all expanded to out's shape; cond is nonzero-means-true.
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // ---- reductions. `out` has x's rank with size 1 on every reduced dim.
  virtual void reduce(ReduceOp op, const Tensor& x, const Tensor& out) = 0;
  // Index (int64) of the first maximum along `dim`; out has size 1 there.
  virtual void argmax(const Tensor& x, std::int64_t dim, const Tensor& out) = 0;

  // ---- linear algebra: out[b] = a[b] @ b[b] for 3-D a [B,M,K], b [B,K,N].
  // a and b may be transposed views (unit stride on either of the last two dims).
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // ---- factories
  virtual void arange(const Tensor& out, double start, double step) = 0;
  // Philox streams: element i of `out` (row-major) is philox::uniform/normal(seed, offset, i).
  virtual void uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo,
                       double hi) = 0;
  virtual void normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean,
                      double std) = 0;
};

// The backend that owns `device`'s memory. Throws Error naming the device and
// the reason when that backend is not usable (no GPU, not built with CUDA).
Backend& backend_for(Device device);
// Registration seam for the sim and cuda backends.
using BackendFactory = Backend* (*)();
void register_backend(DeviceType type, BackendFactory factory);
// One entry per known backend, usable or not, for `convkit devices`.
std::vector<BackendInfo> list_backends();

}  // namespace convkit
