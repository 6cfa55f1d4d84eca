#pragma once
// The seam between ops and devices. Ops (convkit/ops) check arguments, compute
// output shapes, allocate outputs and record autograd; a Backend only runs the
// kernel. Tensors handed to a backend are already on its device and of a
// supported dtype. Inputs may be strided views (a broadcast input has stride 0);
// `out` tensors are freshly allocated and contiguous unless a method says
// otherwise.
//
// A backend must implement type(), devices() and the memory methods. Each op
// method (the list is BackendOp, convkit/backend/backend_ops.h) has a default
// that runs it on cpu: it copies the span of device memory each tensor covers
// to the host (keeping the view's strides), runs backend_for(cpu)'s method and
// copies the outputs back, printing one warning per backend and op on stderr.
// A backend overrides the ops it implements and says so in supports(), so a
// new backend can start from memory alone and grow one op at a time;
// fallbacks() lists what still runs on cpu (`convkit devices` prints it).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/backend/backend_ops.h"
#include "convkit/backend/conv_desc.h"
#include "convkit/backend/device_communicator.h"
#include "convkit/backend/kernel_params.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/core/tensor.h"

namespace convkit {

// What `convkit devices` prints for one device.
// One parameter of a multi-tensor optimizer update (Backend::sgd_update_many).
struct SgdTensors {
  Tensor param, grad, momentum_buffer;
  bool first_step = false;
};
struct AdamTensors {
  Tensor param, grad, exp_avg, exp_avg_sq;
};

struct BackendInfo {
  std::string name;        // "cpu", "sim", "cuda:0"; "cuda" when no GPU can be listed
  bool usable = false;
  std::string detail;      // threads and SIMD width, GPU name, or why not usable
};

// A backend is its device's Allocator: the registry registers it with core
// (convkit/core/allocator.h), which Storage allocates through.
class Backend : public Allocator {
 public:
  ~Backend() override = default;
  virtual DeviceType type() const = 0;
  // One entry per device the backend drives: cpu and sim have one, cuda one
  // per GPU. Never empty: a backend with no device says why in one entry.
  virtual std::vector<BackendInfo> devices() const = 0;

  // ---- memory (allocate and deallocate are the Allocator's)
  virtual void copy_from_host(void* dst, const void* src, std::size_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t nbytes) = 0;
  virtual void synchronize() = 0;

  // ---- which ops this backend runs itself. The defaults of the op methods
  // below refuse to run an op that supports() claims, so a claim without an
  // override fails the first test that uses it rather than falling back quietly.
  virtual bool supports(BackendOp op) const;
  // The ops that run on cpu instead, in BackendOp order.
  std::vector<BackendOp> fallbacks() const;

