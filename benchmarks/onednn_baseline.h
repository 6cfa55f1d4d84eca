#pragma once
// oneDNN as a CPU baseline for bench_conv, in two layouts:
//   - plain: the primitive oneDNN picks for NCHW / OIHW tensors, the layouts
//     convkit's API takes, so no reorder is needed or timed;
//   - blocked: its fast path. Every tensor is format_tag::any and the
//     primitive chooses (on AVX2 nChw8c activations with 8x8-blocked weights,
//     on AVX-512 nChw16c). stage() reorders the inputs into those layouts
//     once, outside the timed region, run() works on the staged copies only,
//     and export_output() reorders a result back to NCHW / OIHW for the
//     check. A framework working in NCHW would pay these reorders on every
//     call; one that keeps its activations blocked (PyTorch's mkldnn tensors)
//     pays them once per network.
// The scratchpad is given by the caller as workspace. Built only when
// dnnl.hpp and libdnnl are found (CONVKIT_BENCH_ONEDNN: Debian's
// libdnnl-dev); available() says so.
#include <cstddef>
#include <memory>
#include <string>

#include "convkit/backend/conv_desc.h"

namespace convkit::bench {

enum class OnednnLayout { plain, blocked };

class OnednnConv {
 public:
  static bool available();
  // Why oneDNN cannot run `desc`, or "" when it can.
  static std::string unsupported_reason(const Conv2dDesc& desc);

  // Creates the primitive; throws Error when oneDNN has none for `desc`.
  OnednnConv(const Conv2dDesc& desc, ConvPass pass, OnednnLayout layout = OnednnLayout::plain);
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;

  // oneDNN's name for the implementation it chose, e.g. "gemm:jit" or "jit:avx512_core".
  const std::string& algo_name() const { return algo_name_; }
  // The layouts the primitive works in, in oneDNN's notation (dimensions
  // a, b, c, d outermost first, upper case when blocked, then the blocks:
  // aBcd8b is nChw8c), e.g. "src:aBcd8b,weights:ABcd8b8a,dst:aBcd8b".
  const std::string& layouts() const { return layouts_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // Host pointers, with the same roles as CudnnConv::run. Blocked: a, b and
  // out stand for their staged copies, which stage() must have made.
  void run(const void* a, const void* b, const void* bias, void* out, void* bias_out, void* workspace) const;

  // Blocked only (no-ops for plain): copies the inputs a and b into the
  // primitive's layouts and makes a blocked buffer for out; then writes a
  // staged result back into out in the plain layout.
  void stage(const void* a, const void* b, void* out) const;
  void export_output(void* out) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string algo_name_, layouts_;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace convkit::bench
