#pragma once
// The one convolution-algorithm interface, for every backend: a descriptor
// goes in, supports() says whether (and why not) with no exception,
// workspace_bytes() says how much scratch, and the three passes run on raw
// pointers: host memory on cpu, device memory on sim and cuda. The tensor
// layer (Backend::conv2d_*) sits on top and adapts tensors to pointers
// (conv_dispatch.h).
//
// Buffers are contiguous and laid out as in Conv2dDesc: x N*C*H*W,
// w K*(C/groups)*R*S, b K, y/dy N*K*P*Q. Every algorithm runs float32 and
// float64; other dtypes throw. Every entry point validates the descriptor and
// checks supports() itself, so a caller gets a clear Error rather than a crash.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"

namespace convkit::conv {

class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  virtual ConvAlgo algo() const = 0;
  // Whether this algorithm can run `desc` at all (any dtype, any pass), and why not.
  // An invalid descriptor is reported as unsupported with validate()'s message.
  virtual Support supports(const Conv2dDesc& desc) const = 0;
  // Exact bytes of scratch `pass` needs (0: workspace may be nullptr). Throws
  // Error when even a one-image chunk would exceed desc.workspace_limit.
  virtual std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype, ConvPass pass) const = 0;
  // Enough for every pass: the maximum of the three.
  std::size_t workspace_bytes(const Conv2dDesc& desc, DType dtype) const;
  // The kernel family this algorithm runs `desc` with in `dtype` at the
  // current float32 precision, and its versions worth timing there: what
  // benchmark mode (convkit/ops/conv_algo.h) times beside the algorithm.
  // None on cpu, whose algorithms have no numbered versions.
  virtual KernelChoices kernel_choices(const Conv2dDesc& desc, DType dtype) const {
    (void)desc;
    (void)dtype;
    return {};
  }

  // y = conv(x, w) + b. b may be nullptr (no bias).
  virtual void forward(const Conv2dDesc& desc, DType dtype, const void* x, const void* w,
                       const void* b, void* y, void* workspace) const = 0;
  // dx = conv_transpose(dy, w): the gradient of <y, dy> with respect to x. Overwritten.
  virtual void backward_data(const Conv2dDesc& desc, DType dtype, const void* dy, const void* w,
                             void* dx, void* workspace) const = 0;
  // dw (and db when not nullptr): gradients of <y, dy> with respect to w and b. Overwritten.
  virtual void backward_weights(const Conv2dDesc& desc, DType dtype, const void* x, const void* dy,
                                void* dw, void* db, void* workspace) const = 0;
};

// "conv2d forward (cpu, im2col_gemm)": the op name every backend's errors start with.
std::string conv_op_name(std::string_view backend, ConvAlgo algo, ConvPass pass);

// One backend's implementations, keyed by ConvAlgo. Each implementation file
// adds its own with a ConvAlgorithmRegistrar, so adding an algorithm edits no
// list here or in the backend.
class ConvAlgorithmRegistry {
 public:
  // `backend` names the registry in errors ("cpu", "gpu").
  explicit ConvAlgorithmRegistry(const char* backend) : backend_(backend) {}
  const char* backend() const { return backend_; }
  // Throws Error when `algo` is already registered (two files claim it).
  void add(const ConvAlgorithm& algorithm);
  // nullptr when this backend has no implementation of `algo` (or it is automatic).
  const ConvAlgorithm* find(ConvAlgo algo) const;
  // The implementation of `algo`; throws Error naming the backend otherwise.
  const ConvAlgorithm& get(ConvAlgo algo) const;
  // Every registered algorithm, in table order.
  std::vector<const ConvAlgorithm*> all() const;
  // Whether `algo` is here, supports `desc` and fits every pass of it in
  // desc.workspace_limit: what a heuristic may pick.
  bool runs(ConvAlgo algo, const Conv2dDesc& desc, DType dtype) const;

 private:
  const char* backend_;
  std::vector<const ConvAlgorithm*> algorithms_;
};

struct ConvAlgorithmRegistrar {
  ConvAlgorithmRegistrar(ConvAlgorithmRegistry& registry, const ConvAlgorithm& algorithm) {
    registry.add(algorithm);
  }
};

}  // namespace convkit::conv
