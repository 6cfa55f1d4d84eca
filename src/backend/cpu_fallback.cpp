// The default op methods of Backend: run the op on cpu. Each copies the span
// of device memory that a tensor covers to the host, builds a cpu view with
// the same strides over it (a broadcast or strided view stays one, so the cpu
// kernel sees exactly what the device kernel would), runs backend_for(cpu)'s
// method and copies the outputs' spans back. An output's span is copied in
// first unless the view covers it densely, so that the gaps of a strided
// output (copy_ into a slice) go back unchanged.
#include <cstdio>
#include <cstring>
#include <vector>

#include "convkit/backend/backend.h"
#include "convkit/core/error.h"

namespace convkit {

bool Backend::supports(BackendOp) const { return false; }

std::vector<BackendOp> Backend::fallbacks() const {
  std::vector<BackendOp> out;
  for (std::size_t i = 0; i < kBackendOpCount; ++i) {
    const auto op = static_cast<BackendOp>(i);
    if (!supports(op)) out.push_back(op);
  }
  return out;
}

// One fallback call: the host twins of its tensors, and the outputs to copy back.
class CpuFallback {
 public:
  CpuFallback(Backend& device, BackendOp op) : device_(device), cpu_(backend_for(kCPU)) {
    const std::string name = Device(device.type()).str();
    CK_CHECK(&cpu_ != &device, "the cpu backend has no ", op, ": it is the fallback of every other");
    CK_CHECK(!device.supports(op), "the ", name, " backend declares ", op,
             " in supports() but does not implement it");
    if (!device.fallback_warned_[static_cast<std::size_t>(op)].exchange(true)) {
      std::fprintf(stderr, "convkit: %s has no %s kernel; running it on cpu (copies to and from the host)\n",
                   name.c_str(), backend_op_name(op));
    }
  }

  Backend& cpu() { return cpu_; }

  Tensor in(const Tensor& t) { return twin(t, true); }
  // Overwritten entirely by the op (the Backend contract), so a dense one is
  // not copied in.
  Tensor out(const Tensor& t) {
    Tensor h = twin(t, !dense(t));
    if (t.defined()) outputs_.push_back({t, h});
    return h;
  }
  // Read and written (optimizer state, parameters).
  Tensor inout(const Tensor& t) {
    Tensor h = twin(t, true);
    if (t.defined()) outputs_.push_back({t, h});
    return h;
  }
  Tensor scratch(const Tensor& t) { return twin(t, false); }

  // Copies every output back to the device, in the order they were named.
  void finish() {
    for (const auto& [dev, host] : outputs_) {
      const Span s = span(dev);
      if (s.count == 0) continue;
      const std::size_t esize = dtype_size(dev.dtype());
      device_.copy_from_host(static_cast<char*>(dev.storage()->data()) + s.first * esize,
                             host.storage()->data(), static_cast<std::size_t>(s.count) * esize);
    }
  }

 private:
  struct Span {
    std::int64_t first = 0, count = 0;  // elements of the storage
  };
  static Span span(const Tensor& t) {
    if (t.numel() == 0) return {};
    std::int64_t last = t.offset();
    for (std::int64_t d = 0; d < t.dim(); ++d) {
      CK_CHECK(t.strides()[static_cast<std::size_t>(d)] >= 0, "cpu fallback: a negative stride in dim ", d,
               " of a ", t.shape(), " tensor is not supported");
      last += (t.size(d) - 1) * t.strides()[static_cast<std::size_t>(d)];
    }
    return {t.offset(), last - t.offset() + 1};
  }
  static bool dense(const Tensor& t) { return span(t).count == t.numel(); }

  Tensor twin(const Tensor& t, bool copy_in) {
    if (!t.defined()) return t;
    const Span s = span(t);
    const std::size_t esize = dtype_size(t.dtype());
    const std::size_t nbytes = static_cast<std::size_t>(s.count) * esize;
    auto storage = Storage::allocate(nbytes, kCPU, &t.shape(), t.dtype());
    if (copy_in && nbytes > 0) {
      device_.copy_to_host(storage->data(), static_cast<const char*>(t.storage()->data()) + s.first * esize,
                           nbytes);
    }
    return Tensor::make_view(std::move(storage), t.shape(), t.strides(), t.offset() - s.first, t.dtype());
  }

  Backend& device_;
  Backend& cpu_;
  std::vector<std::pair<Tensor, Tensor>> outputs_;
};

void Backend::fill(const Tensor& out, double value) {
  CpuFallback f(*this, BackendOp::fill);
  f.cpu().fill(f.out(out), value);
  f.finish();
}

void Backend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double a, double b) {
  CpuFallback f(*this, BackendOp::unary);
  f.cpu().unary(op, f.in(x), f.out(out), a, b);
  f.finish();
}

