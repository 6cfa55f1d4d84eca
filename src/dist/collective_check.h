#pragma once
// The argument checks every group runs on a collective's tensor before it
// takes part, so that a mistake is the same Error with one rank or many.
#include "convkit/core/tensor.h"

namespace convkit::dist {

// Throws Error naming `op` and the tensor's shape, dtype and device unless it
// is contiguous float32 or float64 on the cpu.
void check_collective_tensor(const char* op, const Tensor& tensor);

// Throws Error unless 0 <= root < size.
void check_root(const char* op, int root, int size);

// "float32 [2, 3]": how errors and the failure report name a tensor.
std::string describe_tensor(const Tensor& tensor);

}  // namespace convkit::dist
