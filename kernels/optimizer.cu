// Fused optimizer updates: one kernel reads a parameter, its gradient and its
// state buffers once and writes the parameter and the buffers once, where the
// composed rule (src/optim) launches one elementwise kernel per tensor op and
// round-trips every intermediate through memory (SGD with momentum: 5 launches;
// Adam: about 10, each a full pass).
//
// The floor is memory traffic; the arithmetic (optimizer_math.h) is a few
// flops per element:
//   SGD with momentum: read p, g, buf; write p, buf = 5 n sizeof(T) bytes, ~6 flops/element
//   SGD without:       read p, g; write p          = 3 n sizeof(T) bytes, ~3 flops/element
//   Adam / AdamW:      read p, g, m, v; write p, m, v = 7 n sizeof(T) bytes,
//                      ~12 flops + one sqrt + one divide per element
//
// v1: one element per thread per grid-stride step, scalar loads. Consecutive
//     threads touch consecutive elements, so every access coalesces.
// v2: 16 bytes per thread per step (4 floats or 2 doubles): one 128-bit load
//     or store per array instead of four 32-bit ones, a quarter of the memory
//     instructions in flight for the same bytes. Needs 16-byte aligned arrays;
//     the last n % 4 (or n % 2) elements take the scalar path.
// v3: one launch for a table of tensors (multi-tensor apply): the launch
//     argument carries up to kMaxTensorsPerLaunch (param, grad, state...)
//     pointers and sizes, and every block walks the table, running v2's loop
//     over each tensor (v1's for one that is not 16-byte aligned). A network's
//     step costs one launch per optimizer group instead of one per parameter
//     (ResNet-18: 62 tensors, 1 launch instead of 62; the many small bias and
//     BatchNorm tensors no longer pay a launch each). The bytes are v2's; the
//     per-element rule is the same inline function, so v3 and v1 agree bit
//     for bit.
#include <vector>

#include "convkit/backend/kernel_versions.h"
#include "convkit/backend/optimizer_math.h"
#include "kernels/dispatch.cuh"
#include "kernels/optimizer.cuh"
#include "kernels/tensor_view.cuh"
#include "kernels/vector_access.cuh"

