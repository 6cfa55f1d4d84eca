#pragma once
// The warpgroup tensor-core instruction of sm_90a, wgmma.mma_async, for the
// sim backend: the runtime half of kernels/warpgroup_mma.cuh.
//
// A warpgroup is 4 consecutive warps (128 threads, the first warp's index a
// multiple of 4). wgmma.mma_async.sync.aligned.m64nNkK computes
//   D (64xN, f32, in registers) = A (64xK) * B (KxN) + (scale_d ? D : 0)
// with A and B read from shared memory through 64-bit matrix descriptors
// (start address, leading and stride byte offsets, swizzle mode). K is 8
// for tf32 and 16 for bf16: 32 bytes of k per row either way. Warp w of the
// warpgroup (w = warp index % 4) holds rows 16w..16w+15 of D, laid out as
// N/8 mma.m16n8 accumulator tiles side by side: register 4j + i of lane
// (g = lane / 4, q = lane % 4) is D(16w + g + 8 (i >= 2), 8j + 2q + (i & 1)).
//
// Operand layouts (PTX ISA, "Shared Memory Matrix Layout"), K-major only:
// row x (m of A, n of B) and byte kb (0..31) of its k, from the descriptor's
// start address S, leading byte offset LBO and stride byte offset SBO:
//   no swizzle: 8x16-byte core matrices, rows 16 bytes apart;
//     S + (x / 8) * SBO + (kb / 16) * LBO + (x % 8) * 16 + kb % 16
//   128/64/32-byte swizzle (W = 128, 64, 32): rows W bytes apart in atoms of
//     8 rows; S + (x / 8) * SBO + (x % 8) * W + kb, then the address's 16-byte
//     unit (bits 4..6) is XORed with bits 7..9, masked to W / 16 units (the
//     128-byte swizzle XORs 3 bits, 64 bytes 2, 32 bytes 1). The swizzle
//     works on the shared-memory address itself, so an atom starts at a
//     multiple of 8 * W bytes; the descriptor's base offset, which relaxes
//     that, is not emulated (an error when set). LBO is not used.
// MN-major operands (the transposes bf16 allows) are not emulated: the
// kernels here stage k-contiguous tiles. The layout functions are tested
// against tables written from the PTX ISA (tests/sim/wgmma_test.cpp).
//
// Asynchrony. A wgmma is issued into the warp's open group;
// wgmma.commit_group closes it; wgmma.wait_group N returns when at most the
// N newest committed groups are pending. A GPU may read the operands at any
// moment in between, so sim reads the warp's share of them twice, at the
// issue and at the wait that retires the group, and requires the same bits:
// a stage written before a barrier published it, or refilled before the
// wait, is an error naming the element and the issue's line. The products
// are performed at the wait, never earlier: the accumulators are read and
// written then, so a kernel that touches them between the issue and the wait
// gets a wrong answer, as it may on a GPU. Groups never waited for are an
// error when the warp exits. Under the sim checks (check.h) the issue's
// reads are reported as reads of the issuing lane: racecheck then sees a
// stage read by wgmma without a barrier after other threads wrote it, in any
// thread order, and initcheck a stage never written.
//
// Arithmetic: as mma.sync's (convkit/sim/mma.h): a tf32 operand is the f32
// word with its low 13 bits dropped, products are exact, each instruction's
// K products and D are summed in double and rounded once to f32. So a chain
// of wgmma over k8 slices gives the bits of the same chain of m16n8k8
// mma.sync, which the kernel tests rely on.
//
// Shared addresses. A descriptor holds a shared-memory address; under sim
// that is dynamic_shared_address() (below) plus the byte offset into the
// block's dynamic shared memory (dev::shared_address), and operands must
// live there.
//
// Fences. wgmma.fence orders the accumulators' other accesses against the
// wgmma that use them. sim cannot see register accesses, so it asks for the
// fence where CUTLASS's mainloops put it: a warp's wgmma is an error unless a
// wgmma.fence came after the warp's last wgmma.wait_group (and before its
// first wgmma), since after a wait the kernel may have read or written the
// accumulators. Consecutive wgmma of the warp need no fence between them
// (the ISA orders their accumulator accesses). fence.proxy.async makes a
// thread's ordinary writes of shared memory (st.shared and cp.async, the
// generic proxy) visible to wgmma's reads (the async proxy); a barrier alone
// does not. Under racecheck, a wgmma that reads a word whose last writer in
// the block has not run fence.proxy.async since writing it stops the launch
// with the element, the writer and both lines.
//
// Not checked here: that the four warps of a warpgroup issue the same
// descriptors (each warp is checked on its own).
#include <cstdint>