void Backend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  CpuFallback f(*this, BackendOp::binary);
  f.cpu().binary(op, f.in(a), f.in(b), f.out(out));
  f.finish();
}

void Backend::where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  CpuFallback f(*this, BackendOp::where);
  f.cpu().where(f.in(cond), f.in(a), f.in(b), f.out(out));
  f.finish();
}

void Backend::reduce(ReduceOp op, const Tensor& x, const Tensor& out) {
  CpuFallback f(*this, BackendOp::reduce);
  f.cpu().reduce(op, f.in(x), f.out(out));
  f.finish();
}

void Backend::argmax(const Tensor& x, std::int64_t dim, const Tensor& out) {
  CpuFallback f(*this, BackendOp::argmax);
  f.cpu().argmax(f.in(x), dim, f.out(out));
  f.finish();
}

void Backend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  CpuFallback f(*this, BackendOp::matmul);
  f.cpu().matmul(f.in(a), f.in(b), f.out(out));
  f.finish();
}

void Backend::arange(const Tensor& out, double start, double step) {
  CpuFallback f(*this, BackendOp::arange);
  f.cpu().arange(f.out(out), start, step);
  f.finish();
}

void Backend::uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo, double hi) {
  CpuFallback f(*this, BackendOp::uniform);
  f.cpu().uniform(f.out(out), seed, offset, lo, hi);
  f.finish();
}

void Backend::normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean, double std) {
  CpuFallback f(*this, BackendOp::normal);
  f.cpu().normal(f.out(out), seed, offset, mean, std);
  f.finish();
}

void Backend::max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& argmax,
                                 PoolWindow window) {
  CpuFallback f(*this, BackendOp::max_pool2d_forward);
  f.cpu().max_pool2d_forward(f.in(x), f.out(out), f.out(argmax), window);
  f.finish();
}

void Backend::max_pool2d_backward(const Tensor& grad_out, const Tensor& argmax, const Tensor& grad_in,
                                  PoolWindow window) {
  CpuFallback f(*this, BackendOp::max_pool2d_backward);
  f.cpu().max_pool2d_backward(f.in(grad_out), f.in(argmax), f.out(grad_in), window);
  f.finish();
}

void Backend::avg_pool2d_forward(const Tensor& x, const Tensor& out, PoolWindow window) {
  CpuFallback f(*this, BackendOp::avg_pool2d_forward);
  f.cpu().avg_pool2d_forward(f.in(x), f.out(out), window);
  f.finish();
}

void Backend::avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, PoolWindow window) {
  CpuFallback f(*this, BackendOp::avg_pool2d_backward);
  f.cpu().avg_pool2d_backward(f.in(grad_out), f.out(grad_in), window);
  f.finish();
}

void Backend::batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var) {
  CpuFallback f(*this, BackendOp::batch_norm_stats);
  f.cpu().batch_norm_stats(f.in(x), f.out(mean), f.out(var));
  f.finish();
}

void Backend::batch_norm_coefficients(const Tensor& mean, const Tensor& var, const Tensor& weight,
                                      const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                                      BatchNormCoefficientStep step, const Tensor& invstd, const Tensor& scale,
                                      const Tensor& shift) {
  CpuFallback f(*this, BackendOp::batch_norm_coefficients);
  f.cpu().batch_norm_coefficients(f.in(mean), f.in(var), f.in(weight), f.in(bias), f.inout(running_mean),
                                  f.inout(running_var), step, f.out(invstd), f.out(scale), f.out(shift));
  f.finish();
}

void Backend::batch_norm_affine(const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu,
                                const Tensor& out) {
  CpuFallback f(*this, BackendOp::batch_norm_affine);
  f.cpu().batch_norm_affine(f.in(x), f.in(scale), f.in(shift), relu, f.out(out));
  f.finish();
}

void Backend::batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                         const Tensor& sum_dy, const Tensor& sum_dy_xmu) {
  CpuFallback f(*this, BackendOp::batch_norm_backward_reduce);
  f.cpu().batch_norm_backward_reduce(f.in(grad_out), f.in(x), f.in(mean), f.out(sum_dy),
                                     f.out(sum_dy_xmu));
  f.finish();
}

void Backend::batch_norm_backward_input(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                                        const Tensor& invstd, const Tensor& weight,
                                        const Tensor& sum_dy, const Tensor& sum_dy_xmu,
                                        const Tensor& grad_in) {
  CpuFallback f(*this, BackendOp::batch_norm_backward_input);
  f.cpu().batch_norm_backward_input(f.in(grad_out), f.in(x), f.in(mean), f.in(invstd), f.in(weight),
                                    f.in(sum_dy), f.in(sum_dy_xmu), f.out(grad_in));
  f.finish();
}

