// Sums of counters, the roofline estimate and the printed table of the sim
// performance model. See convkit/sim/profile.h.
#include <algorithm>
#include <cstdio>
#include <string>

#include "convkit/core/error.h"
#include "convkit/sim/profile.h"

namespace convkit::sim {
namespace {

constexpr double kSectorBytes = 32;
constexpr double kWavefrontBytes = 128;  // 32 banks x 4 bytes

std::string format(const char* pattern, auto... values) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, pattern, values...);
  return buffer;
}

std::string seconds_text(double s) {
  if (s >= 1e-3) return format("%.3f ms", s * 1e3);
  return format("%.3f us", s * 1e6);
}

std::string request_line(const char* what, const RequestCounts& c, bool shared) {
  if (c.requests == 0) return "";
  const auto req = static_cast<unsigned long long>(c.requests);
  // Bytes per lane show the access width: 4.0 for a float, 16.0 for a float4
  // that g++ kept whole.
  std::string line = format("  %-13s %12llu requests, %5.1f lanes/request, %4.1f B/lane", what, req,
                            KernelProfile::per_request(c.lanes, c.requests),
                            KernelProfile::per_request(c.bytes, c.lanes));
  if (shared) {
    line += format(", %5.2f wavefronts/request (worst %u-way), %llu conflict wavefronts",
                   KernelProfile::per_request(c.wavefronts, c.requests), c.max_ways,
                   static_cast<unsigned long long>(c.conflict_wavefronts));
  } else {
    line += format(", %5.2f sectors/request, %3.0f%% of fetched bytes used",
                   KernelProfile::per_request(c.sectors, c.requests),
                   c.sectors == 0 ? 0.0
                                     : 100.0 * static_cast<double>(c.unique_bytes) /
                                           (kSectorBytes * static_cast<double>(c.sectors)));
  }
  return line + "\n";
}

}  // namespace

RequestCounts& RequestCounts::operator+=(const RequestCounts& o) {
  requests += o.requests;
  lanes += o.lanes;
  sectors += o.sectors;
  bytes += o.bytes;
  unique_bytes += o.unique_bytes;
  wavefronts += o.wavefronts;
  conflict_wavefronts += o.conflict_wavefronts;
  max_ways = std::max(max_ways, o.max_ways);
  return *this;
}

KernelProfile& KernelProfile::operator+=(const KernelProfile& o) {
  launches += o.launches;
  blocks += o.blocks;
  threads += o.threads;
  fmas += o.fmas;
  tf32_fmas += o.tf32_fmas;
  bf16_fmas += o.bf16_fmas;
  barriers += o.barriers;
  warp_builtins += o.warp_builtins;
  global_load += o.global_load;
  global_store += o.global_store;
  global_atomic += o.global_atomic;
  shared_load += o.shared_load;
  shared_store += o.shared_store;
  shared_atomic += o.shared_atomic;
  return *this;
}

RequestCounts KernelProfile::global() const {
  RequestCounts c = global_load;
  c += global_store;
  c += global_atomic;
  return c;
}

RequestCounts KernelProfile::shared() const {
  RequestCounts c = shared_load;
  c += shared_store;
  c += shared_atomic;
  return c;
}

double KernelProfile::per_request(std::uint64_t total, std::uint64_t requests) {
  return requests == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(requests);
}

double RooflineEstimate::seconds() const { return std::max({flop_seconds, dram_seconds, shared_seconds}); }

const char* RooflineEstimate::bound() const {
  const double s = seconds();
  if (s == dram_seconds) return "DRAM";
  if (s == shared_seconds) return "shared";
  return "compute";
}

RooflineEstimate estimate(const KernelProfile& p, const GpuSpec& gpu) {
  RooflineEstimate e;
  e.flop_seconds = 2.0 * static_cast<double>(p.fmas) / gpu.fp32_flops;
  // A GPU without such tensor cores has no rate to estimate them with.
  CK_CHECK(p.tf32_fmas == 0 || gpu.tf32_flops > 0, "sim profile: ", p.kernel, " uses TF32 tensor cores, which ",
           gpu.name, " does not have");
  CK_CHECK(p.bf16_fmas == 0 || gpu.bf16_flops > 0, "sim profile: ", p.kernel, " uses BF16 tensor cores, which ",
           gpu.name, " does not have");
  if (p.tf32_fmas > 0) e.flop_seconds += 2.0 * static_cast<double>(p.tf32_fmas) / gpu.tf32_flops;
  if (p.bf16_fmas > 0) e.flop_seconds += 2.0 * static_cast<double>(p.bf16_fmas) / gpu.bf16_flops;
  e.dram_seconds = kSectorBytes * static_cast<double>(p.global().sectors) / gpu.hbm_bytes_per_s;
  e.shared_seconds = kWavefrontBytes * static_cast<double>(p.shared().wavefronts) / gpu.shared_bytes_per_s();
  return e;
}

std::string format_profile(const std::vector<KernelProfile>& profiles, const GpuSpec& gpu) {
  std::string out = format(
      "sim profile: counts are exact (the emulator saw every access); times are roofline ESTIMATES for %s "
      "(%.1f TFLOP/s FP32, %.2f TB/s HBM, %.1f TB/s shared), not measurements\n",
      std::string(gpu.name).c_str(), gpu.fp32_flops / 1e12, gpu.hbm_bytes_per_s / 1e12,
      gpu.shared_bytes_per_s() / 1e12);
  for (const KernelProfile& p : profiles) {
    out += format("%s: %llu launch%s, %llu blocks, %llu threads\n", p.kernel.c_str(),
                  static_cast<unsigned long long>(p.launches), p.launches == 1 ? "" : "es",
                  static_cast<unsigned long long>(p.blocks), static_cast<unsigned long long>(p.threads));
    out += format("  FMAs %llu (dev::fma), barriers %llu (%.1f per block), warp built-ins %llu\n",
                  static_cast<unsigned long long>(p.fmas), static_cast<unsigned long long>(p.barriers),
                  KernelProfile::per_request(p.barriers, p.blocks), static_cast<unsigned long long>(p.warp_builtins));
    if (p.tf32_fmas + p.bf16_fmas > 0)
      out += format("  tensor-core FMAs: tf32 %llu, bf16 %llu (mma.sync, wgmma)\n",
                    static_cast<unsigned long long>(p.tf32_fmas), static_cast<unsigned long long>(p.bf16_fmas));
    out += request_line("global load", p.global_load, false);
    out += request_line("global store", p.global_store, false);
    out += request_line("global atomic", p.global_atomic, false);
    out += request_line("shared load", p.shared_load, true);
    out += request_line("shared store", p.shared_store, true);
    out += request_line("shared atomic", p.shared_atomic, true);
    const RooflineEstimate e = estimate(p, gpu);
    out += format("  estimate on %s: %s, %s-bound (FMAs %s, DRAM %s with no cache, shared %s)\n",
                  std::string(gpu.name).c_str(), seconds_text(e.seconds()).c_str(), e.bound(),
                  seconds_text(e.flop_seconds).c_str(), seconds_text(e.dram_seconds).c_str(),
                  seconds_text(e.shared_seconds).c_str());
  }
  return out;
}

}  // namespace convkit::sim
