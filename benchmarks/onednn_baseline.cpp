#include "onednn_baseline.h"

#include "convkit/core/error.h"

#ifdef CONVKIT_BENCH_ONEDNN
#include <dnnl.hpp>

#include <unordered_map>
#endif

namespace convkit::bench {

std::string OnednnConv::unsupported_reason(const Conv2dDesc&) { return ""; }

#ifdef CONVKIT_BENCH_ONEDNN

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Conv2dDesc's tensors as plain oneDNN memory descriptors. Grouped weights
// are [G, K/G, C/G, R, S], which is convkit's [K, C/G, R, S] in memory.
struct Mds {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  explicit Mds(const Conv2dDesc& d)
      : src({d.N, d.C, d.H, d.W}, dt::f32, tag::nchw),
        weights(d.groups == 1 ? memory::desc({d.K, d.C_per_group(), d.R, d.S}, dt::f32, tag::oihw)
                              : memory::desc({d.groups, d.K_per_group(), d.C_per_group(), d.R, d.S}, dt::f32,
                                             tag::goihw)),
        bias({d.K}, dt::f32, tag::x),
        dst({d.N, d.K, d.P(), d.Q()}, dt::f32, tag::nchw),
        strides{d.stride_h, d.stride_w},
        dilates{d.dilation_h - 1, d.dilation_w - 1},  // oneDNN counts the gaps
        pad_l{d.pad_top, d.pad_left},
        pad_r{d.pad_bottom, d.pad_right} {}
};

}  // namespace

struct OnednnConv::State {
  Mds md;
  ConvPass pass;
  dnnl::primitive primitive;
  memory::desc scratchpad;
  explicit State(const Conv2dDesc& d, ConvPass p) : md(d), pass(p) {}
};

bool OnednnConv::available() { return true; }

OnednnConv::OnednnConv(const Conv2dDesc& d, ConvPass pass) : state_(std::make_unique<State>(d, pass)) {
  try {
    const Mds& m = state_->md;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto algorithm = dnnl::algorithm::convolution_direct;
    // The backward primitives need the forward one as a hint.
    const dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, m.src, m.weights, m.bias,
                                        m.dst, m.strides, m.dilates, m.pad_l, m.pad_r),
        attr, engine());
    switch (pass) {
      case ConvPass::forward:
        state_->primitive = dnnl::convolution_forward(fwd);
        state_->scratchpad = fwd.scratchpad_desc();
        algo_name_ = fwd.impl_info_str();
        break;
      case ConvPass::backward_data: {
        const dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(algorithm, m.src, m.weights, m.dst, m.strides, m.dilates,
                                                  m.pad_l, m.pad_r),
            attr, engine(), fwd);
        state_->primitive = dnnl::convolution_backward_data(pd);
        state_->scratchpad = pd.scratchpad_desc();
        algo_name_ = pd.impl_info_str();
        break;
      }
      case ConvPass::backward_weights: {
        const dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(algorithm, m.src, m.weights, m.bias, m.dst, m.strides,
                                                     m.dilates, m.pad_l, m.pad_r),
            attr, engine(), fwd);
        state_->primitive = dnnl::convolution_backward_weights(pd);
        state_->scratchpad = pd.scratchpad_desc();
        algo_name_ = pd.impl_info_str();
        break;
      }
    }
    workspace_bytes_ = state_->scratchpad.get_size();
  } catch (const dnnl::error& e) {
    CK_FAIL("oneDNN baseline: no primitive for ", d.str(), ": ", e.what());
  }
}

OnednnConv::~OnednnConv() = default;

void OnednnConv::run(const void* a, const void* b, const void* bias, void* out, void* bias_out,
                     void* workspace) const {
  const Mds& m = state_->md;
  auto mem = [](const memory::desc& md, const void* p) { return memory(md, engine(), const_cast<void*>(p)); };
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, mem(state_->scratchpad, workspace)}};
  switch (state_->pass) {
    case ConvPass::forward:
      args.insert({{DNNL_ARG_SRC, mem(m.src, a)}, {DNNL_ARG_WEIGHTS, mem(m.weights, b)}, {DNNL_ARG_DST, mem(m.dst, out)}});
      if (bias != nullptr) args.insert({DNNL_ARG_BIAS, mem(m.bias, bias)});
      break;
    case ConvPass::backward_data:
      args.insert({{DNNL_ARG_DIFF_DST, mem(m.dst, a)}, {DNNL_ARG_WEIGHTS, mem(m.weights, b)},
                   {DNNL_ARG_DIFF_SRC, mem(m.src, out)}});
      break;
    case ConvPass::backward_weights:
      args.insert({{DNNL_ARG_SRC, mem(m.src, a)}, {DNNL_ARG_DIFF_DST, mem(m.dst, b)},
                   {DNNL_ARG_DIFF_WEIGHTS, mem(m.weights, out)}});
      if (bias_out != nullptr) args.insert({DNNL_ARG_DIFF_BIAS, mem(m.bias, bias_out)});
      break;
  }
  dnnl::stream s(engine());
  state_->primitive.execute(s, args);
  s.wait();
}

#else  // no oneDNN in this build

struct OnednnConv::State {};
bool OnednnConv::available() { return false; }
OnednnConv::OnednnConv(const Conv2dDesc&, ConvPass) {
  CK_FAIL("oneDNN baseline: this build has no oneDNN (install libdnnl-dev and reconfigure)");
}
OnednnConv::~OnednnConv() = default;
void OnednnConv::run(const void*, const void*, const void*, void*, void*, void*) const {}

#endif

}  // namespace convkit::bench
