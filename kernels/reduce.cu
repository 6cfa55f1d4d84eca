// Reductions: sum, max, min over any set of dims and argmax along one dim.
//
// Output element o combines the n_red elements of its slice of x (see
// ReduceGeometry). Floor: every element of x is read once and every output
// written once, (n_out * n_red + n_out) * sizeof(T) bytes, with one add or
// compare per element read, so every version is bound by memory bandwidth and
// the versions differ in how well they keep the memory system busy:
//
//   v1 thread_per_output  one thread walks a whole slice. Obviously right; fast
//                         only when there are enough outputs and neighbouring
//                         outputs sit next to each other in memory.
//   v2 block_tree         one block per slice, each thread sums a strided part,
//                         then a shared-memory tree (log2(threads) barriers).
//                         Every slice gets a block's worth of loads in flight.
//   v3 warp_rows / block_rows / columns
//                         the tree is done with __shfl_down_sync (no shared
//                         memory or barriers inside a warp); short slices get a
//                         warp each instead of a block; slices that are too few
//                         to fill the GPU are split over `splits` blocks
//                         (grid-stride accumulation) and finished by a second,
//                         tiny pass over the partials; reductions over outer dims
//                         (x[r, o] with o contiguous) map lanes to outputs so the
//                         loads coalesce.
//
// Sums accumulate in T: a tree over the slice gives an error of at most about
// (elements per thread + log2(threads)) * eps * sum |x|, against n_red * eps * sum |x|
// for v1's serial loop (docs/gpu/reduce.md). Max and min are exact; both
// propagate NaN, as the cpu backend does.
#include "kernels/reduce.cuh"

#include <string>

#include "convkit/backend/kernel_versions.h"
#include "kernels/dispatch.cuh"
#include "kernels/warp_reduce.cuh"

