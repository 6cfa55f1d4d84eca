#pragma once
// What a failing kernel launch is called in errors: the kernel's name and
// its launch shape, as both launch() helpers (convkit/sim/launch.h for sim,
// convkit/sim/cuda_compat.h for nvcc) report them:
//   kernel convkit::gpu_sim::direct_forward_v2<float> (grid (1,1,70000),
//   block (128,1,1), 4608 B dynamic shared memory): sim launch: grid too large ...
// On cuda an error inside a kernel surfaces at a later call and is sticky
// (the context is lost), so the last launch of each thread is remembered
// for that call's error to name.
#include <cstddef>
#include <string>

namespace convkit::detail {

struct KernelLaunch {
  const void* kernel = nullptr;  // the __global__ function (its host stub under nvcc)
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  std::size_t shared_bytes = 0;
};

// The demangled symbol of `kernel` ("convkit::gpu_sim::gemm_tiled<float>"),
// or "kernel at 0x..." when the symbol table does not name it (a kernel in
// an executable linked without -rdynamic). Looked up only when asked.
std::string kernel_name(const void* kernel);
// "kernel NAME (grid (x,y,z), block (x,y,z), N B dynamic shared memory)".
std::string describe_launch(const KernelLaunch& launch);

// Remembers `launch` as this thread's latest; two dozen bytes copied.
void note_launch(const KernelLaunch& launch) noexcept;
// describe_launch of this thread's latest launch, or "" before any.
std::string last_launch();

}  // namespace convkit::detail
