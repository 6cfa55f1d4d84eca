#include "dist/end_job.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#if CONVKIT_HAVE_MPI
#include <mpi.h>
#endif

namespace convkit::dist::detail {
namespace {

std::mutex g_mutex;
EndJobHandler g_handler;

}  // namespace

EndJobHandler set_end_job_handler(EndJobHandler handler) {
  std::lock_guard lock(g_mutex);
  std::swap(g_handler, handler);
  return handler;
}

void end_job(const std::string& line) {
  EndJobHandler handler;
  {
    std::lock_guard lock(g_mutex);
    handler = g_handler;
  }
  if (handler) handler(line);  // a test's: it throws
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
#if CONVKIT_HAVE_MPI
  // The MPI group's thread is the one that calls MPI, but MPI_Abort is
  // what stops the other ranks, and OpenMPI honours it from any thread.
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::abort();
}

}  // namespace convkit::dist::detail
