#pragma once
// Process groups: the ranks of a data-parallel job and the collectives they
// run together, on MPI (cpu tensors) or on a device communicator (NCCL for
// cuda tensors, convkit/dist/device_group.h), as PyTorch's
// torch.distributed does on gloo / MPI / NCCL.
//
//   auto group = dist::world();          // MPI's world under mpirun, else one rank
//   Tensor g = ...;                      // contiguous float32 or float64 on the cpu
//   group->allreduce_sum(g)->wait();     // g now holds the sum over the ranks
//
// Order rule: collectives run in the order a rank issues them, one at a time,
// on the group's own thread; every rank must issue the same collectives in
// the same order (as with MPI and NCCL). The calls return at once, so the
// caller computes while the group communicates (DistributedDataParallel's
// gradient buckets); wait() is where a rank blocks.
//
// Failure rule: a collective that has not completed within the group's
// timeout ends the job. A collective cannot be cancelled (MPI has no way to
// take back a rank's part in one), so no rank can go on after a peer stopped
// taking part: the rank that times out prints an error naming the collective
// (its sequence number and kind) and the ranks that never reached it, and
// aborts every rank of the job (MPI_Abort). A rank that dies is reported by
// the launcher (mpirun names it and stops the others) or, failing that, by the
// same timeout. So no job hangs for longer than the timeout.
#include <cstdint>
#include <memory>
#include <string>

#include "convkit/core/tensor.h"

namespace convkit::dist {

struct ProcessGroupOptions {
  // Seconds a collective may wait for the other ranks. Generous by default:
  // a rank can be slow for a while (its first convolution's autotuning, a
  // checkpoint write on rank 0) without anything being wrong.
  double timeout_seconds = 300;
  ProcessGroupOptions& timeout(double seconds) {
    timeout_seconds = seconds;
    return *this;
  }
};

// One collective issued by this rank.
class Work {
 public:
  virtual ~Work() = default;
  // Returns once the collective has completed on this rank and its tensor
  // holds the result. Ends the process as the failure rule says when the
  // timeout passes first.
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single" (one rank, no MPI), "mpi", or a device group's library:
  // "nccl" (cuda) or "sim" (convkit/dist/device_group.h).
  virtual std::string backend() const = 0;
  // The device whose tensors the group communicates: the cpu for the MPI
  // and one-rank groups, a device group's own device.
  virtual Device device() const { return kCPU; }

  // Sums `tensor` over the ranks, in place. It must be contiguous float32 or
  // float64 on device(), with the same shape on every rank; the group reads
  // and writes it on its own thread until wait() returns, so the caller must
  // not touch it before then (the Work keeps it alive).
  virtual std::shared_ptr<Work> allreduce_sum(Tensor tensor) = 0;
  // Copies `root`'s tensor into every rank's, in place; the same conditions.
  virtual std::shared_ptr<Work> broadcast(Tensor tensor, int root) = 0;
  // Returns when every rank has called it.
  virtual void barrier() = 0;
};

// True when this process was started by an MPI launcher (mpirun, mpiexec, or
// srun with PMIx): it then takes part in a job of one or more ranks.
bool launched_by_mpi();

// The job's group, made at the first call (later calls return it and ignore
// `options`): MPI's world when launched_by_mpi(), else a group of one rank
// that communicates with no one. Throws Error when the process was launched
// by MPI but this build has no MPI (CONVKIT_MPI off), or MPI fails to start.
std::shared_ptr<ProcessGroup> world(const ProcessGroupOptions& options = {});

}  // namespace convkit::dist
