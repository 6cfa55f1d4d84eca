#pragma once
// Copies rank `root`'s values of a list of tensors into every rank's, as
// DistributedDataParallel does for the parameters and buffers at
// construction and for the buffers before each training forward.
#include <vector>

#include "convkit/core/tensor.h"
#include "convkit/dist/process_group.h"

namespace convkit::dist::detail {

// The tensors may be on any device and of any dtype a module holds (float32,
// float64, int64). The group takes contiguous floats on its device, so they
// are staged through at most two flat buffers there, one collective each:
// float32 tensors in a float32 one, the rest in a float64 one (exact for
// int64 counters below 2^53). Written in place under no-grad, so parameters
// keep their identity.
void broadcast_tensors(ProcessGroup& group, const std::vector<Tensor>& tensors, int root);

}  // namespace convkit::dist::detail