namespace convkit::CK_GPU_NS {

namespace {

using optim_math::AdamScalars;
using optim_math::SgdScalars;

// Elements of T in one 16-byte vector, moved by dev::load16 / dev::store16:
// one instruction under nvcc, and one access that the sim profile counts as
// nvcc issues it (a 16-byte struct copy, which this file used before, g++
// splits into four 4-byte accesses, so the profile saw 16 sectors per request).
template <typename T>
constexpr int kPack = dev::kVec16<T>;

__device__ __forceinline__ std::int64_t grid_start() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_step() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// ---- v1: scalar
template <typename T>
__device__ __forceinline__ void sgd_scalar(const SgdScalars<T>& s, T* __restrict__ p, const T* __restrict__ g,
                                           T* __restrict__ buf, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step()) {
    T no_buffer = T(0);
    optim_math::sgd_element(s, p[i], g[i], buf ? buf[i] : no_buffer);
  }
}

template <typename T>
__device__ __forceinline__ void adam_scalar(const AdamScalars<T>& s, T* __restrict__ p, const T* __restrict__ g,
                                            T* __restrict__ m, T* __restrict__ v, std::int64_t n) {
  for (std::int64_t i = grid_start(); i < n; i += grid_step()) optim_math::adam_element(s, p[i], g[i], m[i], v[i]);
}

template <typename T>
__global__ void sgd_v1(SgdScalars<T> s, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf,
                       std::int64_t n) {
  sgd_scalar(s, p, g, buf, n);
}

template <typename T>
__global__ void adam_v1(AdamScalars<T> s, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                        T* __restrict__ v, std::int64_t n) {
  adam_scalar(s, p, g, m, v, n);
}

// ---- v2: 16-byte vectors; the n % kPack tail runs the scalar rule.
template <typename T>
__device__ __forceinline__ void sgd_packs(const SgdScalars<T>& s, T* __restrict__ p, const T* __restrict__ g,
                                          T* __restrict__ buf, std::int64_t n) {
  constexpr int kV = kPack<T>;
  const std::int64_t packs = n / kV;
  for (std::int64_t i = grid_start(); i < packs; i += grid_step()) {
    T pv[kV], gv[kV], bv[kV] = {};
    dev::load16(p + i * kV, pv);
    dev::load16(g + i * kV, gv);
    if (buf) dev::load16(buf + i * kV, bv);
    CK_UNROLL for (int k = 0; k < kV; ++k) optim_math::sgd_element(s, pv[k], gv[k], bv[k]);
    dev::store16(p + i * kV, pv);
    if (buf) dev::store16(buf + i * kV, bv);
  }
  for (std::int64_t i = packs * kV + grid_start(); i < n; i += grid_step()) {
    T no_buffer = T(0);
    optim_math::sgd_element(s, p[i], g[i], buf ? buf[i] : no_buffer);
  }
}

template <typename T>
__device__ __forceinline__ void adam_packs(const AdamScalars<T>& s, T* __restrict__ p, const T* __restrict__ g,
                                           T* __restrict__ m, T* __restrict__ v, std::int64_t n) {
  constexpr int kV = kPack<T>;
  const std::int64_t packs = n / kV;
  for (std::int64_t i = grid_start(); i < packs; i += grid_step()) {
    T pv[kV], gv[kV], mv[kV], vv[kV];
    dev::load16(p + i * kV, pv);
    dev::load16(g + i * kV, gv);
    dev::load16(m + i * kV, mv);
    dev::load16(v + i * kV, vv);
    CK_UNROLL for (int k = 0; k < kV; ++k) optim_math::adam_element(s, pv[k], gv[k], mv[k], vv[k]);
    dev::store16(p + i * kV, pv);
    dev::store16(m + i * kV, mv);
    dev::store16(v + i * kV, vv);
  }
  for (std::int64_t i = packs * kV + grid_start(); i < n; i += grid_step())
    optim_math::adam_element(s, p[i], g[i], m[i], v[i]);
}

template <typename T>
__global__ void sgd_v2(SgdScalars<T> s, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf,
                       std::int64_t n) {
  sgd_packs(s, p, g, buf, n);
}

template <typename T>
__global__ void adam_v2(AdamScalars<T> s, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m,
                        T* __restrict__ v, std::int64_t n) {
  adam_packs(s, p, g, m, v, n);
}

// ---- v3: one launch over a table of tensors. The table travels in the
// launch's parameter space (CUDA allows 4 KB: 64 entries of 48 bytes and the
// scalars), so no copy to the device precedes the launch.
template <typename T>
struct TableEntry {
  T* p;
  const T* g;
  T* s0;  // SGD: the momentum buffer (null without momentum); Adam: exp_avg
  T* s1;  // Adam: exp_avg_sq
  std::int64_t n;
  int first_step;  // SGD: this tensor's momentum buffer starts here
  int vectors;     // every array 16-byte aligned: v2's loop, else v1's
};

template <typename T, typename Scalars>
struct TensorTable {
  Scalars s;
  int count;
  TableEntry<T> e[kMaxTensorsPerLaunch];
};

template <typename T>
__global__ void sgd_v3(TensorTable<T, SgdScalars<T>> table) {
  for (int t = 0; t < table.count; ++t) {
    const TableEntry<T>& e = table.e[t];
    SgdScalars<T> s = table.s;
    s.first_step = e.first_step != 0;
    if (e.vectors) sgd_packs(s, e.p, e.g, e.s0, e.n);
    else sgd_scalar(s, e.p, e.g, e.s0, e.n);
  }
}

template <typename T>
__global__ void adam_v3(TensorTable<T, AdamScalars<T>> table) {
  for (int t = 0; t < table.count; ++t) {
    const TableEntry<T>& e = table.e[t];
    if (e.vectors) adam_packs(table.s, e.p, e.g, e.s0, e.s1, e.n);
    else adam_scalar(table.s, e.p, e.g, e.s0, e.s1, e.n);
  }
}

constexpr int kVersions = 3;

using dev::aligned16;  // a null state pointer (address 0) counts as aligned

// The version to run: an explicit one must be able to run these arrays; the
// family's choice falls back to v1 for arrays v2 cannot load as vectors (v3
// picks per tensor).
int choose(const char* op, int version, bool vectors_ok) {
  register_optimizer_kernels();
  CK_CHECK(version >= 0 && version <= kVersions, op, ": the optimizer kernels have versions 1..", kVersions,
           ", got ", version);
  if (version == 0) {
    const int chosen = kernel_version("optimizer");
    return chosen == 2 && !vectors_ok ? 1 : chosen;
  }
  CK_CHECK(version != 2 || vectors_ok, op,
           ": optimizer kernel v2 loads 16-byte vectors and needs every array 16-byte aligned");
  return version;
}

}  // namespace

