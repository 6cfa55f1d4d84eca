#pragma once
// Where run_grid leaves each profiled launch's counters (profile.cpp keeps
// them per kernel until take_profile()).
#include "convkit/sim/profile.h"

namespace convkit::sim::detail {

void add_launch_profile(const void* kernel, const KernelProfile& launch);

// "gemm_v1<float, false, false>" for "void convkit::gpu_sim::(anonymous
// namespace)::gemm_v1<float, false, false>(convkit::gpu_sim::...)".
std::string short_kernel_name(const std::string& demangled);

}  // namespace convkit::sim::detail
