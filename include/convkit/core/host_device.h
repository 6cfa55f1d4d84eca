#pragma once
// CK_HOST_DEVICE marks a function that CUDA kernels call as well as host code.
// nvcc needs both execution spaces spelled out; g++ needs nothing, and the sim
// build of the kernels defines __host__ and __device__ away
// (convkit/sim/qualifiers.h), so there the macro is empty too.
#if defined(__CUDACC__)
#define CK_HOST_DEVICE __host__ __device__
#else
#define CK_HOST_DEVICE
#endif
