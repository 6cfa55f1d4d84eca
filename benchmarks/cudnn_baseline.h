#pragma once
// cuDNN as a baseline for bench_conv on a cuda device: the same convolution
// pass, run by the algorithm cudnnFind* measures fastest (among those within
// the descriptor's workspace limit), in plain float32 arithmetic
// (CUDNN_FMA_MATH: no TF32 tensor cores, so it computes what our kernels
// compute and passes the same float32 check). Built only when the cuda
// backend is and cudnn.h is found (CONVKIT_BENCH_CUDNN); available() says so.
#include <cstddef>
#include <memory>
#include <string>

#include "convkit/backend/conv_desc.h"

namespace convkit::bench {

class CudnnConv {
 public:
  static bool available();
  // Why cuDNN cannot run `desc` (asymmetric padding), or "" when it can.
  static std::string unsupported_reason(const Conv2dDesc& desc);

  // Picks the algorithm with cudnnFind*; throws Error when none runs.
  CudnnConv(const Conv2dDesc& desc, ConvPass pass);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  const std::string& algo_name() const { return algo_name_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

  // Device pointers in Conv2dDesc's layouts, as Backend::conv2d_*:
  // forward: a = x, b = w, bias (may be null), out = y;
  // backward data: a = dy, b = w, out = dx;
  // backward weights: a = x, b = dy, out = dw, bias_out = db (may be null).
  void run(const void* a, const void* b, const void* bias, void* out, void* bias_out, void* workspace) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string algo_name_;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace convkit::bench
