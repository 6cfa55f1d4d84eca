#pragma once
// cp.async for the sim backend: the runtime half of kernels/async_copy.cuh.
//
// On sm_80+ `cp.async` starts a copy from global to shared memory and returns
// at once; `cp.async.commit_group` closes the calling thread's open group of
// copies, and `cp.async.wait_group N` waits until at most the N newest
// committed groups are unfinished. Only then are the bytes in shared memory,
// and only for the calling thread: other threads see them after a barrier.
//
// sim keeps each CUDA thread's copies in a queue and lands them, in issue
// order, when a wait_group retires their group: never earlier. So a kernel that
// reads a stage before waiting for it reads what was there before (stale data,
// or an initcheck report for never-written shared memory), and the landing is
// a store by the issuing thread at the wait, which racecheck orders against
// other threads' reads only through a __syncthreads. Copies never waited for
// never land (on a GPU they land at some unknown time, which no correct
// kernel can rely on).
//
// The source is read when the copy is issued (PTX allows any time before the
// group completes, and kernels here never write what they copy from), by the
// kernel's own instrumented code, so the profile and memcheck see the global
// read where it is issued and the shared write where it lands.
#include <cstddef>
#include <cstdint>

namespace convkit::sim::detail {

// One issued copy: where it lands and the bytes it carries (the source bytes,
// zero-filled past src-size).
struct AsyncCopy {
  void* dst = nullptr;
  std::uint32_t bytes = 0;  // 4, 8 or 16
  alignas(16) unsigned char data[16] = {};
};

// Adds a copy to the calling thread's open group.
void async_copy_issue(const AsyncCopy& copy, const char* file, int line);
// cp.async.commit_group: the open group becomes the newest committed one.
void async_copy_commit(const char* file, int line);
// cp.async.wait_group `keep`: removes the calling thread's copies of every
// committed group but the `keep` newest and returns them, oldest first, in
// storage valid until its next call; the caller stores them.
const AsyncCopy* async_copy_retire(int keep, std::size_t* count, const char* file, int line);

}  // namespace convkit::sim::detail
