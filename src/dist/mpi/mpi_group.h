#pragma once
#include <memory>

#include "convkit/dist/process_group.h"

namespace convkit::dist::mpi {

// MPI's world as a ProcessGroup: starts MPI on the group's own thread (the
// only thread that calls MPI) and finalizes it there at exit. Throws Error
// when MPI cannot start. Call once per process (dist::world() does).
std::shared_ptr<ProcessGroup> make_world_group(double timeout_seconds);

}  // namespace convkit::dist::mpi
