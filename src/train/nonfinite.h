#pragma once
// fit()'s check for a NaN or Inf loss or gradient. On the cpu each tensor
// is scanned in place, one vectorised pass summing x * 0 (0 for finite x,
// NaN otherwise). On other devices the check is one device scalar per step,
// loss + sum of every gradient's sum in float64, read once: NaN and Inf
// survive any sum, so a finite total clears the step with one reduction per
// gradient and one device wait. Only when the check fails does
// locate_nonfinite() look element by element (on the cpu) for the tensor to
// blame; a device total that overflowed although every element is finite
// clears the step too.
#include <cstdint>
#include <optional>
#include <string>

#include "convkit/core/tensor.h"

namespace convkit::nn { class Module; }

namespace convkit::train::detail {

// Whether the loss and every parameter gradient are finite (on devices
// other than the cpu, as far as one summed scalar can tell; see above).
bool step_sum_is_finite(const nn::Module& model, const Tensor& loss);

// The first non-finite tensor of the step, in the order the trouble spreads:
// a parameter or buffer value (broken by an earlier update), a layer's
// forward output on `images` (rerun unit by unit without autograd), the
// loss, a parameter gradient. nullopt when every element is finite.
// The text names the layer (module path) and the tensor, e.g.
// "the gradient of 'weight' in layer 'features.0' (3 NaN, 0 Inf of 288 values)".
std::optional<std::string> locate_nonfinite(nn::Module& model, const Tensor& images,
                                            const Tensor& loss);

}  // namespace convkit::train::detail
