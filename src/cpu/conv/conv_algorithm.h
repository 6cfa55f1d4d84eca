#pragma once
// The CPU convolution algorithms at the raw-buffer level. The tensor op
// conv2d (and its autograd) sits on top: it picks an algorithm, asks it for
// workspace, allocates that, and calls one of the three passes.
//
// Buffers are contiguous and laid out as in Conv2dDesc: x N*C*H*W,
// w K*(C/groups)*R*S, b K, y/dy N*K*P*Q. Every algorithm runs float32 and
// float64; other dtypes throw. Every entry point validates the descriptor and
// checks supports() itself, so a caller gets a clear Error rather than a crash.
#include <cstddef>
#include <vector>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"

namespace convkit::cpu {

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

// The implementation of `algo`; throws Error for automatic (pick one with
// choose_conv_algorithm_heuristic first).
const ConvAlgorithm& conv_algorithm(ConvAlgo algo);
// Every algorithm: direct, im2col_gemm, fft, winograd.
std::vector<const ConvAlgorithm*> conv_algorithms();

}  // namespace convkit::cpu