void Backend::batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& scale, const Tensor& shift,
                                  const Tensor& out) {
  CpuFallback f(*this, BackendOp::batch_norm_add_relu);
  f.cpu().batch_norm_add_relu(f.in(x), f.in(residual), f.in(scale), f.in(shift), f.out(out));
  f.finish();
}

void Backend::batch_norm_relu_backward_reduce(const Tensor& grad_out, const Tensor& out, const Tensor& x,
                                              const Tensor& mean, const Tensor& grad_masked, const Tensor& sum_dy,
                                              const Tensor& sum_dy_xmu) {
  CpuFallback f(*this, BackendOp::batch_norm_relu_backward_reduce);
  f.cpu().batch_norm_relu_backward_reduce(f.in(grad_out), f.in(out), f.in(x), f.in(mean), f.out(grad_masked),
                                          f.out(sum_dy), f.out(sum_dy_xmu));
  f.finish();
}

void Backend::dropout_mask(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double p) {
  CpuFallback f(*this, BackendOp::dropout_mask);
  f.cpu().dropout_mask(f.out(out), seed, offset, p);
  f.finish();
}

void Backend::softmax_forward(const Tensor& x, std::int64_t dim, bool log, const Tensor& out) {
  CpuFallback f(*this, BackendOp::softmax_forward);
  f.cpu().softmax_forward(f.in(x), dim, log, f.out(out));
  f.finish();
}

void Backend::softmax_backward(const Tensor& grad_out, const Tensor& out, std::int64_t dim, bool log,
                               const Tensor& grad_in) {
  CpuFallback f(*this, BackendOp::softmax_backward);
  f.cpu().softmax_backward(f.in(grad_out), f.in(out), dim, log, f.out(grad_in));
  f.finish();
}

void Backend::cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                    double label_smoothing, const Tensor& loss, const Tensor& lse) {
  CpuFallback f(*this, BackendOp::cross_entropy_forward);
  f.cpu().cross_entropy_forward(f.in(logits), f.in(targets), label_smoothing, f.out(loss), f.out(lse));
  f.finish();
}

void Backend::cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                     const Tensor& grad_loss, double label_smoothing,
                                     const Tensor& grad_logits) {
  CpuFallback f(*this, BackendOp::cross_entropy_backward);
  f.cpu().cross_entropy_backward(f.in(logits), f.in(targets), f.in(lse), f.in(grad_loss),
                                 label_smoothing, f.out(grad_logits));
  f.finish();
}

void Backend::sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                         SgdStep step) {
  CpuFallback f(*this, BackendOp::sgd_update);
  f.cpu().sgd_update(f.inout(param), f.in(grad), f.inout(momentum_buffer), step);
  f.finish();
}

void Backend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                          const Tensor& exp_avg_sq, AdamStep step) {
  CpuFallback f(*this, BackendOp::adam_update);
  f.cpu().adam_update(f.inout(param), f.in(grad), f.inout(exp_avg), f.inout(exp_avg_sq), step);
  f.finish();
}

// The queries answer as cpu does: the passes below run cpu's algorithms.
Support Backend::conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc) {
  CpuFallback f(*this, BackendOp::conv2d);
  return f.cpu().conv2d_supports(algo, desc);
}

std::size_t Backend::conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype,
                                            ConvPass pass) {
  CpuFallback f(*this, BackendOp::conv2d);
  return f.cpu().conv2d_workspace_bytes(algo, desc, dtype, pass);
}

ConvAlgo Backend::conv2d_heuristic(const Conv2dDesc& desc, DType dtype) {
  CpuFallback f(*this, BackendOp::conv2d);
  return f.cpu().conv2d_heuristic(desc, dtype);
}

KernelChoices Backend::conv2d_kernel_choices(ConvAlgo, const Conv2dDesc&, DType) { return {}; }

void Backend::conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x, const Tensor& w,
                             const Tensor& b, const Tensor& y, const Tensor& workspace) {
  CpuFallback f(*this, BackendOp::conv2d);
  f.cpu().conv2d_forward(algo, desc, f.in(x), f.in(w), f.in(b), f.out(y), f.scratch(workspace));
  f.finish();
}

void Backend::conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy,
                                   const Tensor& w, const Tensor& dx, const Tensor& workspace) {
  CpuFallback f(*this, BackendOp::conv2d);
  f.cpu().conv2d_backward_data(algo, desc, f.in(dy), f.in(w), f.out(dx), f.scratch(workspace));
  f.finish();
}

void Backend::conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                      const Tensor& dy, const Tensor& dw, const Tensor& db,
                                      const Tensor& workspace) {
  CpuFallback f(*this, BackendOp::conv2d);
  f.cpu().conv2d_backward_weights(algo, desc, f.in(x), f.in(dy), f.out(dw), f.out(db),
                                  f.scratch(workspace));
  f.finish();
}

}  // namespace convkit
