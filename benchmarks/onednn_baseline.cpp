#include "onednn_baseline.h"

#include "convkit/core/error.h"

#ifdef CONVKIT_BENCH_ONEDNN
#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_map>
#include <vector>
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

// Conv2dDesc's tensors as oneDNN memory descriptors: plain, or `any` for the
// primitive to choose. Grouped weights are [G, K/G, C/G, R, S], which is
// convkit's [K, C/G, R, S] in memory. The bias stays plain either way (a
// vector has no other layout).
struct Mds {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  Mds(const Conv2dDesc& d, bool any)
      : src({d.N, d.C, d.H, d.W}, dt::f32, any ? tag::any : tag::nchw),
        weights(d.groups == 1 ? memory::desc({d.K, d.C_per_group(), d.R, d.S}, dt::f32, any ? tag::any : tag::oihw)
                              : memory::desc({d.groups, d.K_per_group(), d.C_per_group(), d.R, d.S}, dt::f32,
                                             any ? tag::any : tag::goihw)),
        bias({d.K}, dt::f32, tag::x),
        dst({d.N, d.K, d.P(), d.Q()}, dt::f32, any ? tag::any : tag::nchw),
        strides{d.stride_h, d.stride_w},
        dilates{d.dilation_h - 1, d.dilation_w - 1},  // oneDNN counts the gaps
        pad_l{d.pad_top, d.pad_left},
        pad_r{d.pad_bottom, d.pad_right} {}
};

// A layout in oneDNN's own notation: the dimensions outermost first (a, b, ...
// in the tensor's logical order, upper case when split into blocks), then the
// inner blocks, so nchw is abcd and nChw8c is aBcd8b.
std::string notation(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return "opaque";
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  std::vector<int> order(static_cast<std::size_t>(d.ndims));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&b](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string s;
  for (int dim : order) {
    const bool blocked = std::find(b.inner_idxs, b.inner_idxs + b.inner_nblks, dim) != b.inner_idxs + b.inner_nblks;
    s += static_cast<char>((blocked ? 'A' : 'a') + dim);
  }
  for (int i = 0; i < b.inner_nblks; ++i) s += std::to_string(b.inner_blks[i]) + static_cast<char>('a' + b.inner_idxs[i]);
  return s;
}

// One tensor the pass reads (a, b) or writes (out): its argument, its plain
// descriptor and the one the primitive works in.
struct Role {
  int arg = 0;
  const char* name = "";
  memory::desc user, primitive;
};

}  // namespace

struct OnednnConv::State {
  Mds plain, chosen;
  ConvPass pass;
  OnednnLayout layout;
  dnnl::primitive primitive;
  memory::desc scratchpad;
  Role a, b, out;
  // Blocked: the staged copy of each user tensor, by its address.
  std::unordered_map<const void*, memory> staged;
  State(const Conv2dDesc& d, ConvPass p, OnednnLayout l)
      : plain(d, false), chosen(d, l == OnednnLayout::blocked), pass(p), layout(l) {}

  memory staged_copy(const void* user) const {
    const auto it = staged.find(user);
    CK_CHECK(it != staged.end(), "oneDNN baseline: blocked run on a tensor that was not staged");
    return it->second;
  }
};

bool OnednnConv::available() { return true; }

