#pragma once
#include <memory>

#include "convkit/dist/process_group.h"

namespace convkit::dist {

// The group of a process that no MPI launcher started: rank 0 of 1. Its
// collectives leave the tensor as it is (the sum over one rank, the root's
// own copy), but check their arguments as the MPI group does, so a program
// that is wrong on N ranks is wrong on one too.
std::shared_ptr<ProcessGroup> make_single_group();

}  // namespace convkit::dist
