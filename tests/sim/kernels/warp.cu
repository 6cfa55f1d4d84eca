// Warp built-ins driven by per-thread tables, so that one kernel covers full and
// partial warps, every shuffle mode, any width and divergent groups (lanes of
// one warp calling with different masks, or different built-ins).
#include "convkit/sim/cuda_compat.h"
#include "kernels/test_kernels.h"

namespace sim_test_kernels {
namespace {

__device__ unsigned linear_thread_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

template <typename T>
__device__ T shuffle_one(const ShuffleLane& lane, T value) {
  switch (lane.kind) {
    case ShuffleKind::idx: return __shfl_sync(lane.mask, value, lane.arg, lane.width);
    case ShuffleKind::up:
      return __shfl_up_sync(lane.mask, value, static_cast<unsigned>(lane.arg), lane.width);
    case ShuffleKind::down:
      return __shfl_down_sync(lane.mask, value, static_cast<unsigned>(lane.arg), lane.width);
    case ShuffleKind::xor_: return __shfl_xor_sync(lane.mask, value, lane.arg, lane.width);
  }
  return value;
}

__global__ void shuffle_kernel(const ShuffleLane* lanes, int* results) {
  const unsigned i = linear_thread_index();
  results[i] = shuffle_one(lanes[i], lanes[i].value);
}

__global__ void shuffle_double_kernel(const ShuffleLane* lanes, double* results) {
  const unsigned i = linear_thread_index();
  results[i] = shuffle_one(lanes[i], lanes[i].value + 0.5);
}

__global__ void vote_kernel(const VoteLane* lanes, long long* results) {
  const unsigned i = linear_thread_index();
  const VoteLane lane = lanes[i];
  long long r = 0;
  switch (lane.kind) {
    case VoteKind::ballot: r = __ballot_sync(lane.mask, lane.value); break;
    case VoteKind::any: r = __any_sync(lane.mask, lane.value); break;
    case VoteKind::all: r = __all_sync(lane.mask, lane.value); break;
    case VoteKind::match_any: r = __match_any_sync(lane.mask, lane.value); break;
    case VoteKind::reduce_add: r = __reduce_add_sync(lane.mask, lane.value); break;
    case VoteKind::reduce_min: r = __reduce_min_sync(lane.mask, lane.value); break;
    case VoteKind::reduce_max: r = __reduce_max_sync(lane.mask, lane.value); break;
    case VoteKind::syncwarp:
      __syncwarp(lane.mask);
      r = lane.value;
      break;
  }
  results[i] = r;
}

__global__ void active_mask_kernel(unsigned* results) { results[threadIdx.x] = __activemask(); }

__global__ void shuffle_width_kernel(int width, int* out) {
  out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0, width);
}

// Each lane names only the other lanes: undefined in CUDA.
__global__ void foreign_mask_kernel(int* out) {
  out[threadIdx.x] = __shfl_sync(~(1u << threadIdx.x), 1, 0);
}

// Lanes with the same mask at different built-ins: undefined in CUDA.
__global__ void mixed_builtins_kernel(int* out) {
  if (threadIdx.x % 2 == 0) {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);
  } else {
    out[threadIdx.x] = static_cast<int>(__ballot_sync(0xffffffffu, 1));
  }
}

// __syncwarp from two different lines: fine in CUDA (it is only a barrier), as
// long as the masks agree. Even lanes publish a value that odd lanes read after.
__global__ void syncwarp_two_sites_kernel(int* out) {
  __shared__ SharedArray<int[32]> published;
  if (threadIdx.x % 2 == 0) {
    published[threadIdx.x] = static_cast<int>(threadIdx.x) * 10;
    __syncwarp();
  } else {
    __syncwarp();
    out[threadIdx.x] = published[threadIdx.x - 1];
  }
}

dim3 to_dim3(Dim d) { return dim3(d.x, d.y, d.z); }

}  // namespace

void shuffle(Dim block, const ShuffleLane* lanes, int* results) {
  convkit::launch(shuffle_kernel, dim3(1), to_dim3(block), 0, nullptr, lanes, results);
}

void shuffle_double(Dim block, const ShuffleLane* lanes, double* results) {
  convkit::launch(shuffle_double_kernel, dim3(1), to_dim3(block), 0, nullptr, lanes, results);
}

void vote(Dim block, const VoteLane* lanes, long long* results) {
  convkit::launch(vote_kernel, dim3(1), to_dim3(block), 0, nullptr, lanes, results);
}

void active_masks(unsigned* results) {
  convkit::launch(active_mask_kernel, dim3(1), dim3(32), 0, nullptr, results);
}

void shuffle_with_width(int width) {
  int out[32];
  convkit::launch(shuffle_width_kernel, dim3(1), dim3(32), 0, nullptr, width, out);
}

void shuffle_with_foreign_mask() {
  int out[32];
  convkit::launch(foreign_mask_kernel, dim3(1), dim3(32), 0, nullptr, out);
}

void mixed_warp_builtins() {
  int out[32];
  convkit::launch(mixed_builtins_kernel, dim3(1), dim3(32), 0, nullptr, out);
}

void syncwarp_from_two_sites(int* out) {
  convkit::launch(syncwarp_two_sites_kernel, dim3(1), dim3(32), 0, nullptr, out);
}

}  // namespace sim_test_kernels
