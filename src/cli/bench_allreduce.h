#pragma once
// `convkit bench allreduce` (under mpirun): the all-reduce latency and
// bandwidth of the job's process group, by message size.
#include "cli/commands.h"

namespace convkit::cli {

int bench_allreduce(const Args& args);

}  // namespace convkit::cli
