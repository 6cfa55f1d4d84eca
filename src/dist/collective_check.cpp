#include "dist/collective_check.h"

#include "convkit/core/error.h"

namespace convkit::dist {

std::string describe_tensor(const Tensor& tensor) {
  return detail::concat(dtype_name(tensor.dtype()), " ", tensor.shape().str());
}

void check_collective_tensor(const char* op, const Tensor& tensor) {
  CK_CHECK(tensor.defined(), "dist::", op, ": the tensor is undefined");
  CK_CHECK(tensor.device() == kCPU, "dist::", op, ": the tensor (", describe_tensor(tensor), ") is on ",
           tensor.device(), "; the MPI process group communicates cpu tensors only (move it with .to(\"cpu\"))");
  CK_CHECK(tensor.dtype() == DType::float32 || tensor.dtype() == DType::float64, "dist::", op,
           ": the tensor (", describe_tensor(tensor), ") must be float32 or float64");
  // An empty tensor has no layout to get wrong (core calls some of them strided).
  CK_CHECK(tensor.numel() == 0 || tensor.is_contiguous(), "dist::", op, ": the tensor (", describe_tensor(tensor),
           ") must be contiguous (call .contiguous() and communicate that copy)");
}

void check_root(const char* op, int root, int size) {
  CK_CHECK(root >= 0 && root < size, "dist::", op, ": root ", root, " is not a rank of this group (ranks 0..",
           size - 1, ")");
}

}  // namespace convkit::dist