void register_optimizer_kernels() {
  static const bool registered = [] {
    register_kernel_family({"optimizer", kVersions, 3,
                            "v1 one element per thread, scalar loads; "
                            "v2 16-byte vector loads and stores (aligned arrays); "
                            "v3 v2 over a table of tensors in one launch"});
    return true;
  }();
  (void)registered;
}

namespace {

template <typename T, typename Scalars, typename Kernel>
void launch_tables(Kernel kernel, const Scalars& s, const OptimizerTensors* tensors, std::size_t count) {
  for (std::size_t first = 0; first < count; first += kMaxTensorsPerLaunch) {
    TensorTable<T, Scalars> table{};
    table.s = s;
    std::int64_t largest_items = 0;
    for (std::size_t k = first; k < count && k - first < kMaxTensorsPerLaunch; ++k) {
      const OptimizerTensors& t = tensors[k];
      CK_CHECK(t.n >= 0, "optimizer update: negative element count ", t.n, " for tensor ", k);
      if (t.n == 0) continue;
      TableEntry<T>& e = table.e[table.count++];
      e = {static_cast<T*>(t.param), static_cast<const T*>(t.grad), static_cast<T*>(t.state0),
           static_cast<T*>(t.state1), t.n, t.first_step ? 1 : 0,
           aligned16(t.param) && aligned16(t.grad) && aligned16(t.state0) && aligned16(t.state1) ? 1 : 0};
      const std::int64_t items = e.vectors ? (t.n + kPack<T> - 1) / kPack<T> : t.n;
      largest_items = items > largest_items ? items : largest_items;
    }
    if (table.count == 0) continue;
    const LaunchShape shape = grid_stride_shape(largest_items);
    launch(kernel, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, table);
  }
}

}  // namespace

void launch_sgd_update_multi(DType dtype, const OptimizerTensors* tensors, std::size_t count, const SgdStep& step,
                             int version) {
  const int v = choose("sgd_update", version, true);
  for (std::size_t k = 0; k < count; ++k)
    CK_CHECK(step.momentum == 0 || tensors[k].n == 0 || tensors[k].state0 != nullptr, "sgd_update: momentum ", step.momentum,
             " needs a momentum buffer (tensor ", k, ")");
  if (v != 3) {  // the per-tensor twins, one launch each
    for (std::size_t k = 0; k < count; ++k) {
      const OptimizerTensors& t = tensors[k];
      if (t.n == 0) continue;
      SgdStep one = step;
      one.first_step = t.first_step;
      const bool vectors_ok = aligned16(t.param) && aligned16(t.grad) && aligned16(t.state0);
      launch_sgd_update(dtype, t.param, t.grad, t.state0, t.n, one, v == 2 && !vectors_ok && version == 0 ? 1 : v);
    }
    return;
  }
  dispatch_floating(dtype, "sgd_update", [&](auto t) {
    using T = decltype(t);
    std::vector<OptimizerTensors> table(tensors, tensors + count);
    if (step.momentum == 0)
      for (OptimizerTensors& e : table) e.state0 = nullptr;
    launch_tables<T>(sgd_v3<T>, optim_math::sgd_scalars<T>(step), table.data(), table.size());
  });
}

