#pragma once
// Running a GPU convolution algorithm (namespace CK_GPU_NS: gpu_sim under
// g++, gpu_cuda in the nvcc build of a suite) on the float64-reference test
// descriptors of tests/cpu/conv.
//
// The algorithms take device pointers (conv/conv_algorithm.h), so these raw
// tests call an algorithm directly, without the op layer or the backend
// registry in between; the operands live on testing::kernel_device().
#include <gtest/gtest.h>

#include <convkit/convkit.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "convkit/backend/kernel_versions.h"
#include "cpu/conv/conv_reference.h"
#include "cpu/conv/conv_tolerance.h"
#include "gpu/gpu_conv_algorithm.h"
#include "gpu/gpu_testing.h"

namespace convkit::gpu_testing {

namespace kernels = convkit::CK_GPU_NS;
using convkit::testing::kernel_device;
using convkit::testing::ScopedKernelVersion;

using cpu::testing::cast_to;
using cpu::testing::random_values;
using cpu::testing::w_size;
using cpu::testing::x_size;
using cpu::testing::y_size;

// Random operands of one descriptor, float64 values exactly representable in
// float32, so one float64 reference serves the float32 and float64 runs.
struct Inputs {
  std::vector<double> x, w, b, dy;
  Inputs(const Conv2dDesc& d, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    x = random_values<float>(x_size(d), rng);
    w = random_values<float>(w_size(d), rng);
    b = random_values<float>(d.K, rng);
    dy = random_values<float>(y_size(d), rng);
  }
};

// A descriptor's operands and the float64 reference of every pass.
struct CaseData {
  Inputs in;
  cpu::testing::Reference y, dx, dw, db;
  CaseData(const Conv2dDesc& d, std::uint64_t seed)
      : in(d, seed),
        y(cpu::testing::reference_forward(d, in.x, in.w, in.b)),
        dx(cpu::testing::reference_backward_data(d, in.dy, in.w)),
        dw(cpu::testing::reference_backward_weights(d, in.x, in.dy)),
        db(cpu::testing::reference_bias_gradient(d, in.dy)) {}
};

// The reference is the slow part of these tests, so each descriptor's is
// computed once per binary and shared by every version, dtype and schedule.
inline const CaseData& case_data(const Conv2dDesc& d) {
  static std::map<std::string, std::unique_ptr<CaseData>> cache;
  std::unique_ptr<CaseData>& slot = cache[d.str()];
  if (!slot) slot = std::make_unique<CaseData>(d, std::hash<std::string>{}(d.str()));
  return *slot;
}

template <typename T>
struct Outputs {
  std::vector<T> y, dx, dw, db;
};

template <typename T>
Tensor device_tensor(const std::vector<double>& values) {
  return from_vector(cast_to<T>(values), Shape{static_cast<std::int64_t>(values.size())},
                     TensorOptions().dtype(dtype_of<T>::value).device(kernel_device()));
}

// Every pass must overwrite its output, so outputs start as garbage.
template <typename T>
Tensor garbage(std::int64_t count) {
  return full(Shape{count}, -7.0, TensorOptions().dtype(dtype_of<T>::value).device(kernel_device()));
}

// Runs the three passes of `algo` in precision T, with one workspace big
// enough for every pass (as the op layer sizes it per pass).
template <typename T>
Outputs<T> run_passes(const conv::ConvAlgorithm& algo, const Conv2dDesc& d, const Inputs& in) {
  const DType dtype = dtype_of<T>::value;
  std::size_t bytes = 0;
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    bytes = std::max(bytes, algo.workspace_bytes(d, dtype, pass));
  const Tensor workspace =
      bytes > 0 ? empty(Shape{static_cast<std::int64_t>((bytes + 3) / 4)}, TensorOptions().device(kernel_device()))
                : Tensor();
  const Tensor x = device_tensor<T>(in.x), w = device_tensor<T>(in.w), b = device_tensor<T>(in.b);
  const Tensor dy = device_tensor<T>(in.dy);
  const Tensor y = garbage<T>(y_size(d)), dx = garbage<T>(x_size(d)), dw = garbage<T>(w_size(d));
  const Tensor db = garbage<T>(d.K);
  void* ws = workspace.defined() ? workspace.raw_data() : nullptr;
  algo.forward(d, dtype, x.raw_data(), w.raw_data(), b.raw_data(), y.raw_data(), ws);
  algo.backward_data(d, dtype, dy.raw_data(), w.raw_data(), dx.raw_data(), ws);
  algo.backward_weights(d, dtype, x.raw_data(), dy.raw_data(), dw.raw_data(), db.raw_data(), ws);
  return {y.to_vector<T>(), dx.to_vector<T>(), dw.to_vector<T>(), db.to_vector<T>()};
}

// Runs every pass of `algo` in precision T and compares with the reference;
// `algo_kind` picks the tolerance model (conv_tolerance.h). The bias gradient
// is a plain sum for every algorithm.
template <typename T>
Outputs<T> expect_passes_match(const conv::ConvAlgorithm& algo, ConvAlgo algo_kind, const Conv2dDesc& d,
                               const std::string& where) {
  using cpu::testing::all_within;
  using cpu::testing::tolerances;
  const CaseData& c = case_data(d);
  const Outputs<T> out = run_passes<T>(algo, d, c.in);
  const std::string what = where + " " + std::string(dtype_name(dtype_of<T>::value));
  EXPECT_TRUE(all_within(out.y, c.y.value, tolerances<T>(algo_kind, c.y))) << "forward " << what;
  EXPECT_TRUE(all_within(out.dx, c.dx.value, tolerances<T>(algo_kind, c.dx))) << "backward_data " << what;
  EXPECT_TRUE(all_within(out.dw, c.dw.value, tolerances<T>(algo_kind, c.dw))) << "backward_weights " << what;
  EXPECT_TRUE(all_within(out.db, c.db.value, tolerances<T>(ConvAlgo::direct, c.db))) << "bias " << what;
  return out;
}

// |a - b| <= tol_a + tol_b element by element: two results that are each
// within their tolerance of the reference may differ by at most that much.
template <typename T>
::testing::AssertionResult agree(const std::vector<T>& a, const std::vector<T>& b, const std::vector<double>& tol) {
  std::vector<double> as_double(b.begin(), b.end()), twice(tol.size());
  for (std::size_t i = 0; i < tol.size(); ++i) twice[i] = 2 * tol[i];
  return cpu::testing::all_within(a, as_double, twice);
}

// A later version against v1 in float32, where different rounding shows.
inline void expect_agrees_with_v1(const conv::ConvAlgorithm& algo, ConvAlgo algo_kind, const std::string& family,
                                  int version, const Conv2dDesc& d, const std::string& where) {
  using cpu::testing::tolerances;
  const CaseData& c = case_data(d);
  Outputs<float> base, out;
  {
    ScopedKernelVersion select(family, 1);
    base = run_passes<float>(algo, d, c.in);
  }
  {
    ScopedKernelVersion select(family, version);
    out = run_passes<float>(algo, d, c.in);
  }
  EXPECT_TRUE(agree(out.y, base.y, tolerances<float>(algo_kind, c.y))) << "forward " << where;
  EXPECT_TRUE(agree(out.dx, base.dx, tolerances<float>(algo_kind, c.dx))) << "backward_data " << where;
  EXPECT_TRUE(agree(out.dw, base.dw, tolerances<float>(algo_kind, c.dw))) << "backward_weights " << where;
}

}  // namespace convkit::gpu_testing
