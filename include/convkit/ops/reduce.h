#pragma once
// Reductions over any set of dims (empty = all), with keepdim.
#include <cstdint>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit {

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
// Maximum along one dim; the gradient flows to the first maximal element.
Tensor max(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor max(const Tensor& x);  // of all elements
Tensor min(const Tensor& x);
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);  // int64
// Variance; unbiased divides by n - 1 (as torch.var's default).
Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool unbiased = true,
           bool keepdim = false);

}  // namespace convkit
