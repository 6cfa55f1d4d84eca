// wgmma.mma_async for the sim backend: the warp's groups, the descriptors and
// the shared-memory layouts they describe. See convkit/sim/wgmma.h.
#include "convkit/sim/wgmma.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <ios>
#include <utility>
#include <vector>

#include "convkit/core/error.h"
#include "convkit/sim/mma.h"
#include "sim/block_scheduler.h"

namespace convkit::sim {

namespace {
std::atomic<std::uint32_t> chosen_dynamic_shared_address{0};
}  // namespace

void set_dynamic_shared_address(std::uint32_t address) {
  CK_CHECK(address % 16 == 0 && address < 65536, "sim: the shared address of dynamic shared memory must be a "
           "multiple of 16 below 65536, not ", address);
  chosen_dynamic_shared_address.store(address);
}

std::uint32_t dynamic_shared_address() { return chosen_dynamic_shared_address.load(); }

WgmmaDescriptor decode_wgmma_descriptor(std::uint64_t desc) {
  WgmmaDescriptor d;
  d.start = static_cast<std::uint32_t>(desc & 0x3fffu) << 4;
  d.leading = static_cast<std::uint32_t>((desc >> 16) & 0x3fffu) << 4;
  d.stride = static_cast<std::uint32_t>((desc >> 32) & 0x3fffu) << 4;
  d.base_offset = static_cast<unsigned>((desc >> 49) & 0x7u);
  d.swizzle = static_cast<WgmmaSwizzle>((desc >> 62) & 0x3u);
  return d;
}

std::uint32_t wgmma_kmajor_address(const WgmmaDescriptor& d, int x, int kb) {
  const auto ux = static_cast<std::uint32_t>(x), ukb = static_cast<std::uint32_t>(kb);
  if (d.swizzle == WgmmaSwizzle::none) return d.start + ux / 8 * d.stride + ukb / 16 * d.leading + ux % 8 * 16 + ukb % 16;
  // W bytes per row; the 16-byte units of a row that the swizzle permutes.
  const std::uint32_t width = d.swizzle == WgmmaSwizzle::bytes128 ? 128 : d.swizzle == WgmmaSwizzle::bytes64 ? 64 : 32;
  const std::uint32_t units = width / 16 - 1;
  const std::uint32_t address = d.start + ux / 8 * d.stride + ux % 8 * width + ukb;
  return address ^ (((address >> 7) & units) << 4);
}

namespace detail {
namespace {

const char* type_name(WgmmaType t) { return t == WgmmaType::tf32 ? "tf32" : "bf16"; }

BlockScheduler& running_block(const char* builtin, const char* file, int line) {
  BlockScheduler* scheduler = BlockScheduler::running();
  CK_CHECK(scheduler != nullptr, builtin, " called outside a kernel at ", file, ":", line,
           ": built-ins work only in code run by launch()");
  return *scheduler;
}

void check_descriptor(const WgmmaDescriptor& d, const char* which, const SourceSite& site) {
  CK_CHECK(d.base_offset == 0, "wgmma.mma_async issued at ", site.file, ":", site.line, ": descriptor ", which,
           " has base offset ", d.base_offset, ", which sim does not emulate: start swizzled tiles at a multiple of "
           "1024 bytes");
}

// Where one warp's share of a wgmma lies in the block's dynamic shared
// memory, which starts at shared address `base`: its 16 rows of A (rows
// 16w..16w+15 of the warpgroup's 64) and all N rows of B, K elements each,
// A's first. The bits there are the operands.
struct OperandPlaces {
  std::vector<std::uint32_t> address;  // per element, the byte offset from `base`
  int element_bytes = 4, K = 8;

  OperandPlaces(const WgmmaLane& op, unsigned warp_in_group, std::uint32_t base, std::size_t shared_bytes,
                const SourceSite& site) {
    const WgmmaDescriptor da = decode_wgmma_descriptor(op.desc_a), db = decode_wgmma_descriptor(op.desc_b);
    check_descriptor(da, "A", site);
    check_descriptor(db, "B", site);
    element_bytes = op.type == WgmmaType::tf32 ? 4 : 2;
    K = op.type == WgmmaType::tf32 ? 8 : 16;
    address.reserve(static_cast<std::size_t>((16 + op.n) * K));
    const auto add = [&](const WgmmaDescriptor& d, const char* which, int x) {
      for (int k = 0; k < K; ++k) {
        const std::uint32_t at = wgmma_kmajor_address(d, x, k * element_bytes);
        CK_CHECK(at >= base, "wgmma.mma_async issued at ", site.file, ":", site.line, ": ", which, "(", x, ", k ",
                 k, ") is at shared byte ", at, ", before the block's dynamic shared memory (shared bytes ", base,
                 " on)");
        CK_CHECK(at - base + static_cast<std::uint32_t>(element_bytes) <= shared_bytes, "wgmma.mma_async issued at ",
                 site.file, ":", site.line, ": ", which, "(", x, ", k ", k, ") is at shared byte ", at,
                 ", past the block's dynamic shared memory (", shared_bytes, " bytes from shared byte ", base, ")");
        address.push_back(at - base);
      }
    };
    for (int r = 0; r < 16; ++r) add(da, "A", 16 * static_cast<int>(warp_in_group) + r);
    for (int n = 0; n < op.n; ++n) add(db, "B", n);
  }

