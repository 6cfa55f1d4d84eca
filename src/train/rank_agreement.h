#pragma once
// What the ranks of a data-parallel fit() must agree on, so that each takes
// the same branch and so issues the same collectives (the process group's
// order rule, convkit/dist/process_group.h): whether a step's update goes
// ahead (a rank's own loss can be non-finite while the averaged gradients
// are not) and whether training stops here (a signal reaches the ranks at
// different steps). And the sums behind an epoch's metrics, which cover the
// examples of every rank.
#include <cstdint>
#include <memory>

namespace convkit::dist { class ProcessGroup; }

namespace convkit::train::detail {

struct StepVerdict {
  bool any_nonfinite = false;  // some rank saw a non-finite loss or gradient
  bool any_stop = false;       // some rank was asked to stop
};

// One small allreduce per step; with no group (or one rank) the local view.
StepVerdict agree_on_step(dist::ProcessGroup* group, bool local_nonfinite, bool local_stop);

// Sums (loss * examples, correct, examples) over the ranks, in place.
void sum_over_ranks(dist::ProcessGroup* group, double& loss_sum, double& correct,
                    std::int64_t& examples);

}  // namespace convkit::train::detail
