#pragma once
#include "convkit/core/tensor.h"

namespace convkit {

// Matrix product with NumPy semantics for rank >= 2: [..., M, K] @ [..., K, N],
// batch dims broadcast. A 1-D left operand is a row, a 1-D right one a column.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace convkit