namespace convkit::sim {

// The shared address of every block's dynamic shared memory: 0 unless set.
// On a GPU it is wherever the static shared memory and the driver's
// reservation end, so a kernel whose swizzled stages need 1024-byte
// alignment aligns them itself (dev::wgmma_aligned); tests move it to run
// that code. A multiple of 16 below 64 KB (an error otherwise), read by each
// launch as it starts.
void set_dynamic_shared_address(std::uint32_t address);
std::uint32_t dynamic_shared_address();

// Sets the address for the lifetime of the object, then restores the previous one.
class ScopedDynamicSharedAddress {
 public:
  explicit ScopedDynamicSharedAddress(std::uint32_t address) : previous_(dynamic_shared_address()) {
    set_dynamic_shared_address(address);
  }
  ~ScopedDynamicSharedAddress() { set_dynamic_shared_address(previous_); }
  ScopedDynamicSharedAddress(const ScopedDynamicSharedAddress&) = delete;
  ScopedDynamicSharedAddress& operator=(const ScopedDynamicSharedAddress&) = delete;

 private:
  std::uint32_t previous_;
};

enum class WgmmaType : int { tf32 = 1, bf16 = 2 };
// The descriptor's layout-type field (bits 62..63).
enum class WgmmaSwizzle : int { none = 0, bytes128 = 1, bytes64 = 2, bytes32 = 3 };

// A matrix descriptor's fields, in bytes (the descriptor holds them >> 4).
struct WgmmaDescriptor {
  std::uint32_t start = 0;    // bits 0..13
  std::uint32_t leading = 0;  // bits 16..29
  std::uint32_t stride = 0;   // bits 32..45
  unsigned base_offset = 0;   // bits 49..51
  WgmmaSwizzle swizzle = WgmmaSwizzle::none;
};
WgmmaDescriptor decode_wgmma_descriptor(std::uint64_t desc);

// The shared-memory byte address of byte kb (0..31) of k in row x of a
// K-major operand described by d (the layouts above).
std::uint32_t wgmma_kmajor_address(const WgmmaDescriptor& d, int x, int kb);

// One lane's part in a wgmma: its accumulators (n / 2 floats) and the
// warpgroup-uniform operands.
struct WgmmaLane {
  float* d;
  std::uint64_t desc_a, desc_b;
  int n;  // 8..256, a multiple of 8
  WgmmaType type;
  bool scale_d;
  const void* pc = nullptr;  // the kernel's call site, for the checks' reports (set by wgmma_issue)
};

namespace detail {
// Runtime entry points (src/sim/wgmma.cpp); every lane of the warp calls them
// together.
void wgmma_fence(const char* file, int line);
void wgmma_issue(const WgmmaLane& lane, const char* file, int line);
void wgmma_commit(const char* file, int line);
void wgmma_wait(int keep, const char* file, int line);
// fence.proxy.async.shared::cta by the running thread (one thread, not a
// warp meeting).
void fence_proxy_async(const char* file, int line);
// p's shared address: dynamic_shared_address() plus its byte offset in the
// running block's dynamic shared memory; an error naming the call site when
// p is not in it.
std::uint32_t shared_offset(const void* p, const char* file, int line);
}  // namespace detail

}  // namespace convkit::sim
