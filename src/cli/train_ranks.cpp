#include "cli/train_ranks.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "convkit/backend/backend.h"
#include "convkit/dist/device_group.h"

namespace convkit::cli {

namespace {

// Ranks on this host, as the launchers announce them (OpenMPI, MPICH's Hydra).
int ranks_on_this_host(int fallback) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return fallback;
}

// The cores this process may run on: the launcher may have bound it to some.
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

std::shared_ptr<dist::ProcessGroup> join_training_job() {
  if (!dist::launched_by_mpi()) return nullptr;
  std::shared_ptr<dist::ProcessGroup> group = dist::world();
  if (group->size() == 1) return group;
  if (!std::getenv("OMP_NUM_THREADS")) {
    const int host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int share = std::max(1, host_cores / ranks_on_this_host(group->size()));
    omp_set_num_threads(std::min(share, usable_cores()));
  }
  if (group->rank() != 0) {
    std::fflush(stdout);
    if (!std::freopen("/dev/null", "w", stdout))
      std::fprintf(stderr, "convkit train (rank %d): could not silence standard output\n", group->rank());
  }
  return group;
}

RankDevice choose_rank_device(Device requested, const std::shared_ptr<dist::ProcessGroup>& job) {
  RankDevice out{requested, nullptr, ""};
  if (!job || requested.type != DeviceType::cuda) return out;
  int usable = 0;
  for (const BackendInfo& info : list_backends())
    if (info.usable && Device::parse(info.name).type == DeviceType::cuda) ++usable;
  if (usable > 0) out.device = Device(DeviceType::cuda, job->rank() % usable);
  std::string why;
  if (!dist::device_group_available(out.device, &why)) {
    out.note = "gradients: over " + job->backend() + ", staged through cpu buffers (" + why + ")";
    return out;
  }
  out.gradient_group = dist::device_group(out.device, job);
  out.note = "gradients: " + out.gradient_group->backend() + " on " + out.device.str() + " of each of the " +
             std::to_string(job->size()) + " rank" + (job->size() == 1 ? "" : "s");
  return out;
}

}  // namespace convkit::cli
