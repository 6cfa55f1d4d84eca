#pragma once
// convkit::launch for the sim backend: the g++ counterpart of
// `kernel<<<grid, block, shared_bytes, stream>>>(args...)`.
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "convkit/backend/kernel_launch.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/core/error.h"
#include "convkit/sim/runtime.h"
#include "convkit/sim/vector_types.h"

// Streams run synchronously under sim: a launch returns when the grid is done,
// so there is nothing for a stream to order. The type exists so that the same
// host code compiles for both backends; only a null stream is ever needed.
struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace convkit {

// Runs `kernel` over `grid` x `block` threads with `shared_bytes` of dynamic
// shared memory. As with <<<>>>, the arguments are converted to the kernel's
// parameter types once, and every CUDA thread receives its own copy of them.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), sim::dim3 grid, sim::dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "launch: the number of arguments does not match the kernel's parameters");
  (void)stream;

  struct Closure {
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...> arguments;
  };
  const Closure closure{kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)};

  sim::GridLaunch grid_launch;
  grid_launch.kernel = reinterpret_cast<const void*>(kernel);
  grid_launch.grid = grid;
  grid_launch.block = block;
  grid_launch.dynamic_shared_bytes = shared_bytes;
  grid_launch.closure = &closure;
  // Called once per CUDA thread: copies the converted arguments into the
  // kernel's by-value parameters, just as each GPU thread reads its own.
  grid_launch.body = [](const void* erased) {
    const Closure& c = *static_cast<const Closure*>(erased);
    std::apply(c.kernel, c.arguments);
  };
  try {
    sim::run_grid(grid_launch);
  } catch (const Error& e) {
    // Whatever stopped the grid (its configuration, a check, an exception in
    // a thread) is reported with the kernel's name and launch shape.
    const detail::KernelLaunch shape{reinterpret_cast<const void*>(kernel),
                                     {grid.x, grid.y, grid.z},
                                     {block.x, block.y, block.z},
                                     shared_bytes};
    throw Error(detail::describe_launch(shape) + ": " + e.what());
  }
}

// Lets `kernel` take up to `bytes` of dynamic shared memory per block, as
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) does: without it a launch
// with more than 48 KB is refused, on a GPU and here.
template <typename... Params>
void allow_dynamic_shared(void (*kernel)(Params...), std::size_t bytes) {
  sim::set_max_dynamic_shared_bytes(reinterpret_cast<const void*>(kernel), bytes);
}

// The most a kernel may opt in to: sim's limit is sm_90's.
inline std::size_t max_dynamic_shared_bytes() { return sim::kMaxDynamicSharedBytes; }

// sim emulates wgmma (convkit/sim/wgmma.h) whatever GPU it models, unless
// CONVKIT_DISABLE_WGMMA=1 turns it off (kernel_versions.h), as on a GPU.
inline bool device_runs_wgmma() { return !wgmma_disabled_by_environment(); }

}  // namespace convkit
