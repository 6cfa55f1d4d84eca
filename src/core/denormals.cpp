// FTZ and DAZ are two bits of each thread's MXCSR register; a thread created
// later copies them from the thread that creates it.
#include "convkit/core/denormals.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define CONVKIT_HAVE_MXCSR 1
#endif

namespace convkit {

#ifdef CONVKIT_HAVE_MXCSR
namespace {

constexpr unsigned kFlushZero = 0x8000;       // FTZ: subnormal results become zero
constexpr unsigned kDenormalsZero = 0x0040;   // DAZ: subnormal inputs read as zero
constexpr unsigned kBoth = kFlushZero | kDenormalsZero;

void set_this_thread(bool on) {
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kBoth) : (csr & ~kBoth));
}

}  // namespace

bool set_flush_denormal(bool on) {
  set_this_thread(on);
#pragma omp parallel
  set_this_thread(on);
  return true;
}

bool flush_denormal_enabled() { return (_mm_getcsr() & kBoth) == kBoth; }

#else

bool set_flush_denormal(bool /*on*/) { return false; }
bool flush_denormal_enabled() { return false; }

#endif

}  // namespace convkit