void launch_adam_update_multi(DType dtype, const OptimizerTensors* tensors, std::size_t count, const AdamStep& step,
                              int version) {
  const int v = choose("adam_update", version, true);
  if (v != 3) {
    for (std::size_t k = 0; k < count; ++k) {
      const OptimizerTensors& t = tensors[k];
      if (t.n == 0) continue;
      const bool vectors_ok = aligned16(t.param) && aligned16(t.grad) && aligned16(t.state0) && aligned16(t.state1);
      launch_adam_update(dtype, t.param, t.grad, t.state0, t.state1, t.n, step,
                         v == 2 && !vectors_ok && version == 0 ? 1 : v);
    }
    return;
  }
  CK_CHECK(step.bias_correction1 > 0 && step.bias_correction2_sqrt > 0,
           "adam_update: bias corrections must be positive, got ", step.bias_correction1, " and ",
           step.bias_correction2_sqrt);
  dispatch_floating(dtype, "adam_update", [&](auto t) {
    using T = decltype(t);
    launch_tables<T>(adam_v3<T>, optim_math::adam_scalars<T>(step), tensors, count);
  });
}

void launch_sgd_update(DType dtype, void* param, const void* grad, void* momentum_buffer, std::int64_t n,
                       const SgdStep& step, int version) {
  CK_CHECK(n >= 0, "sgd_update: negative element count ", n);
  CK_CHECK(step.momentum == 0 || momentum_buffer != nullptr, "sgd_update: momentum ", step.momentum,
           " needs a momentum buffer");
  const bool vectors_ok = aligned16(param) && aligned16(grad) && aligned16(momentum_buffer);
  const int v = choose("sgd_update", version, vectors_ok);
  if (n == 0) return;
  if (v == 3) {  // a table of one
    const OptimizerTensors one{param, grad, momentum_buffer, nullptr, n, step.first_step};
    launch_sgd_update_multi(dtype, &one, 1, step, 3);
    return;
  }
  dispatch_floating(dtype, "sgd_update", [&](auto t) {
    using T = decltype(t);
    const SgdScalars<T> s = optim_math::sgd_scalars<T>(step);
    T* buf = step.momentum != 0 ? static_cast<T*>(momentum_buffer) : nullptr;
    const std::int64_t items = v == 2 ? (n + kPack<T> - 1) / kPack<T> : n;
    const LaunchShape shape = grid_stride_shape(items);
    launch(v == 2 ? sgd_v2<T> : sgd_v1<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, s,
           static_cast<T*>(param), static_cast<const T*>(grad), buf, n);
  });
}

void launch_adam_update(DType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
                        std::int64_t n, const AdamStep& step, int version) {
  CK_CHECK(n >= 0, "adam_update: negative element count ", n);
  CK_CHECK(step.bias_correction1 > 0 && step.bias_correction2_sqrt > 0,
           "adam_update: bias corrections must be positive, got ", step.bias_correction1, " and ",
           step.bias_correction2_sqrt);
  const bool vectors_ok = aligned16(param) && aligned16(grad) && aligned16(exp_avg) && aligned16(exp_avg_sq);
  const int v = choose("adam_update", version, vectors_ok);
  if (n == 0) return;
  if (v == 3) {
    const OptimizerTensors one{param, grad, exp_avg, exp_avg_sq, n, false};
    launch_adam_update_multi(dtype, &one, 1, step, 3);
    return;
  }
  dispatch_floating(dtype, "adam_update", [&](auto t) {
    using T = decltype(t);
    const AdamScalars<T> s = optim_math::adam_scalars<T>(step);
    const std::int64_t items = v == 2 ? (n + kPack<T> - 1) / kPack<T> : n;
    const LaunchShape shape = grid_stride_shape(items);
    launch(v == 2 ? adam_v2<T> : adam_v1<T>, dim3(shape.blocks), dim3(shape.threads), 0, nullptr, s,
           static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(exp_avg),
           static_cast<T*>(exp_avg_sq), n);
  });
}

}  // namespace convkit::CK_GPU_NS
