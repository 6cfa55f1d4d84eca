// cp.async's groups per CUDA thread. See convkit/sim/async_copy.h.
#include "convkit/sim/async_copy.h"

#include "convkit/core/error.h"
#include "sim/block_scheduler.h"

namespace convkit::sim {
namespace detail {

void BlockScheduler::async_copy_issue(const AsyncCopy& copy) {
  running_thread_->async_pending.push_back(copy);
  running_thread_->async_group.push_back(running_thread_->async_committed);
}

void BlockScheduler::async_copy_commit() { ++running_thread_->async_committed; }

const AsyncCopy* BlockScheduler::async_copy_retire(int keep, std::size_t* count) {
  ThreadSlot& t = *running_thread_;
  t.async_retired.clear();
  // Groups numbered below `limit` are retired; the open group never is.
  const std::uint32_t limit = t.async_committed > static_cast<std::uint32_t>(keep)
                                  ? t.async_committed - static_cast<std::uint32_t>(keep)
                                  : 0;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < t.async_pending.size(); ++i) {
    if (t.async_group[i] < limit) {
      t.async_retired.push_back(t.async_pending[i]);
    } else {
      t.async_pending[kept] = t.async_pending[i];
      t.async_group[kept] = t.async_group[i];
      ++kept;
    }
  }
  t.async_pending.resize(kept);
  t.async_group.resize(kept);
  *count = t.async_retired.size();
  return t.async_retired.data();
}

namespace {

BlockScheduler& running_block(const char* builtin, const char* file, int line) {
  BlockScheduler* scheduler = BlockScheduler::running();
  CK_CHECK(scheduler != nullptr, builtin, " called outside a kernel at ", file, ":", line,
           ": built-ins work only in code run by launch()");
  return *scheduler;
}

}  // namespace

void async_copy_issue(const AsyncCopy& copy, const char* file, int line) {
  CK_CHECK(copy.bytes == 4 || copy.bytes == 8 || copy.bytes == 16, "cp.async at ", file, ":", line,
           " copies 4, 8 or 16 bytes, not ", copy.bytes);
  CK_CHECK(reinterpret_cast<std::uintptr_t>(copy.dst) % copy.bytes == 0, "cp.async at ", file, ":", line,
           ": the shared destination ", copy.dst, " is not aligned to the copy size (", copy.bytes, " bytes)");
  running_block("cp.async", file, line).async_copy_issue(copy);
}

void async_copy_commit(const char* file, int line) {
  running_block("cp.async.commit_group", file, line).async_copy_commit();
}

const AsyncCopy* async_copy_retire(int keep, std::size_t* count, const char* file, int line) {
  CK_CHECK(keep >= 0, "cp.async.wait_group at ", file, ":", line, " takes a count >= 0, not ", keep);
  return running_block("cp.async.wait_group", file, line).async_copy_retire(keep, count);
}

}  // namespace detail
}  // namespace convkit::sim
