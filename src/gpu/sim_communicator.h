#pragma once
// The sim backend's device communicator: NCCL's calls emulated between
// thread-ranks of one process, so that the process groups and
// DistributedDataParallel above them are tested on machines without a GPU.
// sim is to NCCL what it is to CUDA: the same calls, run on the CPU.
//
// A collective completes when the last rank issues it: that rank sums the
// ranks' tensors in rank order (or copies the root's) into every rank's,
// while the others return at once, as NCCL's enqueue does. Where NCCL would
// hang or corrupt memory the emulation says what went wrong: ranks that
// issue different collectives at one number fail it with an Error, an id
// from another process is refused, and issued_by_rank() tells a stalled
// collective's report which ranks never reached it.
#include <memory>

#include "convkit/backend/backend.h"

namespace convkit::gpu {

// An id that names this process and a fresh clique of ranks in it.
CommunicatorId make_sim_communicator_id();

// Joins the clique `id` names as `rank` of `size`; returns once all `size`
// ranks have joined, or throws Error naming the missing ranks after
// timeout_seconds.
std::unique_ptr<DeviceCommunicator> make_sim_communicator(const CommunicatorId& id, int rank, int size,
                                                          Device device, double timeout_seconds);

}  // namespace convkit::gpu
