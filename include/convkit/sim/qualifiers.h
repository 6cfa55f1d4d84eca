#pragma once
// CUDA's declaration keywords, spelled for g++ (sim backend only).
//
// On the CPU there is one address space and one compiler pass, so the
// execution-space qualifiers mean nothing and expand to nothing. The others map
// onto the GNU attribute that does the same job.

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __launch_bounds__(...)
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
// __restrict__ needs no macro: g++ already accepts it as a spelling of restrict.

// `__shared__ float tile[16][16];` inside a kernel becomes a block-scope
// thread_local, which is implicitly static: one copy per OS thread. A block runs
// start to finish on one OS thread and that thread runs its blocks one after
// another, so each running block has its own copy, shared by its CUDA threads
// (fibers) — exactly CUDA's scope. Unlike CUDA, the contents survive from one
// block to the next on the same OS thread; a kernel that reads shared memory
// before writing it sees the previous block's values, never zeros it can trust.
//
// `extern __shared__ T a[];` (dynamic shared memory) cannot be expressed this
// way; use CK_DYNAMIC_SHARED(T, a) from cuda_compat.h instead.
#define __shared__ thread_local
