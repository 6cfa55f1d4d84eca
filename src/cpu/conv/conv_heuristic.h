#pragma once
// Which CPU convolution algorithm `automatic` means for a descriptor.
#include "convkit/backend/conv_desc.h"
#include "convkit/core/dtype.h"

namespace convkit::cpu {

// Never returns automatic, and always returns an algorithm that
// supports `desc` and fits its workspace_limit for `dtype` (falling back to
// direct, which needs no workspace). The rules and the measurements behind
// them are in conv_heuristic.cpp.
ConvAlgo choose_conv_algorithm_heuristic(const Conv2dDesc& desc, DType dtype = DType::float32);

}  // namespace convkit::cpu
