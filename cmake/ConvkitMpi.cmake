# MPI for the dist layer (include/convkit/dist/, docs/distributed.md).
# CONVKIT_MPI defaults to ON where MPI is found. OFF builds a library whose
# dist::world() is the one-rank group and refuses a process that mpirun
# started, rather than silently running N copies of one job.
#
# Only MPI's C interface is used: the C++ bindings were dropped by MPI-3, and
# the project enables C++ alone, so FindMPI is asked for its CXX component
# with the bindings skipped (MPI::MPI_CXX then links libmpi only).
set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "Use MPI's C interface from C++")
find_package(MPI QUIET COMPONENTS CXX)
option(CONVKIT_MPI "Build the MPI process group (dist::world() under mpirun)" ${MPI_CXX_FOUND})
if(CONVKIT_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
  set(CONVKIT_HAVE_MPI 1)
  # For convkit.pc's Libs.private: a static link needs libmpi too, and not
  # the C++ bindings' library, which the wrapper names and nothing uses.
  set(convkit_pc_mpi_libs "")
  set(mpi_libs ${MPI_CXX_LIBRARIES})
  list(FILTER mpi_libs EXCLUDE REGEX "mpi_?cxx")
  foreach(lib IN LISTS mpi_libs)
    string(APPEND convkit_pc_mpi_libs " ${lib}")
  endforeach()
else()
  set(CONVKIT_HAVE_MPI 0)
  set(convkit_pc_mpi_libs "")
endif()
message(STATUS "convkit: CONVKIT_MPI=${CONVKIT_MPI}")
