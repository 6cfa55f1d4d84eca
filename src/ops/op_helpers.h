#pragma once
// Argument checks and small helpers shared by the op implementations.
#include "convkit/autograd/grad_mode.h"
#include "convkit/autograd/node.h"
#include "convkit/backend/backend.h"
#include "convkit/core/tensor.h"

namespace convkit::detail {

inline Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }

inline void check_defined(const char* op, const Tensor& t, const char* name = "input") {
  CK_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
}

inline void check_floating(const char* op, const Tensor& t) {
  check_defined(op, t);
  CK_CHECK(is_floating(t.dtype()), op, ": expected a float32 or float64 tensor, got ", t.dtype(),
           " of shape ", t.shape());
}

// Both tensors on one device and of one dtype.
inline void check_same(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "first input");
  check_defined(op, b, "second input");
  CK_CHECK(a.device() == b.device(), op, ": inputs are on different devices: ", a.shape(), " on ",
           a.device(), " and ", b.shape(), " on ", b.device(), "; move one with .to(device)");
  CK_CHECK(a.dtype() == b.dtype(), op, ": inputs have different dtypes: ", a.shape(), " ",
           a.dtype(), " and ", b.shape(), " ", b.dtype(), "; convert one with .to(dtype)");
}

// A new contiguous tensor on t's device.
inline Tensor new_empty(const Shape& shape, const Tensor& like, DType dtype) {
  return Tensor::empty(shape, TensorOptions().dtype(dtype).device(like.device()));
}
inline Tensor new_empty(const Shape& shape, const Tensor& like) {
  return new_empty(shape, like, like.dtype());
}

// The gradient of relu (and relu_) at output y: g where y > 0, else 0.
// Written over g when nothing else sees it (autograd::exclusively_owned):
// one buffer and its write-allocate traffic less, in a pass bound by memory
// bandwidth.
Tensor relu_backward(const Tensor& g, const Tensor& y);

// Refuses an in-place write that autograd cannot account for.
void check_inplace(const char* op, const Tensor& self, bool differentiable);

}  // namespace convkit::detail
