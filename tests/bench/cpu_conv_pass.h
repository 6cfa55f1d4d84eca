#pragma once
// One pass of a convolution on the cpu backend, on uniform random operands,
// returned as the float32 host copies that bench::check_conv_pass reads.
#include "conv_check.h"
#include "convkit/backend/conv_desc.h"

namespace convkit::bench::testing {

PassData run_cpu_pass(const Conv2dDesc& d, ConvAlgo algo, ConvPass pass);

}  // namespace convkit::bench::testing
