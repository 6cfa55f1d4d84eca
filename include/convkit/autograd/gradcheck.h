#pragma once
// Finite-difference check of analytic gradients, like torch.autograd.gradcheck.
#include <functional>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit::autograd {

struct GradcheckOptions {
  double eps = 1e-6;    // central-difference step (in the input's units)
  double atol = 1e-5;
  double rtol = 1e-3;
  // Check at most this many elements per input (chosen evenly); 0 = all.
  std::int64_t max_elements = 0;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string message;  // first mismatch: input, element, analytic, numeric
};

// fn maps the inputs to one tensor. Its output is reduced with a fixed random
// projection <out, v>, so one backward gives the whole vector-Jacobian product;
// numeric derivatives come from central differences computed in float64 math.
// Inputs with requires_grad are checked. Use float64 inputs for tight checks;
// float32 inputs need eps around 1e-2 and looser tolerances.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions opts = {});

}  // namespace convkit::autograd
