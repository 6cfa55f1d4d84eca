// dist::world(): the job's group, made once per process.
#include <mutex>

#include "convkit/core/error.h"
#include "convkit/dist/process_group.h"
#include "dist/single_group.h"
#include "dist/timeout_setting.h"
#if CONVKIT_HAVE_MPI
#include "dist/mpi/mpi_group.h"
#endif

namespace convkit::dist {
namespace {

std::shared_ptr<ProcessGroup> make_world(double timeout_seconds) {
  if (!launched_by_mpi()) return make_single_group();
#if CONVKIT_HAVE_MPI
  return mpi::make_world_group(timeout_seconds);
#else
  (void)timeout_seconds;
  // Running on as one rank would give N copies of one job, each training
  // on all the data and writing the same checkpoints.
  CK_FAIL("dist::world(): this process was started by an MPI launcher (mpirun, mpiexec or srun), but convkit was "
          "built without MPI (CONVKIT_MPI=OFF); rebuild it with -DCONVKIT_MPI=ON, or run it without the launcher");
#endif
}

}  // namespace

std::shared_ptr<ProcessGroup> world(const ProcessGroupOptions& options) {
  static std::mutex mutex;
  static std::shared_ptr<ProcessGroup> group;
  // MPI starts at most once per process, so a failure is remembered too.
  static std::string failure;
  std::lock_guard lock(mutex);
  if (group) return group;
  CK_CHECK(failure.empty(), failure);
  // A bad timeout is the caller's to fix and retry; MPI failing to start is not.
  const double timeout_seconds = resolve_timeout_seconds(options);
  try {
    group = make_world(timeout_seconds);
  } catch (const Error& e) {
    failure = e.what();
    throw;
  }
  return group;
}

}  // namespace convkit::dist
