#pragma once
// Checks of a device group that run the same on sim (here, with thread-ranks)
// and on cuda with NCCL (test_nccl_group, on a GPU): one implementation, so
// that what the GPU run tests is what was tested here.
#include <memory>
#include <string>

#include <convkit/dist/process_group.h>

#include "ddp_test_models.h"

namespace convkit::testing {

// Why sim kernels cannot run on several thread-ranks of this build, or
// nullptr. Under AddressSanitizer, kernels launched from several std::threads
// in turn trip an ASan CHECK (asan_thread.cpp, "kCurrentStackFrameMagic") in
// the sim's fiber entry, in a later launch, even from one thread: the sim's
// fiber annotations are not yet right for that, and the tests that run sim
// thread-ranks skip there (the release build runs them).
const char* sim_thread_ranks_unsupported();
#define CONVKIT_SKIP_SIM_THREAD_RANKS_IF_UNSUPPORTED()                          \
  do {                                                                         \
    if (const char* why_ = ::convkit::testing::sim_thread_ranks_unsupported()) \
      GTEST_SKIP() << why_;                                                    \
  } while (0)

// The batches moved to `device`.
std::vector<Batch> batches_on(const std::vector<Batch>& batches, Device device);

// DDP's gradient buckets reduced over `group` (of one rank) on the model's
// own device, against plain training: max |difference| of the weights after
// 3 SGD steps. DistributedDataParallel skips the reducer for one rank, so
// this drives the reducer itself, which then copies each bucket into a
// buffer on the group's device, all-reduces it there and copies it back.
double one_rank_reducer_difference(const std::shared_ptr<dist::ProcessGroup>& group);

// A short run of collectives on a group of one rank, on its device: sums,
// broadcasts, an empty tensor, float64, 8 in flight at once, a barrier and
// a refused tensor; "" when every result was right, else what was wrong.
std::string one_rank_collectives_problem(const std::shared_ptr<dist::ProcessGroup>& group);

}  // namespace convkit::testing
