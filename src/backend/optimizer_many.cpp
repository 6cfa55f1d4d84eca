// Backend's multi-tensor optimizer updates, by default one per-tensor update
// each: what a backend without a batched kernel (cpu, whose per-tensor loop
// costs no launch) runs.
#include "convkit/backend/backend.h"

namespace convkit {

void Backend::sgd_update_many(const std::vector<SgdTensors>& tensors, SgdStep step) {
  for (const SgdTensors& t : tensors) {
    step.first_step = t.first_step;
    sgd_update(t.param, t.grad, t.momentum_buffer, step);
  }
}

void Backend::adam_update_many(const std::vector<AdamTensors>& tensors, AdamStep step) {
  for (const AdamTensors& t : tensors) adam_update(t.param, t.grad, t.exp_avg, t.exp_avg_sq, step);
}

}  // namespace convkit
