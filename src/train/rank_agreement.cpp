#include "train/rank_agreement.h"

#include "convkit/dist/process_group.h"
#include "convkit/ops/factory.h"

namespace convkit::train::detail {

namespace {

bool alone(const dist::ProcessGroup* group) { return group == nullptr || group->size() == 1; }

}  // namespace

StepVerdict agree_on_step(dist::ProcessGroup* group, bool local_nonfinite, bool local_stop) {
  if (alone(group)) return {local_nonfinite, local_stop};
  Tensor flags = zeros({2}, TensorOptions(DType::float64));
  auto* f = flags.data<double>();
  f[0] = local_nonfinite ? 1.0 : 0.0;
  f[1] = local_stop ? 1.0 : 0.0;
  group->allreduce_sum(flags)->wait();
  return {f[0] > 0, f[1] > 0};
}

void sum_over_ranks(dist::ProcessGroup* group, double& loss_sum, double& correct,
                    std::int64_t& examples) {
  if (alone(group)) return;
  Tensor sums = zeros({3}, TensorOptions(DType::float64));
  auto* s = sums.data<double>();
  s[0] = loss_sum;
  s[1] = correct;
  s[2] = static_cast<double>(examples);  // exact below 2^53 examples
  group->allreduce_sum(sums)->wait();
  loss_sum = s[0];
  correct = s[1];
  examples = static_cast<std::int64_t>(s[2]);
}

}  // namespace convkit::train::detail