namespace convkit::CK_GPU_NS {

namespace {

// ---- the combine operations. Each has an accumulator type Acc, an identity,
// load (an element and its index in the slice -> Acc), an associative combine,
// and result (Acc -> the output element).

template <typename T>
struct SumOp {
  using Acc = T;
  using Out = T;
  __device__ __forceinline__ static Acc identity() { return T(0); }
  __device__ __forceinline__ static Acc load(T v, std::int64_t) { return v; }
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const { return a + b; }
  __device__ __forceinline__ static Out result(Acc a) { return a; }
};

// NaN wins: `a != a` keeps a NaN a, and a comparison with a NaN b is false, so b is taken.
template <typename T>
struct MaxOp {
  using Acc = T;
  using Out = T;
  __device__ __forceinline__ static Acc identity() { return static_cast<T>(-INFINITY); }
  __device__ __forceinline__ static Acc load(T v, std::int64_t) { return v; }
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const { return (a > b || a != a) ? a : b; }
  __device__ __forceinline__ static Out result(Acc a) { return a; }
};

template <typename T>
struct MinOp {
  using Acc = T;
  using Out = T;
  __device__ __forceinline__ static Acc identity() { return static_cast<T>(INFINITY); }
  __device__ __forceinline__ static Acc load(T v, std::int64_t) { return v; }
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const { return (a < b || a != a) ? a : b; }
  __device__ __forceinline__ static Out result(Acc a) { return a; }
};

// A candidate for argmax: a value and its index in the slice; index -1 is "none".
template <typename T>
struct ArgCandidate {
  T value;
  std::int64_t index;
};

template <typename T>
__device__ __forceinline__ ArgCandidate<T> shfl_down(ArgCandidate<T> a, unsigned delta) {
  return {CK_GPU_NS::shfl_down(a.value, delta), CK_GPU_NS::shfl_down(a.index, delta)};
}

// The cpu scan `if (x[i] > x[best]) best = i` as an associative combine: a NaN
// at index 0 beats everything (the scan never leaves it), other NaNs never win
// (they load as "none"), and among numbers the larger wins, the lower index on a tie.
template <typename T>
struct ArgmaxOp {
  using Acc = ArgCandidate<T>;
  using Out = std::int64_t;
  __device__ __forceinline__ static Acc identity() { return {T(0), -1}; }
  __device__ __forceinline__ static Acc load(T v, std::int64_t r) {
    return (v != v && r != 0) ? identity() : Acc{v, r};
  }
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (a.value != a.value) return a;  // the NaN at index 0
    if (b.value != b.value) return b;
    return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
  }
  __device__ __forceinline__ static Out result(Acc a) { return a.index < 0 ? 0 : a.index; }
};

// ---- v1: one thread per output element. Thread o walks its slice serially.
// Loads coalesce only when neighbouring outputs are neighbours in x (reducing
// over outer dims); a reduction over the last dim has each thread stride
// through its own row, and a single output runs on a single thread.
template <typename Op, typename T>
__global__ void reduce_v1_thread_per_output(const T* x, ReduceGeometry g, typename Op::Out* out) {
  const Op combine{};
  for (std::int64_t o = grid_thread(); o < g.n_out; o += grid_threads()) {
    const T* slice = x + g.out_base(o);
    typename Op::Acc acc = Op::identity();
    for (std::int64_t r = 0; r < g.n_red; ++r) acc = combine(acc, Op::load(slice[g.red_offset(r)], r));
    out[o] = Op::result(acc);
  }
}

// ---- v2: one block per output element (grid-stride over outputs). Thread t
// combines elements t, t + blockDim, ... of the slice (neighbouring threads
// read neighbouring elements), then the block halves its blockDim partials in
// shared memory, one barrier per level. blockDim is a power of two.
template <typename Op, typename T>
__global__ void reduce_v2_block_tree(const T* x, ReduceGeometry g, typename Op::Out* out) {
  using Acc = typename Op::Acc;
  CK_DYNAMIC_SHARED(Acc, partial);  // blockDim.x accumulators
  const Op combine{};
  const unsigned t = threadIdx.x;
  for (std::int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
    const T* slice = x + g.out_base(o);
    Acc acc = Op::identity();
    for (std::int64_t r = t; r < g.n_red; r += blockDim.x) acc = combine(acc, Op::load(slice[g.red_offset(r)], r));
    partial[t] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (t < half) partial[t] = combine(partial[t], partial[t + half]);
      __syncthreads();
    }
    // Only thread 0 reads partial[0] after the last barrier, and only thread 0
    // writes it in the next iteration, so no barrier is needed here.
    if (t == 0) out[o] = Op::result(partial[0]);
  }
}

// ---- v3, short slices: one warp per output element, 8 warps per block. The
// warp's lanes stride through the slice and meet in five shuffles: no shared
// memory and no block barriers, and a block serves 8 outputs at once.
template <typename Op, typename T>
__global__ void reduce_v3_warp_rows(const T* x, ReduceGeometry g, typename Op::Out* out) {
  const Op combine{};
  const unsigned lane = lane_id();
  const std::int64_t warps_per_block = blockDim.x / kWarpSize;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / kWarpSize;
  // `o` is the same for the whole warp, so every lane reaches every shuffle.
  for (std::int64_t o = first; o < g.n_out; o += gridDim.x * warps_per_block) {
    const T* slice = x + g.out_base(o);
    typename Op::Acc acc = Op::identity();
    for (std::int64_t r = lane; r < g.n_red; r += kWarpSize) acc = combine(acc, Op::load(slice[g.red_offset(r)], r));
    acc = warp_reduce_down(acc, combine);
    if (lane == 0) out[o] = Op::result(acc);
  }
}