  std::vector<std::uint32_t> read(const unsigned char* smem) const {
    std::vector<std::uint32_t> bits(address.size(), 0);
    for (std::size_t i = 0; i < address.size(); ++i) std::memcpy(&bits[i], smem + address[i], element_bytes);
    return bits;
  }
};

// The operand's value as the tensor core reads it.
double operand_value(WgmmaType type, std::uint32_t bits) {
  return type == WgmmaType::tf32 ? tf32_operand(bits) : bf16_to_float(static_cast<std::uint16_t>(bits));
}

// Performs one wgmma for warp `warp_in_group` (0..3) of its warpgroup. Its
// operands must hold the bits they held at the issue: shared memory that
// changes in between was either not yet published when the wgmma was issued
// (a missing barrier) or refilled before the wait that retires it, and on a
// GPU the product would read either.
void perform(const PendingWgmma& w, unsigned warp_in_group, const unsigned char* smem, std::uint32_t base,
             std::size_t bytes) {
  const OperandPlaces places(w.op, warp_in_group, base, bytes, w.site);
  const std::vector<std::uint32_t> bits = places.read(smem);
  CK_CHECK(bits.size() == w.operands.size(), "wgmma: the operands read at the issue were lost");
  for (std::size_t i = 0; i < bits.size(); ++i) {
    if (bits[i] == w.operands[i]) continue;
    const std::size_t a_elements = static_cast<std::size_t>(16 * places.K);
    const bool in_a = i < a_elements;
    const std::size_t e = in_a ? i : i - a_elements;
    CK_FAIL("wgmma.mma_async issued at ", w.site.file, ":", w.site.line, ": ", in_a ? "A" : "B", "(",
            e / static_cast<std::size_t>(places.K) + (in_a ? 16 * warp_in_group : 0), ", k ",
            e % static_cast<std::size_t>(places.K), ") at shared byte ", base + places.address[i],
            " changed between the issue and the wgmma.wait_group that retired it: the stage was written before "
            "a barrier published it, or refilled before this wait");
  }
  const int K = places.K, N = w.op.n;
  const auto value = [&](std::size_t i) { return operand_value(w.op.type, bits[i]); };
  for (unsigned lane = 0; lane < 32; ++lane) {
    const int g = static_cast<int>(lane / 4), q = static_cast<int>(lane % 4);
    float* d = w.d[lane];
    for (int j = 0; j < N / 8; ++j) {
      for (int i = 0; i < 4; ++i) {
        const int r = g + (i >= 2 ? 8 : 0), n = 8 * j + 2 * q + (i & 1);
        double acc = w.op.scale_d ? d[4 * j + i] : 0.0;
        for (int k = 0; k < K; ++k)
          acc += value(static_cast<std::size_t>(r * K + k)) * value(static_cast<std::size_t>((16 + n) * K + k));
        d[4 * j + i] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace

void BlockScheduler::wgmma_complete(WarpOpKind kind, unsigned warp_index, ThreadSlot* lanes) {
  const SourceSite site = lanes[0].site;
  // .sync.aligned: the whole warp, at the same instruction.
  CK_CHECK(warps_[warp_index].absent == 0, "warp ", warp_index, ": ", warp_op_name(kind), " at ", site.file, ":",
           site.line, " needs all 32 lanes, but lanes 0x", std::hex, warps_[warp_index].absent, std::dec,
           " have exited");
  for (unsigned l = 0; l < 32; ++l) {
    CK_CHECK(lanes[l].site == site, "warp ", warp_index, ": lanes 0 and ", l, " meet at ", warp_op_name(kind),
             " from different lines (", site.file, ":", site.line, ", ", lanes[l].site.file, ":",
             lanes[l].site.line, "): it must be warp-uniform");
    lanes[l].warp_result = 0;
  }
  WarpState& warp = warps_[warp_index];
  switch (kind) {
    case WarpOpKind::wgmma_fence: warp.wgmma_fenced = true; break;
    case WarpOpKind::wgmma: {
      CK_CHECK(warp.wgmma_fenced, "warp ", warp_index, ": wgmma.mma_async at ", site.file, ":", site.line,
               " follows no wgmma.fence since the warp's ",
               warp.wgmma_committed == 0 && warp.wgmma_pending.empty() ? "start" : "last wgmma.wait_group",
               ": fence the accumulators (dev::wgmma_fence) before the first wgmma, and after each wait, where "
               "other code may have touched them");
      PendingWgmma w;
      w.op = *reinterpret_cast<const WgmmaLane*>(static_cast<std::uintptr_t>(lanes[0].operand));
      w.group = warp.wgmma_committed;
      w.site = site;
      for (unsigned l = 0; l < 32; ++l) {
        const auto& op = *reinterpret_cast<const WgmmaLane*>(static_cast<std::uintptr_t>(lanes[l].operand));
        CK_CHECK(op.desc_a == w.op.desc_a && op.desc_b == w.op.desc_b && op.n == w.op.n && op.type == w.op.type &&
                     op.scale_d == w.op.scale_d,
                 "warp ", warp_index, ": wgmma.mma_async at ", site.file, ":", site.line, ": lane ", l,
                 " brings other descriptors, shape or scale-d than lane 0 (they must be warpgroup-uniform)");
        w.d[l] = op.d;
      }
      CK_CHECK(w.op.n >= 8 && w.op.n <= 256 && w.op.n % 8 == 0, "wgmma.mma_async at ", site.file, ":", site.line,
               ": N = ", w.op.n, " (m64nNk", w.op.type == WgmmaType::tf32 ? 8 : 16, ".", type_name(w.op.type),
               " takes N from 8 to 256 in steps of 8)");
      const OperandPlaces places(w.op, warp_index % 4, dynamic_shared_address_, launch_.dynamic_shared_bytes, site);
      const auto* smem = static_cast<const unsigned char*>(dynamic_shared_data_);
      // The checks see the reads as the running lane's (the profile counts
      // them its own way, at the wait).
      if (!checker_.profiler().active())
        for (const std::uint32_t at : places.address)
          check_access(reinterpret_cast<std::uintptr_t>(smem + at), static_cast<std::size_t>(places.element_bytes),
                       AccessKind::read, w.op.pc, true);
      w.operands = places.read(smem);
      warp.wgmma_pending.push_back(std::move(w));
      break;
    }
    case WarpOpKind::wgmma_commit: ++warp.wgmma_committed; break;
    case WarpOpKind::wgmma_wait: {
      warp.wgmma_fenced = false;
      const int keep = lanes[0].arg;
      const std::uint32_t limit =
          warp.wgmma_committed > static_cast<std::uint32_t>(keep) ? warp.wgmma_committed - static_cast<std::uint32_t>(keep) : 0;
      std::size_t kept = 0;
      for (std::size_t i = 0; i < warp.wgmma_pending.size(); ++i) {
        if (warp.wgmma_pending[i].group < limit) {
          const PendingWgmma& w = warp.wgmma_pending[i];
          perform(w, warp_index % 4, static_cast<const unsigned char*>(dynamic_shared_data_),
                  dynamic_shared_address_, launch_.dynamic_shared_bytes);
          if (checker_.profiler().active()) {
            checker_.profiler().add_tensor_fmas(w.op.type == WgmmaType::bf16,
                                                static_cast<std::uint64_t>(16) * w.op.n *
                                                    (w.op.type == WgmmaType::tf32 ? 8 : 16));
            // 32 bytes of k per row: this warp's 16 rows of A, and a quarter
            // of B, which the warpgroup reads once.
            checker_.profiler().add_async_shared_load(16 * 32 + static_cast<std::uint64_t>(w.op.n) * 32 / 4);
          }
        } else {
          if (kept != i) warp.wgmma_pending[kept] = std::move(warp.wgmma_pending[i]);  // never onto itself
          ++kept;
        }
      }
      warp.wgmma_pending.resize(kept);
      break;
    }
    default: CK_FAIL("wgmma_complete: not a wgmma built-in");
  }
}

void wgmma_fence(const char* file, int line) {
  running_block("wgmma.fence", file, line);
  warp_op(WarpOpKind::wgmma_fence, 0xffffffffu, 0, 0, 32, file, line);
}

void wgmma_issue(const WgmmaLane& lane, const char* file, int line) {
  running_block("wgmma.mma_async", file, line);
  WgmmaLane with_site = lane;
  with_site.pc = __builtin_return_address(0);
  warp_op(WarpOpKind::wgmma, 0xffffffffu, static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&with_site)),
          0, 32, file, line);
}

void wgmma_commit(const char* file, int line) {
  running_block("wgmma.commit_group", file, line);
  warp_op(WarpOpKind::wgmma_commit, 0xffffffffu, 0, 0, 32, file, line);
}

void wgmma_wait(int keep, const char* file, int line) {
  CK_CHECK(keep >= 0 && keep <= 7, "wgmma.wait_group at ", file, ":", line, " takes a count from 0 to 7, not ", keep);
  running_block("wgmma.wait_group", file, line);
  warp_op(WarpOpKind::wgmma_wait, 0xffffffffu, 0, keep, 32, file, line);
}

void fence_proxy_async(const char* file, int line) {
  running_block("fence.proxy.async", file, line).proxy_fence();
}

std::uint32_t shared_offset(const void* p, const char* file, int line) {
  const BlockScheduler& block = running_block("a shared address", file, line);
  const auto* base = static_cast<const unsigned char*>(block.dynamic_shared_memory());
  const auto* at = static_cast<const unsigned char*>(p);
  CK_CHECK(base != nullptr && at >= base && at <= base + block.dynamic_shared_bytes(), "the shared address at ", file,
           ":", line, ": ", p, " is not in the block's dynamic shared memory (sim's wgmma reads operands there)");
  return block.dynamic_shared_address() + static_cast<std::uint32_t>(at - base);
}

}  // namespace detail
}  // namespace convkit::sim
