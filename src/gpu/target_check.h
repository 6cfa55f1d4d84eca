#pragma once
// The device record where loss kernels note a class target outside
// [0, classes) (kernels/target_check.cuh), and the host's reading of it. The
// ops layer checks targets on the host only for the cpu; on the GPU backends
// the kernel that reads the targets checks them, and the error surfaces at the
// first synchronisation after it (GpuBackend::copy_to_host, ::synchronize),
// so a training step validates its labels without waiting for the device.
#include "kernels/target_check.cuh"

namespace convkit::CK_GPU_NS {

// The process's record, zeroed; allocated on first use. Each call arms the
// next check_recorded_targets(), which reads it only when armed.
BadTargetRecord* bad_target_record();

// When a kernel given the record has run since the last check: reads the
// record (one small device-to-host copy), clears it, and throws Error naming
// the op, the target, its position and the class count if one was recorded.
void check_recorded_targets();

}  // namespace convkit::CK_GPU_NS
