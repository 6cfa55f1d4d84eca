#pragma once
// Host-side dtype dispatch for launchers: calls f(T{}) with the C++ type of a
// dtype, so one generic lambda instantiates a kernel template per type.
#include <cstdint>
#include <type_traits>

#include "convkit/core/dtype.h"
#include "convkit/core/error.h"
#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

// Calls f(T{}) for the C++ type of dtype.
template <typename F>
void dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::float32: f(float{}); return;
    case DType::float64: f(double{}); return;
    case DType::int64: f(std::int64_t{}); return;
  }
}

template <typename F>
void dispatch_floating(DType dtype, const char* op, F&& f) {
  CK_CHECK(is_floating(dtype), op, ": dtype ", dtype, " is not supported on the GPU (float32 or float64)");
  dispatch(dtype, [&](auto t) {
    if constexpr (!std::is_integral_v<decltype(t)>) f(t);
  });
}

// Calls f(integral_constant<bool, trans_a>, integral_constant<bool, trans_b>),
// so one generic lambda instantiates a GEMM kernel per transpose pair.
template <typename F>
void with_transposes(bool ta, bool tb, F&& f) {
  if (ta) {
    if (tb) f(std::true_type{}, std::true_type{});
    else f(std::true_type{}, std::false_type{});
  } else {
    if (tb) f(std::false_type{}, std::true_type{});
    else f(std::false_type{}, std::false_type{});
  }
}

}  // namespace convkit::CK_GPU_NS
