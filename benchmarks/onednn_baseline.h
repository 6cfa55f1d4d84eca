#pragma once
// oneDNN as a CPU baseline for bench_conv: the same convolution pass, run by
// the primitive oneDNN picks for plain NCHW / OIHW tensors (the layouts
// convkit's API takes, so no reorder is needed or timed), with its scratchpad
// given by the caller as workspace. Built only when dnnl.hpp and libdnnl are
// found (CONVKIT_BENCH_ONEDNN: Debian's libdnnl-dev); available() says so.
// oneDNN's blocked layouts can be faster still, but a framework on NCHW pays
// their reorders on every call.
#include <cstddef>
#include <memory>
#include <string>

#include "convkit/backend/conv_desc.h"

namespace convkit::bench {

class OnednnConv {
 public:
  static bool available();
  // Why oneDNN cannot run `desc`, or "" when it can.
  static std::string unsupported_reason(const Conv2dDesc& desc);

  // Creates the primitive; throws Error when oneDNN has none for `desc`.
  OnednnConv(const Conv2dDesc& desc, ConvPass pass);
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;

  // oneDNN's name for the implementation it chose, e.g. "gemm:jit" or "jit:avx512_core".
  const std::string& algo_name() const { return algo_name_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // Host pointers, with the same roles as CudnnConv::run.
  void run(const void* a, const void* b, const void* bias, void* out, void* bias_out, void* workspace) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string algo_name_;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace convkit::bench
