// conv2d: argument checks, 'same' padding, algorithm selection, workspace,
// and the backward that runs the plan's two backward passes.
#include "convkit/ops/conv.h"
#include "core/op_scope.h"

#include "convkit/backend/kernel_versions.h"
#include "convkit/ops/conv_algo.h"
#include "convkit/ops/factory.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;
using autograd::SavedTensor;

namespace {

// Keras' 'same': out = ceil(in / stride); the odd pixel of padding goes last.
std::pair<std::int64_t, std::int64_t> same_padding(std::int64_t in, std::int64_t k, std::int64_t stride,
                                                   std::int64_t dilation) {
  const std::int64_t out = (in + stride - 1) / stride;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + (k - 1) * dilation + 1 - in, 0);
  return {total / 2, total - total / 2};
}

Tensor workspace_for(Backend& backend, ConvAlgo algo, const Conv2dDesc& d, DType dtype, ConvPass pass,
                     Device device) {
  const std::size_t bytes = backend.conv2d_workspace_bytes(algo, d, dtype, pass);
  if (bytes == 0) return Tensor();
  return Tensor::empty({static_cast<std::int64_t>((bytes + 3) / 4)}, TensorOptions().device(device));
}

// Runs `run(algo, workspace)` as the plan says for `pass`: its algorithm,
// its kernel version for the call (the workspace is sized under it too),
// unless the user pinned that family (set_kernel_version, CONVKIT_KERNEL_*):
// a pin outranks any plan, a cached one included.
template <class Run>
void run_pass(Backend& backend, const ConvPlan& plan, ConvPass pass, const Conv2dDesc& d, DType dtype,
              Device device, Run run) {
  const ConvPassChoice& c = plan.at(pass);
  const bool pinned = c.kernel_version != 0 && kernel_version_pinned(c.kernel_family);
  const ScopedKernelVersion version(c.kernel_family, pinned ? 0 : c.kernel_version);
  run(c.algo, workspace_for(backend, c.algo, d, dtype, pass, device));
}

}  // namespace

Conv2dDesc make_conv2d_desc(const Shape& x, const Shape& w, const Conv2dParams& p) {
  CK_CHECK(x.rank() == 4, "conv2d: input must be [N, C, H, W], got shape ", x);
  CK_CHECK(w.rank() == 4, "conv2d: weight must be [K, C/groups, R, S], got shape ", w);
  Conv2dDesc d;
  d.N = x[0]; d.C = x[1]; d.H = x[2]; d.W = x[3];
  d.K = w[0]; d.R = w[2]; d.S = w[3];
  d.stride_h = p.stride_[0]; d.stride_w = p.stride_[1];
  d.dilation_h = p.dilation_[0]; d.dilation_w = p.dilation_[1];
  d.groups = p.groups_;
  d.workspace_limit = p.workspace_limit_;
  CK_CHECK(p.groups_ > 0 && d.C == w[1] * p.groups_, "conv2d: input ", x, " has ", d.C,
           " channels but weight ", w, " with groups=", p.groups_, " expects ", w[1] * p.groups_);
  if (p.same_) {
    std::tie(d.pad_top, d.pad_bottom) = same_padding(d.H, d.R, d.stride_h, d.dilation_h);
    std::tie(d.pad_left, d.pad_right) = same_padding(d.W, d.S, d.stride_w, d.dilation_w);
  } else {
    d.pad_top = p.padding_[0]; d.pad_bottom = p.padding_[1];
    d.pad_left = p.padding_[2]; d.pad_right = p.padding_[3];
  }
  d.validate("conv2d");
  return d;
}

Tensor conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dParams& params) {
  const detail::OpScope op_scope("conv2d");
  detail::check_same("conv2d", x_in, w_in);
  detail::check_floating("conv2d", x_in);
  const Conv2dDesc d = make_conv2d_desc(x_in.shape(), w_in.shape(), params);
  if (b_in.defined()) {
    detail::check_same("conv2d", x_in, b_in);
    CK_CHECK(b_in.shape() == Shape{d.K}, "conv2d: bias must have shape [", d.K, "], got ", b_in.shape());
  }
  const Device device = x_in.device();
  const DType dtype = x_in.dtype();
  Backend& backend = detail::backend_of(x_in);
  const ConvPlan plan = select_conv_plan(params.algo_, d, dtype, device);
  for (const ConvAlgo algo : {plan.forward.algo, plan.backward_data.algo, plan.backward_weights.algo}) {
    const Support s = backend.conv2d_supports(algo, d);
    CK_CHECK(s.ok, "conv2d: algorithm ", conv_algo_name(algo), " cannot run ", d, " on ", device, ": ", s.reason);
  }

  const Tensor x = x_in.detach().contiguous(), w = w_in.detach().contiguous();
  const Tensor b = b_in.defined() ? b_in.detach().contiguous() : Tensor();
  Tensor y = detail::new_empty({d.N, d.K, d.P(), d.Q()}, x);
  run_pass(backend, plan, ConvPass::forward, d, dtype, device, [&](ConvAlgo algo, const Tensor& workspace) {
    backend.conv2d_forward(algo, d, x, w, b, y, workspace);
  });

  const bool need_x = x_in.requires_grad(), need_w = w_in.requires_grad();
  const bool need_b = b_in.defined() && b_in.requires_grad();
  std::vector<Tensor> inputs{x_in, w_in};
  if (b_in.defined()) inputs.push_back(b_in);
  return record(y, "Conv2dBackward", inputs,
                [sx = SavedTensor(x), sw = SavedTensor(w), d, plan, need_x, need_w, need_b,
                 has_b = b_in.defined()](const Tensor& g_in) {
                  const Tensor g = g_in.contiguous();
                  const Tensor& x = sx.get();
                  const Tensor& w = sw.get();
                  Backend& backend = detail::backend_of(g);
                  std::vector<Tensor> grads(has_b ? 3 : 2);
                  if (need_x) {
                    grads[0] = detail::new_empty(x.shape(), x);
                    run_pass(backend, plan, ConvPass::backward_data, d, g.dtype(), g.device(),
                             [&](ConvAlgo algo, const Tensor& workspace) {
                               backend.conv2d_backward_data(algo, d, g, w, grads[0], workspace);
                             });
                  }
                  if (need_w || need_b) {
                    grads[1] = detail::new_empty(w.shape(), w);
                    if (has_b) grads[2] = detail::new_empty({d.K}, w);
                    run_pass(backend, plan, ConvPass::backward_weights, d, g.dtype(), g.device(),
                             [&](ConvAlgo algo, const Tensor& workspace) {
                               backend.conv2d_backward_weights(algo, d, x, g, grads[1], has_b ? grads[2] : Tensor(),
                                                               workspace);
                             });
                    if (!need_w) grads[1] = Tensor();
                  }
                  return grads;
                });
}

}  // namespace convkit
