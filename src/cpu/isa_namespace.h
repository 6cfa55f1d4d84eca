#pragma once
// Included by every file compiled once per ISA (cmake/ConvkitIsa.cmake):
// declares this copy's entry points in its namespace, convkit::cpu::
// CONVKIT_ISA_NS, so that the copy's calls among its own files (winograd's
// products on the tap kernels, say) stay within the copy rather than going
// through the dispatch of cpu/isa_dispatch.h.
#ifndef CONVKIT_ISA_NS
#error "this file is compiled once per ISA by convkit_isa_variants (cmake/ConvkitIsa.cmake), which defines CONVKIT_ISA_NS"
#endif
#include <cstdint>

#include "convkit/backend/backend.h"
#include "cpu/conv/implementations.h"
#include "cpu/cpu_pool.h"

namespace convkit::cpu::CONVKIT_ISA_NS {
#include "cpu/isa_entry_points.h"
}  // namespace convkit::cpu::CONVKIT_ISA_NS
