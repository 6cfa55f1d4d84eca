#pragma once
// `mpirun -np N convkit train ...`: what a rank of a data-parallel run sets
// up before training (docs/distributed.md).
#include <memory>

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

}  // namespace convkit::cli
