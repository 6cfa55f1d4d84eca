#pragma once
// `mpirun -np N convkit train ...`: what a rank of a data-parallel run sets
// up before training (docs/distributed.md).
#include <memory>
#include <string>

#include "convkit/dist/process_group.h"

namespace convkit::cli {

// The job's process group when the tool was started by an MPI launcher, else
// null (plain training). For a group of several ranks it also
//  - gives each rank an equal share of the machine's cores as OpenMP threads
//    (unless OMP_NUM_THREADS says otherwise), since N ranks that each take
//    every core would run N times oversubscribed;
//  - silences standard output on every rank but 0, which speaks for the job
//    (errors still reach standard error, prefixed with the rank).
std::shared_ptr<dist::ProcessGroup> join_training_job();

// Where a rank of the job trains and how its gradients travel
// (docs/distributed.md, "The NCCL group"). With a model on cuda, rank r
// trains on cuda:(r mod the usable cuda devices), one GPU per rank, and its
// gradients go over a device group on it (NCCL) when the cuda plugin has
// one; the group is made even for one rank, so that `mpirun -np 1` checks
// NCCL. Otherwise, and on cpu and sim, gradients travel over `job` (MPI),
// staged through cpu buffers. `note` receives one line saying which.
struct RankDevice {
  Device device;
  std::shared_ptr<dist::ProcessGroup> gradient_group;  // null: over `job`
  std::string note;
};
RankDevice choose_rank_device(Device requested, const std::shared_ptr<dist::ProcessGroup>& job);

}  // namespace convkit::cli
