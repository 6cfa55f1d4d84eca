#include "cudnn_baseline.h"

#include "convkit/backend/precision.h"
#include "convkit/core/error.h"

#ifdef CONVKIT_BENCH_CUDNN
#include <cudnn.h>

#include <vector>
#endif

namespace convkit::bench {

std::string CudnnConv::unsupported_reason(const Conv2dDesc& d) {
  if (d.pad_top != d.pad_bottom || d.pad_left != d.pad_right)
    return "cuDNN pads both sides of a dimension alike; this layer's padding is " + std::to_string(d.pad_top) + "," +
           std::to_string(d.pad_bottom) + "," + std::to_string(d.pad_left) + "," + std::to_string(d.pad_right);
  return "";
}

#ifdef CONVKIT_BENCH_CUDNN

namespace {

void check(cudnnStatus_t status, const char* what) {
  CK_CHECK(status == CUDNN_STATUS_SUCCESS, "cuDNN baseline: ", what, ": ", cudnnGetErrorString(status));
}

cudnnHandle_t handle() {
  // One handle for the process, on the default stream that convkit's kernels use.
  static cudnnHandle_t h = [] {
    cudnnHandle_t created = nullptr;
    check(cudnnCreate(&created), "cudnnCreate");
    return created;
  }();
  return h;
}

const char* fwd_name(cudnnConvolutionFwdAlgo_t a) {
  static const char* names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
                                "fft", "fft_tiling", "winograd", "winograd_nonfused"};
  return a >= 0 && a < 8 ? names[a] : "?";
}
const char* bwd_data_name(cudnnConvolutionBwdDataAlgo_t a) {
  static const char* names[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
  return a >= 0 && a < 6 ? names[a] : "?";
}
const char* bwd_filter_name(cudnnConvolutionBwdFilterAlgo_t a) {
  static const char* names[] = {"algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};
  return a >= 0 && a < 7 ? names[a] : "?";
}

// The fastest successful result within the workspace limit, from a cudnnFind* list sorted by time.
template <typename Perf>
const Perf* fastest(const std::vector<Perf>& perf, int returned, std::size_t limit) {
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) return &perf[i];
  return nullptr;
}

}  // namespace

struct CudnnConv::State {
  ConvPass pass = ConvPass::forward;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
};

bool CudnnConv::available() { return true; }

CudnnConv::CudnnConv(const Conv2dDesc& d, ConvPass pass) : state_(std::make_unique<State>()) {
  const std::string why = unsupported_reason(d);
  CK_CHECK(why.empty(), "cuDNN baseline: ", why);
  State& s = *state_;
  s.pass = pass;
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  check(cudnnCreateTensorDescriptor(&s.x), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&s.y), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&s.bias), "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&s.w), "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&s.conv), "cudnnCreateConvolutionDescriptor");
  check(cudnnSetTensor4dDescriptor(s.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(d.N), i(d.C), i(d.H), i(d.W)), "x");
  check(cudnnSetTensor4dDescriptor(s.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(d.N), i(d.K), i(d.P()), i(d.Q())), "y");
  check(cudnnSetTensor4dDescriptor(s.bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i(d.K), 1, 1), "bias");
  check(cudnnSetFilter4dDescriptor(s.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(d.K), i(d.C_per_group()), i(d.R),
                                   i(d.S)),
        "w");
  check(cudnnSetConvolution2dDescriptor(s.conv, i(d.pad_top), i(d.pad_left), i(d.stride_h), i(d.stride_w),
                                        i(d.dilation_h), i(d.dilation_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "convolution");
  check(cudnnSetConvolutionGroupCount(s.conv, i(d.groups)), "groups");
  // Strict float32 unless allow_tf32 is on, as PyTorch's
  // torch.backends.cudnn.allow_tf32 chooses: CUDNN_FMA_MATH forbids the
  // tensor cores, CUDNN_DEFAULT_MATH lets cuDNN run float32 on them in tf32.
  check(cudnnSetConvolutionMathType(s.conv, allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), "math type");

  constexpr int kMaxAlgos = 8;
  int returned = 0;
  switch (pass) {
    case ConvPass::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(kMaxAlgos);
      check(cudnnFindConvolutionForwardAlgorithm(handle(), s.x, s.w, s.conv, s.y, kMaxAlgos, &returned, perf.data()),
            "cudnnFindConvolutionForwardAlgorithm");
      const auto* best = fastest(perf, returned, d.workspace_limit);
      CK_CHECK(best, "cuDNN baseline: no forward algorithm runs within the workspace limit");
      s.fwd = best->algo;
      check(cudnnSetConvolutionMathType(s.conv, best->mathType), "the chosen algorithm's math type");
      algo_name_ = fwd_name(best->algo);
      workspace_bytes_ = best->memory;
      break;
    }
    case ConvPass::backward_data: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(kMaxAlgos);
      check(cudnnFindConvolutionBackwardDataAlgorithm(handle(), s.w, s.y, s.conv, s.x, kMaxAlgos, &returned,
                                                      perf.data()),
            "cudnnFindConvolutionBackwardDataAlgorithm");
      const auto* best = fastest(perf, returned, d.workspace_limit);
      CK_CHECK(best, "cuDNN baseline: no backward-data algorithm runs within the workspace limit");
      s.bwd_data = best->algo;
      check(cudnnSetConvolutionMathType(s.conv, best->mathType), "the chosen algorithm's math type");
      algo_name_ = bwd_data_name(best->algo);
      workspace_bytes_ = best->memory;
      break;
    }
    case ConvPass::backward_weights: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(kMaxAlgos);
      check(cudnnFindConvolutionBackwardFilterAlgorithm(handle(), s.x, s.y, s.conv, s.w, kMaxAlgos, &returned,
                                                        perf.data()),
            "cudnnFindConvolutionBackwardFilterAlgorithm");
      const auto* best = fastest(perf, returned, d.workspace_limit);
      CK_CHECK(best, "cuDNN baseline: no backward-weights algorithm runs within the workspace limit");
      s.bwd_filter = best->algo;
      check(cudnnSetConvolutionMathType(s.conv, best->mathType), "the chosen algorithm's math type");
      algo_name_ = bwd_filter_name(best->algo);
      workspace_bytes_ = best->memory;
      break;
    }
  }
}

