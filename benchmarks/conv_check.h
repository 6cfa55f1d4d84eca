#pragma once
// Checks a convolution result against float64 sums straight from the
// definition, at a sample of its elements, before bench_conv times it.
//
// Sampling keeps the check cheap at full batch (a backward-weights element of
// a 128-image layer sums ~10^6 products): the sample always holds the first
// and last elements and is topped up with seeded random ones, as many as fit
// in a budget of products (at least 32, at most 1024 elements).
//
// Error measure. Each reference element is a sum of products; next to it we
// sum |products| (its magnitude). max_rel_error is the largest
// |got - reference| / magnitude over the sample: the relative error a
// correctly rounded float32 sum of those products would have is ~1e-7, an
// indexing bug gives ~1. The pass/fail tolerance is the one the algorithm
// tests use (tests/cpu/conv/conv_tolerance.h): gamma_{n+2} * magnitude per
// element for algorithms that sum the products (direct, im2col_gemm),
// 16 * gamma_{n+2} * (largest sampled magnitude) for winograd, whose tile
// transforms mix neighbouring elements, and 16 * epsilon * (largest sampled
// magnitude) for fft, whose error is bounded norm-wise.
#include <cstdint>
#include <string>
#include <vector>

#include "convkit/backend/conv_desc.h"

namespace convkit::bench {

struct CheckResult {
  std::size_t checked = 0;   // elements compared
  std::size_t failures = 0;  // elements outside the tolerance
  double max_rel_error = 0;
  std::string worst;  // the worst element when failures > 0
  bool ok() const { return failures == 0; }
};

// Operands of one pass as float32 host copies in Conv2dDesc's layouts
// (x N*C*H*W, w K*(C/groups)*R*S, b K, y and dy N*K*P*Q). Unused ones stay empty.
struct PassData {
  std::vector<float> x, w, b, dy;  // inputs
  std::vector<float> out;          // y, dx or dw
  std::vector<float> db;           // bias gradient (backward-weights with bias)
};

// operand_unit: the unit roundoff the pass rounded its operands to before
// multiplying (2^-11 for tf32 on the tensor cores; 0, the default, for strict
// float32). Each product may then be off by 2u + u^2 relative, which widens
// the tolerance by that much of the magnitude: element by element for the
// algorithms that sum products (tests/gpu/tensor_core_tolerance.h), of the
// largest magnitude for the transform algorithms and cuDNN (checked
// norm-wise: in TF32 mode cuDNN's rows failed the strict bound, H200 lease 2).
CheckResult check_conv_pass(const Conv2dDesc& desc, ConvAlgo algo, ConvPass pass, const PassData& data,
                            double operand_unit = 0);

}  // namespace convkit::bench