// ---- v3, long slices: gridDim.y blocks per output element. Block (o, s) of
// `splits` combines elements s * blockDim + t, then every splits * blockDim
// (grid-stride accumulation along the slice); each warp reduces by shuffles,
// the warp leaders meet in shared memory, and warp 0 finishes. With splits > 1
// `out` is the [n_out, splits] partials a second pass reduces.
template <typename Op, typename T>
__global__ void reduce_v3_block_rows(const T* x, ReduceGeometry g, typename Op::Out* out) {
  using Acc = typename Op::Acc;
  __shared__ SharedArray<Acc[kWarpSize]> warp_partial;
  const Op combine{};
  const unsigned t = threadIdx.x, lane = lane_id(), warp = t / kWarpSize, warps = blockDim.x / kWarpSize;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * blockDim.x;
  for (std::int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
    const T* slice = x + g.out_base(o);
    Acc acc = Op::identity();
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * blockDim.x + t; r < g.n_red; r += step)
      acc = combine(acc, Op::load(slice[g.red_offset(r)], r));
    acc = warp_reduce_down(acc, combine);
    if (lane == 0) warp_partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = warp_reduce_down(lane < warps ? warp_partial[lane] : Op::identity(), combine);
      if (lane == 0) out[o * gridDim.y + blockIdx.y] = Op::result(acc);
    }
    __syncthreads();  // warp 0 reads warp_partial before the next slice overwrites it
  }
}

// ---- v3, reductions over outer dims (the last kept dim has the smallest
// stride): a 32 x 8 block covers 32 neighbouring outputs; lane tx owns output
// tile * 32 + tx, so each load instruction of a warp reads 32 neighbours, and
// the 8 rows ty of the block split the slice (then gridDim.y blocks more, as
// in block_rows). The 8 partials per output meet in shared memory. With
// splits > 1 `out` is the [splits, n_out] partials a second pass reduces.
inline constexpr unsigned kColumnRows = 8;

template <typename Op, typename T>
__global__ void reduce_v3_columns(const T* x, ReduceGeometry g, typename Op::Out* out) {
  using Acc = typename Op::Acc;
  __shared__ SharedArray<Acc[kColumnRows][kWarpSize]> partial;
  const Op combine{};
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * kColumnRows;
  // The tile loop is uniform over the block, so every thread reaches both barriers.
  for (std::int64_t tile = blockIdx.x; tile * kWarpSize < g.n_out; tile += gridDim.x) {
    const std::int64_t o = tile * kWarpSize + tx;
    Acc acc = Op::identity();
    if (o < g.n_out) {
      const T* slice = x + g.out_base(o);
      for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * kColumnRows + ty; r < g.n_red; r += step)
        acc = combine(acc, Op::load(slice[g.red_offset(r)], r));
    }
    partial[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && o < g.n_out) {
      for (unsigned k = 1; k < kColumnRows; ++k) acc = combine(acc, partial[k][tx]);
      out[static_cast<std::int64_t>(blockIdx.y) * g.n_out + o] = Op::result(acc);
    }
    __syncthreads();  // row 0 reads `partial` before the next tile overwrites it
  }
}

// ---- planning

constexpr unsigned kMaxGridX = 65535;        // grid-stride beyond this (and keeps sim grids modest)
constexpr unsigned kTargetBlocks = 1024;     // ~8 resident 256-thread blocks on each of 132 SMs (H100)
constexpr std::int64_t kWarpRowMax = 1024;   // longest slice given to one warp (32 elements a lane)
constexpr std::int64_t kPerThreadMin = 16;   // a split must leave each thread this many elements
constexpr unsigned kBlockThreads = 256;

unsigned clamp_blocks(std::int64_t wanted) {
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted > kMaxGridX ? kMaxGridX : wanted));
}

// Blocks per slice so that `blocks_without_split` blocks become about
// kTargetBlocks, leaving each thread at least kPerThreadMin elements.
unsigned split_count(std::int64_t blocks_without_split, std::int64_t n_red, std::int64_t threads_per_slice) {
  if (blocks_without_split >= kTargetBlocks) return 1;
  const std::int64_t for_occupancy = (kTargetBlocks + blocks_without_split - 1) / blocks_without_split;
  const std::int64_t for_work = n_red / (threads_per_slice * kPerThreadMin);
  const std::int64_t s = for_occupancy < for_work ? for_occupancy : for_work;
  return static_cast<unsigned>(s < 1 ? 1 : s);
}