CudnnConv::~CudnnConv() {
  if (!state_) return;
  cudnnDestroyTensorDescriptor(state_->x);
  cudnnDestroyTensorDescriptor(state_->y);
  cudnnDestroyTensorDescriptor(state_->bias);
  cudnnDestroyFilterDescriptor(state_->w);
  cudnnDestroyConvolutionDescriptor(state_->conv);
}

void CudnnConv::run(const void* a, const void* b, const void* bias, void* out, void* bias_out,
                    void* workspace) const {
  const State& s = *state_;
  const float one = 1, zero = 0;
  switch (s.pass) {
    case ConvPass::forward:
      check(cudnnConvolutionForward(handle(), &one, s.x, a, s.w, b, s.conv, s.fwd, workspace, workspace_bytes_, &zero,
                                    s.y, out),
            "cudnnConvolutionForward");
      if (bias) check(cudnnAddTensor(handle(), &one, s.bias, bias, &one, s.y, out), "cudnnAddTensor");
      break;
    case ConvPass::backward_data:
      check(cudnnConvolutionBackwardData(handle(), &one, s.w, b, s.y, a, s.conv, s.bwd_data, workspace,
                                         workspace_bytes_, &zero, s.x, out),
            "cudnnConvolutionBackwardData");
      break;
    case ConvPass::backward_weights:
      check(cudnnConvolutionBackwardFilter(handle(), &one, s.x, a, s.y, b, s.conv, s.bwd_filter, workspace,
                                           workspace_bytes_, &zero, s.w, out),
            "cudnnConvolutionBackwardFilter");
      if (bias_out)
        check(cudnnConvolutionBackwardBias(handle(), &one, s.y, b, &zero, s.bias, bias_out),
              "cudnnConvolutionBackwardBias");
      break;
  }
}

#else  // no cuDNN in this build

struct CudnnConv::State {};
bool CudnnConv::available() { return false; }
CudnnConv::CudnnConv(const Conv2dDesc&, ConvPass) {
  CK_FAIL("cuDNN baseline: this build has no cuDNN (it needs the cuda backend and cudnn.h)");
}
CudnnConv::~CudnnConv() = default;
void CudnnConv::run(const void*, const void*, const void*, void*, void*, void*) const {}

#endif

}  // namespace convkit::bench
