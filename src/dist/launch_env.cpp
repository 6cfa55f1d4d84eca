// launched_by_mpi(): what the launchers leave in a rank's environment.
#include <cstdlib>

#include "convkit/dist/process_group.h"

namespace convkit::dist {

bool launched_by_mpi() {
  // OpenMPI's mpirun, the PMI of MPICH's Hydra (and Intel MPI), and PMIx, which
  // srun and OpenMPI 5 set; any one is enough.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace convkit::dist