bool outputs_are_innermost(const ReduceGeometry& g) {
  if (g.kept_rank == 0 || g.red_rank == 0 || g.n_out < kWarpSize) return false;
  const std::int64_t last_kept = g.kept_stride[g.kept_rank - 1];
  for (int d = 0; d < g.red_rank; ++d)
    if (g.red_stride[d] <= last_kept) return false;
  return true;
}

template <typename Op, typename T>
void run_plan(const ReducePlan& p, const T* x, const ReduceGeometry& g, typename Op::Out* out) {
  switch (p.mapping) {
    case ReduceMapping::thread_per_output:
      launch(reduce_v1_thread_per_output<Op, T>, dim3(p.blocks), dim3(p.threads), 0, nullptr, x, g, out);
      return;
    case ReduceMapping::block_tree:
      launch(reduce_v2_block_tree<Op, T>, dim3(p.blocks), dim3(p.threads), p.threads * sizeof(typename Op::Acc),
             nullptr, x, g, out);
      return;
    case ReduceMapping::warp_rows:
      launch(reduce_v3_warp_rows<Op, T>, dim3(p.blocks), dim3(p.threads), 0, nullptr, x, g, out);
      return;
    case ReduceMapping::block_rows:
      launch(reduce_v3_block_rows<Op, T>, dim3(p.blocks, p.splits), dim3(p.threads), 0, nullptr, x, g, out);
      return;
    case ReduceMapping::columns:
      launch(reduce_v3_columns<Op, T>, dim3(p.blocks, p.splits), dim3(kWarpSize, kColumnRows), 0, nullptr, x, g,
             out);
      return;
  }
}

// The geometry of the partials a split reduction leaves: [n_out, splits] for
// block_rows, [splits, n_out] for columns, both contiguous.
ReduceGeometry partials_geometry(const ReducePlan& p, std::int64_t n_out) {
  ReduceGeometry g;
  g.kept_rank = 1;
  g.red_rank = 1;
  g.kept_size[0] = n_out;
  g.red_size[0] = p.splits;
  g.kept_stride[0] = p.mapping == ReduceMapping::columns ? 1 : p.splits;
  g.red_stride[0] = p.mapping == ReduceMapping::columns ? n_out : 1;
  g.n_out = n_out;
  g.n_red = p.splits;
  return g;
}

template <typename T, template <typename> class OpT>
void reduce_with(const T* x, const ReduceGeometry& g, T* out, const ReducePlan& p, T* workspace) {
  if (p.splits <= 1) {
    run_plan<OpT<T>, T>(p, x, g, out);
    return;
  }
  CK_CHECK(workspace != nullptr, "reduce: a split reduction (", p.splits, " blocks per output) needs a workspace of ",
           p.workspace_elements, " elements");
  run_plan<OpT<T>, T>(p, x, g, workspace);
  // Max, min and sum of partial results are the max, min and sum of the whole.
  const ReduceGeometry pg = partials_geometry(p, g.n_out);
  run_plan<OpT<T>, T>(plan_reduce(pg, p.version, false), workspace, pg, out);
}

}  // namespace

const char* mapping_name(ReduceMapping m) {
  switch (m) {
    case ReduceMapping::thread_per_output: return "thread_per_output";
    case ReduceMapping::block_tree: return "block_tree";
    case ReduceMapping::warp_rows: return "warp_rows";
    case ReduceMapping::block_rows: return "block_rows";
    case ReduceMapping::columns: return "columns";
  }
  return "?";
}

int reduce_kernel_version() {
  static const bool registered = [] {
    register_kernel_family({"reduce", 3, 3,
                            "v1 one thread per output walks its slice; "
                            "v2 one block per output, shared-memory tree; "
                            "v3 warp shuffles: a warp per short slice, split blocks per long one, "
                            "lanes across outputs for outer-dim reductions"});
    return true;
  }();
  (void)registered;
  return kernel_version("reduce");
}

