#pragma once
// threadIdx, blockIdx, blockDim, gridDim and warpSize for the sim backend.
//
// They are real global variables, thread_local because each OS thread runs its
// own block. The scheduler writes threadIdx every time it switches to another
// CUDA thread (fiber), so at any moment it names the CUDA thread that is running
// on this OS thread. Being plain variables, they can be used in debugger
// conditions: `break my_kernel if threadIdx.x == 3 && blockIdx.x == 1`.
//
// They are global (not namespaced) on purpose: kernels name them unqualified, and
// gdb finds a global by its plain name. No symbol clash with CUDA is possible,
// since nvcc's threadIdx is a device built-in with no host symbol.
#include "convkit/sim/vector_types.h"

inline thread_local convkit::sim::uint3 threadIdx{0, 0, 0};
inline thread_local convkit::sim::uint3 blockIdx{0, 0, 0};
inline thread_local convkit::sim::dim3 blockDim{1, 1, 1};
inline thread_local convkit::sim::dim3 gridDim{1, 1, 1};

inline constexpr int warpSize = 32;
