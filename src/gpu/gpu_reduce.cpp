// GpuBackend's reductions: kernels/reduce.cu. The host turns (x, out) into a
// ReduceGeometry, with size-1 dims dropped and contiguous neighbours merged,
// and gives a split reduction its workspace.
#include <algorithm>
#include <vector>

#include "gpu/gpu_backend.h"
#include "kernels/reduce.cuh"

namespace convkit::CK_GPU_NS {

namespace {

struct Dim {
  std::int64_t size, stride;
};

// Drops size-1 dims and merges a dim into the next when stepping the outer one
// equals stepping the inner one over its whole extent (row-major order kept).
std::vector<Dim> merge_dims(const std::vector<Dim>& dims) {
  std::vector<Dim> out;
  for (const Dim& d : dims) {
    if (d.size == 1) continue;
    if (!out.empty() && out.back().stride == d.stride * d.size) {
      out.back() = {out.back().size * d.size, d.stride};
    } else {
      out.push_back(d);
    }
  }
  return out;
}

// `reduced(d)` says which of x's dims are reduced. Reduced dims are visited
// outer-to-inner by decreasing stride, so the innermost one a thread steps
// along is the one nearest to contiguous (this only reorders a sum; argmax
// reduces a single dim).
template <typename Reduced>
ReduceGeometry reduce_geometry(const Tensor& x, Reduced&& reduced) {
  std::vector<Dim> kept, red;
  bool empty_slice = false;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (reduced(d)) {
      red.push_back({x.size(d), x.stride(d)});
      empty_slice = empty_slice || x.size(d) == 0;
    } else {
      kept.push_back({x.size(d), x.stride(d)});
    }
  }
  std::stable_sort(red.begin(), red.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  kept = merge_dims(kept);
  red = empty_slice ? std::vector<Dim>{} : merge_dims(red);
  // An empty slice reads nothing, and x may then hold no memory at all (a null
  // pointer): no offset may be formed into it, so every slice starts at x.
  if (empty_slice)
    for (Dim& k : kept) k.stride = 0;

  ReduceGeometry g;
  g.kept_rank = static_cast<int>(kept.size());
  g.red_rank = static_cast<int>(red.size());
  for (int i = 0; i < g.kept_rank; ++i) {
    g.kept_size[i] = kept[static_cast<std::size_t>(i)].size;
    g.kept_stride[i] = kept[static_cast<std::size_t>(i)].stride;
    g.n_out *= g.kept_size[i];
  }
  for (int i = 0; i < g.red_rank; ++i) {
    g.red_size[i] = red[static_cast<std::size_t>(i)].size;
    g.red_stride[i] = red[static_cast<std::size_t>(i)].stride;
    g.n_red *= g.red_size[i];
  }
  if (empty_slice) g.n_red = 0;
  return g;
}

void check_rank(const char* op, const Tensor& x) {
  CK_CHECK(x.dim() <= kMaxDims, op, ": GPU kernels take tensors of at most ", kMaxDims, " dims, got shape ",
           x.shape());
}

}  // namespace

void GpuBackend::reduce(ReduceOp op, const Tensor& x, const Tensor& out) {
  check_rank("reduce", x);
  CK_CHECK(out.dim() == x.dim() && out.is_contiguous(), "reduce: out of shape ", out.shape(),
           " must be contiguous with the rank of x ", x.shape());
  const ReduceGeometry g = reduce_geometry(x, [&](std::int64_t d) { return out.size(d) != x.size(d); });
  const ReducePlan plan = plan_reduce(g, reduce_kernel_version(), true);
  Tensor workspace;
  if (plan.workspace_elements > 0)
    workspace = Tensor::empty({plan.workspace_elements}, TensorOptions().dtype(x.dtype()).device(x.device()));
  launch_reduce(op, x.dtype(), x.raw_data(), g, out.raw_data(), plan,
                workspace.defined() ? workspace.raw_data() : nullptr);
}

void GpuBackend::argmax(const Tensor& x, std::int64_t dim, const Tensor& out) {
  check_rank("argmax", x);
  CK_CHECK(out.dim() == x.dim() && out.is_contiguous() && out.dtype() == DType::int64, "argmax: out of shape ",
           out.shape(), " and dtype ", out.dtype(), " must be contiguous int64 with the rank of x ", x.shape());
  const ReduceGeometry g = reduce_geometry(x, [&](std::int64_t d) { return d == dim; });
  launch_argmax(x.dtype(), x.raw_data(), g, out.data<std::int64_t>(),
                plan_reduce(g, reduce_kernel_version(), false));
}

}  // namespace convkit::CK_GPU_NS