ReducePlan plan_reduce(const ReduceGeometry& g, int version, bool allow_split) {
  CK_CHECK(version >= 1 && version <= 3, "reduce: kernel version ", version, " does not exist (1..3)");
  CK_CHECK(g.kept_rank <= kMaxDims && g.red_rank <= kMaxDims, "reduce: geometry with ", g.kept_rank, " kept and ",
           g.red_rank, " reduced dims (at most ", kMaxDims, " each)");
  ReducePlan p;
  p.version = version;
  if (version == 1) {
    const LaunchShape s = grid_stride_shape(g.n_out);
    p.mapping = ReduceMapping::thread_per_output;
    p.blocks = s.blocks;
    p.threads = s.threads;
    return p;
  }
  if (version == 2) {
    // The smallest power of two from 32 to 256 that covers the slice.
    unsigned threads = kWarpSize;
    while (threads < kBlockThreads && threads < g.n_red) threads *= 2;
    p.mapping = ReduceMapping::block_tree;
    p.threads = threads;
    p.blocks = clamp_blocks(g.n_out);
    return p;
  }
  if (outputs_are_innermost(g)) {
    p.mapping = ReduceMapping::columns;
    p.threads = kWarpSize * kColumnRows;
    const std::int64_t tiles = (g.n_out + kWarpSize - 1) / kWarpSize;
    p.blocks = clamp_blocks(tiles);
    if (allow_split) p.splits = split_count(tiles, g.n_red, kColumnRows);
  } else if (g.n_red <= kWarpRowMax) {
    p.mapping = ReduceMapping::warp_rows;
    p.threads = kBlockThreads;
    p.blocks = clamp_blocks((g.n_out + kBlockThreads / kWarpSize - 1) / (kBlockThreads / kWarpSize));
  } else {
    p.mapping = ReduceMapping::block_rows;
    p.threads = kBlockThreads;
    p.blocks = clamp_blocks(g.n_out);
    if (allow_split) p.splits = split_count(g.n_out, g.n_red, kBlockThreads);
  }
  if (p.splits > kMaxGridX) p.splits = kMaxGridX;
  if (p.splits > 1) p.workspace_elements = g.n_out * p.splits;
  return p;
}

void launch_reduce(ReduceOp op, DType dtype, const void* x, const ReduceGeometry& g, void* out, const ReducePlan& p,
                   void* workspace) {
  if (g.n_out == 0) return;
  dispatch_floating(dtype, "reduce", [&](auto t) {
    using T = decltype(t);
    const T* xp = static_cast<const T*>(x);
    T* op_out = static_cast<T*>(out);
    T* ws = static_cast<T*>(workspace);
    switch (op) {
      case ReduceOp::sum: reduce_with<T, SumOp>(xp, g, op_out, p, ws); return;
      case ReduceOp::max: reduce_with<T, MaxOp>(xp, g, op_out, p, ws); return;
      case ReduceOp::min: reduce_with<T, MinOp>(xp, g, op_out, p, ws); return;
    }
  });
}

void launch_argmax(DType dtype, const void* x, const ReduceGeometry& g, std::int64_t* out, const ReducePlan& p) {
  CK_CHECK(g.red_rank <= 1, "argmax: reduces one dim, got a geometry with ", g.red_rank, " reduced dims");
  CK_CHECK(p.splits == 1, "argmax: a plan that splits slices over ", p.splits, " blocks (plan with allow_split false)");
  if (g.n_out == 0) return;
  dispatch_floating(dtype, "argmax", [&](auto t) {
    using T = decltype(t);
    run_plan<ArgmaxOp<T>, T>(p, static_cast<const T*>(x), g, out);
  });
}

}  // namespace convkit::CK_GPU_NS
