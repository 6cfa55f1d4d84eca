#pragma once
// Class targets checked where they are read, on the device. A loss kernel
// that finds a target outside [0, classes) records it here instead of reading
// past the row, and the host raises the error at its next synchronisation
// (src/gpu/target_check.h), so a training step needs no device-to-host copy
// to validate its labels. Only the first recorded target is kept: a CAS on
// `found` elects one writer, so with several bad targets in flight any one of
// them may be the one reported.
#include <cstdint>

#include "convkit/sim/cuda_compat.h"

namespace convkit::CK_GPU_NS {

struct BadTargetRecord {
  int found;  // 0 until a kernel records a bad target, then 1
  int op;     // BadTargetOp of the kernel that found it
  std::int64_t position;
  std::int64_t value;
  std::int64_t classes;
};

enum BadTargetOp : int { kCrossEntropy = 0 };

// Returns whether `target` is a valid class; records it when it is not.
// `record` may be null (a caller that has checked on the host).
__device__ __forceinline__ bool check_target(BadTargetRecord* record, int op, std::int64_t position,
                                             std::int64_t target, std::int64_t classes) {
  if (target >= 0 && target < classes) return true;
  if (record != nullptr && atomicCAS(&record->found, 0, 1) == 0) {
    record->op = op;
    record->position = position;
    record->value = target;
    record->classes = classes;
  }
  return false;
}

}  // namespace convkit::CK_GPU_NS
