// Methods whose kernel families are being written. Each one moves to its
// family's file (see gpu_backend.h) as its kernels land; the sim backend is
// registered only when this file is gone.
#include "gpu/gpu_backend.h"
#include "gpu/gpu_conv_algorithm.h"

namespace convkit::CK_GPU_NS {







// Algorithms of gpu_conv_algorithm.h not written yet.

}  // namespace convkit::CK_GPU_NS