  // ---- elementwise. `out` may be a strided view here (copy_ into a slice).
  virtual void fill(const Tensor& out, double value);
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out, double a = 0, double b = 0);
  // a and b are already expanded to out's shape.
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
  // out = cond ? a : b, all expanded to out's shape; cond is nonzero-means-true.
  virtual void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);

  // ---- reductions. `out` has x's rank with size 1 on every reduced dim.
  virtual void reduce(ReduceOp op, const Tensor& x, const Tensor& out);
  // Index (int64) of the first maximum along `dim`; out has size 1 there.
  virtual void argmax(const Tensor& x, std::int64_t dim, const Tensor& out);

  // ---- linear algebra: out[b] = a[b] @ b[b] for 3-D a [B,M,K], b [B,K,N].
  // a and b may be transposed views (unit stride on either of the last two dims).
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out);

  // ---- factories
  virtual void arange(const Tensor& out, double start, double step);
  // Philox streams: element i of `out` (row-major) is philox::uniform/normal(seed, offset, i).
  virtual void uniform(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double lo,
                       double hi);
  virtual void normal(const Tensor& out, std::uint64_t seed, std::uint64_t offset, double mean,
                      double std);

  // ---- layer kernels: pooling, batch norm, dropout, softmax, cross-entropy
  // (see docs/layers.md for the maths). Every tensor handed to these is
  // contiguous, images are NCHW, values share x's dtype unless noted, and every
  // output is overwritten entirely.

  // Max pooling; padding never wins. argmax (int64, out's shape) receives the
  // index h * W + w, within its input plane, of the winner of a row-major scan
  // that takes v when v > best or v is NaN (torch's rule: the first maximum, or the last NaN).
  virtual void max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& argmax,
                                  PoolWindow window);
  // grad_in = 0, then grad_in[n, c, argmax[n, c, i]] += grad_out[n, c, i], in
  // order of i. `window` is the forward's: with it a GPU kernel can gather
  // (each input element reads the outputs whose windows cover it) instead of
  // scattering with atomics, which would race where windows overlap.
  virtual void max_pool2d_backward(const Tensor& grad_out, const Tensor& argmax,
                                   const Tensor& grad_in, PoolWindow window);
  // Average pooling. The divisor is the window clipped to the padded input
  // (count_include_pad) or to the input itself; a window with nothing inside gives 0.
  virtual void avg_pool2d_forward(const Tensor& x, const Tensor& out, PoolWindow window);
  // grad_in[p] = sum over the windows w that contain p of grad_out[w] / divisor(w).
  virtual void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in,
                                   PoolWindow window);

  // Batch norm over x viewed as [N, C, S] (S = H * W, or 1 for [N, C]); the
  // per-channel tensors are [C], and M = N * S.
  // mean[c] and the biased variance var[c] of channel c.
  virtual void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var);
  // The map's coefficients from mean and var (the batch's statistics in
  // training, the running ones in eval), all [C] and contiguous:
  // invstd = 1 / sqrt(var + eps), scale = weight * invstd and
  // shift = -(mean * scale) + bias (bias may be undefined: no bias). With
  // running_mean and running_var defined (both or neither), they are updated
  // in place: running = running * (1 - momentum) + batch * momentum, the
  // variance's term times variance_correction. Every scalar rounded to T and
  // every product rounded before its sum (convkit/backend/batch_norm_math.h),
  // so the result is bit for bit that of the same formulas as tensor ops;
  // one launch where they took eleven.
  virtual void batch_norm_coefficients(const Tensor& mean, const Tensor& var, const Tensor& weight,
                                       const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                                       BatchNormCoefficientStep step, const Tensor& invstd, const Tensor& scale,
                                       const Tensor& shift);
  // out = x * scale[c] + shift[c]: normalisation and affine folded into one map
  // (also the eval-mode input gradient, with shift = 0); with `relu`,
  // out = max(0, x * scale[c] + shift[c]), batch norm and a following ReLU in
  // one pass (batch_norm_relu).
  virtual void batch_norm_affine(const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu,
                                 const Tensor& out);
  // sum_dy[c] = sum(grad_out), sum_dy_xmu[c] = sum(grad_out * (x - mean[c])).
  virtual void batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& x,
                                          const Tensor& mean, const Tensor& sum_dy,
                                          const Tensor& sum_dy_xmu);
  // Training-mode input gradient:
  // grad_in = weight[c] * invstd[c] * (dy - sum_dy[c] / M - (x - mean[c]) * invstd[c]^2 * sum_dy_xmu[c] / M).
  virtual void batch_norm_backward_input(const Tensor& grad_out, const Tensor& x,
                                         const Tensor& mean, const Tensor& invstd,
                                         const Tensor& weight, const Tensor& sum_dy,
                                         const Tensor& sum_dy_xmu, const Tensor& grad_in);

  // relu(batch norm + residual) in one map: out = max(0, x * scale[c] +
  // shift[c] + residual), residual of x's shape (batch_norm_add_relu).
  virtual void batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& scale,
                                   const Tensor& shift, const Tensor& out);
  // batch_norm_backward_reduce behind a ReLU, from the ReLU's output `out`:
  // grad_masked = out > 0 ? grad_out : 0 (also the residual's gradient in
  // batch_norm_add_relu), and the two sums taken over grad_masked, in one
  // pass. grad_masked may be grad_out itself (updated in place).
  virtual void batch_norm_relu_backward_reduce(const Tensor& grad_out, const Tensor& out, const Tensor& x,
                                               const Tensor& mean, const Tensor& grad_masked,
                                               const Tensor& sum_dy, const Tensor& sum_dy_xmu);

  // Inverted-dropout multiplier: out[i] = 1 / (1 - p) when
  // philox::uniform(seed, offset, i) >= p (compared in double; equivalently
  // (word >> 8) >= ceil(p * 2^24)), else 0. out is float32 or float64.
  virtual void dropout_mask(const Tensor& out, std::uint64_t seed, std::uint64_t offset,
                            double p);

  // Softmax, or log-softmax when `log`, of x along `dim`, x viewed as
  // [outer, x.size(dim), inner].
  virtual void softmax_forward(const Tensor& x, std::int64_t dim, bool log, const Tensor& out);
  // From the forward output y: softmax grad_in = y * (g - sum(g * y));
  // log-softmax grad_in = g - exp(y) * sum(g); sums along dim.
  virtual void softmax_backward(const Tensor& grad_out, const Tensor& out, std::int64_t dim,
                                bool log, const Tensor& grad_in);

  // Fused log-softmax + NLL with label smoothing s over logits [N, C] and int64
  // targets [N], checked by the op to lie in [0, C) on the cpu only: a
  // backend that implements this op checks them in its kernel, gives a bad
  // row the loss NaN, and raises Error naming the target, its position and C
  // at its next copy_to_host or synchronize (the GPU backends:
  // src/gpu/target_check.h), so that no step waits on the device. With the target
  // distribution q = (1 - s) * onehot(target) + s / C:
  // lse[n] = logsumexp(x[n]) and loss[n] = lse[n] - sum_c q[n, c] * x[n, c].
  virtual void cross_entropy_forward(const Tensor& logits, const Tensor& targets,
                                     double label_smoothing, const Tensor& loss,
                                     const Tensor& lse);
  // grad_logits[n, c] = grad_loss[n] * (exp(x[n, c] - lse[n]) - q[n, c]).
  virtual void cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                      const Tensor& lse, const Tensor& grad_loss,
                                      double label_smoothing, const Tensor& grad_logits);

  // ---- optimizer updates: one fused in-place step per parameter tensor, the
  // rules of src/optim element by element (convkit/backend/optimizer_math.h).
  // param, grad and the state buffers are contiguous, of one shape, dtype
  // (float32 or float64) and device; param and the buffers are updated in place.
  // momentum_buffer is undefined when step.momentum == 0; with
  // step.first_step its contents are ignored and overwritten.
  virtual void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                          SgdStep step);
  virtual void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                           const Tensor& exp_avg_sq, AdamStep step);
  // The same updates over the tensors of one optimizer group, which share the
  // step's hyper-parameters (SgdTensors::first_step replaces
  // SgdStep::first_step per tensor). Every tensor is as above. The defaults
  // call sgd_update / adam_update once per tensor; the GPU backends update
  // the whole list in one launch (kernels/optimizer.cu, v3).
  virtual void sgd_update_many(const std::vector<SgdTensors>& tensors, SgdStep step);
  virtual void adam_update_many(const std::vector<AdamTensors>& tensors, AdamStep step);

  // ---- convolution (convkit/ops/conv.h; one page per algorithm in
  // docs/algorithms/). x, w, y, dy, dx, dw are contiguous and laid out as in
  // Conv2dDesc; `algo` is never automatic; b and db may be undefined (no bias);
  // `workspace` holds at least conv2d_workspace_bytes(...) bytes and is
  // undefined when that is 0. Outputs are overwritten.
  virtual Support conv2d_supports(ConvAlgo algo, const Conv2dDesc& desc);
  virtual std::size_t conv2d_workspace_bytes(ConvAlgo algo, const Conv2dDesc& desc, DType dtype,
                                             ConvPass pass);
  // The backend's documented choice for ConvAlgo::automatic (no timing).
  virtual ConvAlgo conv2d_heuristic(const Conv2dDesc& desc, DType dtype);
  // The kernel family `algo` runs `desc` with here, and its versions worth
  // timing (convkit/backend/kernel_versions.h): what benchmark mode times
  // beside each algorithm. Empty by default: cpu's algorithms have none.
  virtual KernelChoices conv2d_kernel_choices(ConvAlgo algo, const Conv2dDesc& desc, DType dtype);
  virtual void conv2d_forward(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                              const Tensor& w, const Tensor& b, const Tensor& y,
                              const Tensor& workspace);
  virtual void conv2d_backward_data(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& dy,
                                    const Tensor& w, const Tensor& dx, const Tensor& workspace);
  virtual void conv2d_backward_weights(ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                                       const Tensor& dy, const Tensor& dw, const Tensor& db,
                                       const Tensor& workspace);

  // ---- collectives between ranks' devices (convkit/backend/device_communicator.h).
  // No cpu fallback: cpu tensors travel over MPI (the dist layer's MPI group).
  // Whether this backend makes communicators, and with what; the defaults
  // below say no.
  virtual CommunicatorSupport communicator_support() const;
  // A fresh id, made on rank 0 and sent to the others; Error when unsupported.
  virtual CommunicatorId make_communicator_id();
  // This rank's communicator among `size` ranks that share `id`, on `device`
  // (one of this backend's). Returns once every rank has joined; Error when
  // they have not within timeout_seconds, or the library refuses.
  virtual std::unique_ptr<DeviceCommunicator> make_communicator(const CommunicatorId& id, int rank, int size,
                                                                Device device, double timeout_seconds);

 private:
  friend class CpuFallback;
  // Set on the first fallback of each op: its warning is printed once.
  mutable std::array<std::atomic<bool>, kBackendOpCount> fallback_warned_{};
};

// The backend that owns `device`'s memory. Throws Error naming the device and
// the reason when that backend is not usable (no plugin, no driver, no GPU).
Backend& backend_for(Device device);

// Backends register themselves: cpu and sim from a BackendRegistrar in their
// own source file, cuda from the same when the core loads its plugin
// (libconvkit_cuda.so, see docs/architecture.md). The factory runs once, on
// first use, and its backend lives until the process exits.
using BackendFactory = Backend* (*)();
void register_backend(DeviceType type, BackendFactory factory);
struct BackendRegistrar {
  BackendRegistrar(DeviceType type, BackendFactory factory) { register_backend(type, factory); }
};

// Every device of every backend, usable or not, in the order cpu, sim, cuda:N;
// a backend that is absent has one entry saying why. Drives `convkit devices`
// and the device-parameterised test suites.
std::vector<BackendInfo> list_backends();

}  // namespace convkit