OnednnConv::OnednnConv(const Conv2dDesc& d, ConvPass pass, OnednnLayout layout)
    : state_(std::make_unique<State>(d, pass, layout)) {
  try {
    State& st = *state_;
    const Mds& m = st.chosen;
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
        st.primitive = dnnl::convolution_forward(fwd);
        st.scratchpad = fwd.scratchpad_desc();
        algo_name_ = fwd.impl_info_str();
        st.a = {DNNL_ARG_SRC, "src", st.plain.src, fwd.src_desc()};
        st.b = {DNNL_ARG_WEIGHTS, "weights", st.plain.weights, fwd.weights_desc()};
        st.out = {DNNL_ARG_DST, "dst", st.plain.dst, fwd.dst_desc()};
        break;
      case ConvPass::backward_data: {
        const dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(algorithm, m.src, m.weights, m.dst, m.strides, m.dilates,
                                                  m.pad_l, m.pad_r),
            attr, engine(), fwd);
        st.primitive = dnnl::convolution_backward_data(pd);
        st.scratchpad = pd.scratchpad_desc();
        algo_name_ = pd.impl_info_str();
        st.a = {DNNL_ARG_DIFF_DST, "diff_dst", st.plain.dst, pd.diff_dst_desc()};
        st.b = {DNNL_ARG_WEIGHTS, "weights", st.plain.weights, pd.weights_desc()};
        st.out = {DNNL_ARG_DIFF_SRC, "diff_src", st.plain.src, pd.diff_src_desc()};
        break;
      }
      case ConvPass::backward_weights: {
        const dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(algorithm, m.src, m.weights, m.bias, m.dst, m.strides,
                                                     m.dilates, m.pad_l, m.pad_r),
            attr, engine(), fwd);
        st.primitive = dnnl::convolution_backward_weights(pd);
        st.scratchpad = pd.scratchpad_desc();
        algo_name_ = pd.impl_info_str();
        st.a = {DNNL_ARG_SRC, "src", st.plain.src, pd.src_desc()};
        st.b = {DNNL_ARG_DIFF_DST, "diff_dst", st.plain.dst, pd.diff_dst_desc()};
        st.out = {DNNL_ARG_DIFF_WEIGHTS, "diff_weights", st.plain.weights, pd.diff_weights_desc()};
        break;
      }
    }
    workspace_bytes_ = st.scratchpad.get_size();
    for (const Role* r : {&st.a, &st.b, &st.out}) {
      if (!layouts_.empty()) layouts_ += ',';
      layouts_.append(r->name).append(":").append(notation(r->primitive));
    }
  } catch (const dnnl::error& e) {
    CK_FAIL("oneDNN baseline: no primitive for ", d.str(), ": ", e.what());
  }
}

OnednnConv::~OnednnConv() = default;

void OnednnConv::stage(const void* a, const void* b, void* out) const {
  State& st = *state_;
  if (st.layout == OnednnLayout::plain) return;
  dnnl::stream s(engine());
  for (const auto& [role, user] : {std::pair{&st.a, a}, std::pair{&st.b, b}}) {
    memory from(role->user, engine(), const_cast<void*>(user));
    memory to(role->primitive, engine());
    dnnl::reorder(from, to).execute(s, from, to);
    st.staged.insert_or_assign(user, to);
  }
  memory result(st.out.primitive, engine());
  // Written once here so that no timed pass pays for first-touch page faults.
  std::memset(result.get_data_handle(), 0, st.out.primitive.get_size());
  st.staged.insert_or_assign(out, result);
  s.wait();
}

void OnednnConv::export_output(void* out) const {
  const State& st = *state_;
  if (st.layout == OnednnLayout::plain) return;
  memory from = st.staged_copy(out);
  memory to(st.out.user, engine(), out);
  dnnl::stream s(engine());
  dnnl::reorder(from, to).execute(s, from, to);
  s.wait();
}

void OnednnConv::run(const void* a, const void* b, const void* bias, void* out, void* bias_out,
                     void* workspace) const {
  const State& st = *state_;
  const bool blocked = st.layout == OnednnLayout::blocked;
  auto tensor = [&st, blocked](const Role& role, const void* p) {
    return blocked ? st.staged_copy(p) : memory(role.user, engine(), const_cast<void*>(p));
  };
  auto plain = [](const memory::desc& md, const void* p) { return memory(md, engine(), const_cast<void*>(p)); };
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, plain(st.scratchpad, workspace)},
                                       {st.a.arg, tensor(st.a, a)},
                                       {st.b.arg, tensor(st.b, b)},
                                       {st.out.arg, tensor(st.out, out)}};
  if (st.pass == ConvPass::forward && bias != nullptr) args.insert({DNNL_ARG_BIAS, plain(st.plain.bias, bias)});
  if (st.pass == ConvPass::backward_weights && bias_out != nullptr)
    args.insert({DNNL_ARG_DIFF_BIAS, plain(st.plain.bias, bias_out)});
  dnnl::stream s(engine());
  st.primitive.execute(s, args);
  s.wait();
}

#else  // no oneDNN in this build

struct OnednnConv::State {};
bool OnednnConv::available() { return false; }
OnednnConv::OnednnConv(const Conv2dDesc&, ConvPass, OnednnLayout) {
  CK_FAIL("oneDNN baseline: this build has no oneDNN (install libdnnl-dev and reconfigure)");
}
OnednnConv::~OnednnConv() = default;
void OnednnConv::run(const void*, const void*, const void*, void*, void*, void*) const {}
void OnednnConv::stage(const void*, const void*, void*) const {}
void OnednnConv::export_output(void*) const {}

#endif

}  // namespace convkit::bench
