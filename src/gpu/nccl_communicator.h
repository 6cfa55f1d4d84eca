#pragma once
// The cuda backend's device communicator: NCCL, linked into the plugin alone
// (libconvkit_cuda.so) when the build finds it (CONVKIT_NCCL, default AUTO).
// Without it these say so: nccl_support() is not ok and the makers throw.
#include <memory>

#include "convkit/backend/backend.h"

namespace convkit::gpu {

// "nccl 2.28.9 (built with 2.28.9)", or why this plugin has no NCCL.
CommunicatorSupport nccl_support();
// ncclGetUniqueId.
CommunicatorId make_nccl_communicator_id();
// ncclCommInitRankConfig on `device`, non-blocking, polled until every rank
// has joined or timeout_seconds have passed (then aborted, and Error).
std::unique_ptr<DeviceCommunicator> make_nccl_communicator(const CommunicatorId& id, int rank, int size,
                                                           Device device, double timeout_seconds);

}  // namespace convkit::gpu
