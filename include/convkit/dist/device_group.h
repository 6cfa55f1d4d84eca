#pragma once
// A process group whose collectives run between the ranks' devices, on the
// device's own communicator: NCCL for cuda tensors (one GPU per rank), and on
// sim the same calls emulated between thread-ranks of one process, which is
// how everything above NCCL is tested without a GPU (docs/distributed.md).
//
//   auto world = dist::world();                               // MPI: the ranks
//   const Device gpu("cuda:" + std::to_string(world->rank() % gpus));
//   auto group = dist::device_group(gpu, world);              // "nccl"
//   group->allreduce_sum(grad_on_gpu)->wait();
//
// The ProcessGroup rules hold as written in process_group.h: collectives in
// issue order, the same on every rank; calls return at once; wait() polls
// against the timeout, counted from the issue. The failure rule differs only
// in how much it can tell: on a timeout the rank aborts its communicator and
// ends the job (MPI_Abort under mpirun) with a line naming the collective and
// its number; the emulation also names the ranks that never issued it, NCCL
// cannot. A collective that fails (NCCL's asynchronous error: a peer died)
// ends the job the same way.
#include <memory>
#include <string>

#include "convkit/dist/process_group.h"

namespace convkit::dist {

// True when `device`'s backend makes communicators: always on sim, on cuda
// when the plugin was built with NCCL (CONVKIT_NCCL). Otherwise false, with
// the reason in *why when given.
bool device_group_available(Device device, std::string* why = nullptr);

// This rank's group on `device`, over the same ranks as `bootstrap`: rank 0
// makes the communicator's id, `bootstrap` broadcasts it, and each rank
// joins on its own device. Every rank of `bootstrap` must call it, as a
// collective of `bootstrap`. Throws Error when the backend has no
// communicator, or not every rank joined within the timeout.
std::shared_ptr<ProcessGroup> device_group(Device device, const std::shared_ptr<ProcessGroup>& bootstrap,
                                           const ProcessGroupOptions& options = {});

}  // namespace convkit::dist
