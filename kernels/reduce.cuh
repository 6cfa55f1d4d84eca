#pragma once
// Launchers of the reduction kernels (kernels/reduce.cu): sum, max and min
// over any set of dims, and argmax along one dim. docs/gpu/reduce.md explains
// the mappings and what each numbered version improves.
#include <cstdint>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/dtype.h"
#include "kernels/tensor_view.cuh"

namespace convkit::CK_GPU_NS {

// Which elements of x each output element gathers. The host splits x's dims
// into kept dims (in out's row-major order) and reduced dims, drops size-1
// dims and merges neighbours that are contiguous with each other, so most
// reductions reach the kernel with one or two dims of each kind.
struct ReduceGeometry {
  int kept_rank = 0;
  int red_rank = 0;
  std::int64_t kept_size[kMaxDims] = {};
  std::int64_t kept_stride[kMaxDims] = {};
  std::int64_t red_size[kMaxDims] = {};
  std::int64_t red_stride[kMaxDims] = {};
  std::int64_t n_out = 1;  // output elements
  std::int64_t n_red = 1;  // elements reduced into each output (0 for an empty dim)

  // Offset in x of the first element of output o's slice (o row-major over the kept dims).
  // The outermost dim needs no division (o < n_out), so a one-dim geometry,
  // the common case after merging, costs a multiply: 64-bit division is slow on a GPU.
  __host__ __device__ __forceinline__ std::int64_t out_base(std::int64_t o) const {
    std::int64_t off = 0;
    for (int d = kept_rank - 1; d > 0; --d) {
      off += (o % kept_size[d]) * kept_stride[d];
      o /= kept_size[d];
    }
    return off + o * kept_stride[0];  // rank 0: o == 0
  }
  // Offset, relative to out_base, of the slice's r-th element (row-major over the reduced dims).
  __host__ __device__ __forceinline__ std::int64_t red_offset(std::int64_t r) const {
    std::int64_t off = 0;
    for (int d = red_rank - 1; d > 0; --d) {
      off += (r % red_size[d]) * red_stride[d];
      r /= red_size[d];
    }
    return off + r * red_stride[0];  // rank 0: r == 0
  }
};

// How a reduction is mapped onto the GPU; plan_reduce decides, the launchers obey.
enum class ReduceMapping {
  thread_per_output,  // v1: one thread walks a whole slice
  block_tree,         // v2: one block per slice, shared-memory tree
  warp_rows,          // v3: one warp per slice, shuffle tree
  block_rows,         // v3: one block (or `splits` blocks) per slice, shuffles then shared memory
  columns,            // v3: a warp covers 32 neighbouring outputs; threads split each slice
};
const char* mapping_name(ReduceMapping m);

struct ReducePlan {
  int version = 3;
  ReduceMapping mapping = ReduceMapping::thread_per_output;
  unsigned blocks = 1;   // gridDim.x
  unsigned threads = 1;  // threads per block
  unsigned splits = 1;   // blocks sharing one slice (gridDim.y); > 1 needs a second pass
  // Elements of x's dtype the second pass needs (n_out * splits partial results), else 0.
  std::int64_t workspace_elements = 0;
};

// The "reduce" family's version to run (registers the family on first call).
int reduce_kernel_version();

// Chooses the mapping for `version` (1..3). Splitting a slice over several
// blocks is allowed only when `allow_split` (sum/max/min: argmax keeps one pass).
ReducePlan plan_reduce(const ReduceGeometry& g, int version, bool allow_split);

// out[o] = op over output o's slice of x. x and out are device pointers of
// `dtype` (float32 or float64); out is contiguous with g.n_out elements;
// workspace holds plan.workspace_elements elements of `dtype` (or is null when 0).
// Sums accumulate in `dtype`; max and min return NaN when the slice holds one.
void launch_reduce(ReduceOp op, DType dtype, const void* x, const ReduceGeometry& g, void* out,
                   const ReducePlan& plan, void* workspace);

// out[o] = index of the first maximum of output o's slice (g.red_rank <= 1),
// with the cpu backend's rule for NaN: the scan keeps index 0 when x[0] is NaN
// and otherwise never moves to a NaN. `plan` comes from plan_reduce(g, v, false).
void launch_argmax(DType dtype, const void* x, const ReduceGeometry& g, std::int64_t* out,
                   const ReducePlan& plan);

}  // namespace convkit::CK_GPU_NS
