#include "gpu/target_check.h"

#include <atomic>

#include "convkit/core/error.h"
#include "gpu/device_memory.h"

namespace convkit::CK_GPU_NS {

namespace {

std::atomic<bool> g_armed{false};

const char* op_name(int op) {
  switch (op) {
    case kCrossEntropy: return "cross_entropy";
  }
  return "a loss kernel";
}

}  // namespace

BadTargetRecord* bad_target_record() {
  // Never freed: a kernel may still hold it while the process exits.
  static BadTargetRecord* record = [] {
    auto* r = static_cast<BadTargetRecord*>(device_allocate(sizeof(BadTargetRecord)));
    const BadTargetRecord zero{};
    copy_host_to_device(r, &zero, sizeof zero);
    return r;
  }();
  g_armed.store(true, std::memory_order_relaxed);
  return record;
}

void check_recorded_targets() {
  if (!g_armed.exchange(false, std::memory_order_relaxed)) return;
  BadTargetRecord* record = bad_target_record();
  g_armed.store(false, std::memory_order_relaxed);
  BadTargetRecord seen{};
  copy_device_to_host(&seen, record, sizeof seen);
  if (seen.found == 0) return;
  const BadTargetRecord zero{};
  copy_host_to_device(record, &zero, sizeof zero);
  CK_FAIL(op_name(seen.op), ": target ", seen.value, " at position ", seen.position, " is out of range for ",
          seen.classes, " classes (expected 0 to ", seen.classes - 1,
          "); the loss kernel found it on the device, and it is reported at the first synchronisation after it");
}

}  // namespace convkit::CK_GPU_NS
