#pragma once
// Backend::conv2d_* in terms of one backend's registry: the same adapter from
// tensors to the raw-pointer passes for cpu, sim and cuda. The tensors are
// those Backend's contract describes (contiguous, on the backend's device);
// b and db may be undefined, workspace too when no bytes are needed.
#include "conv/conv_algorithm.h"
#include "convkit/core/tensor.h"

namespace convkit::conv {

// No for automatic and for an algorithm this backend does not implement (with
// the reason), else the algorithm's own answer.
Support dispatch_supports(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc);
std::size_t dispatch_workspace_bytes(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc,
                                     DType dtype, ConvPass pass);
// Each pass throws Error when `workspace` holds fewer bytes than the pass needs.
void dispatch_forward(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                      const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& workspace);
void dispatch_backward_data(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc,
                            const Tensor& dy, const Tensor& w, const Tensor& dx, const Tensor& workspace);
void dispatch_backward_weights(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc,
                               const Tensor& x, const Tensor& dy, const Tensor& dw, const Tensor& db,
                               const Tensor& workspace);

}  // namespace convkit::conv
