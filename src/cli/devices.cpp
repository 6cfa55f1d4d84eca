// `convkit devices`: every backend, whether it can run here, and why not.
#include <cstdio>
#include <string>

#include "cli/arg_parser.h"
#include "cli/commands.h"
#include "convkit/backend/backend.h"

namespace convkit::cli {

constexpr const char* kDevicesUsage =
    "usage: convkit devices\n"
    "Lists the backends (cpu, sim, cuda:N), whether each can run here, and why not,\n"
    "the ops a usable backend runs on cpu instead (its fallbacks), and what carries\n"
    "collectives between ranks' devices (NCCL on cuda; an emulation of it on sim).\n";

int run_devices(const Args& args) {
  if (help_requested(args)) {
    std::fputs(kDevicesUsage, stdout);
    return 0;
  }
  const ParsedArgs parsed(args, "devices", {});
  parsed.expect_positional(0, 0, "no arguments");
  for (const BackendInfo& info : list_backends()) {
    std::printf("%-8s %-12s %s\n", info.name.c_str(), info.usable ? "usable" : "not usable",
                info.detail.c_str());
    if (!info.usable) continue;
    std::string ops;
    for (BackendOp op : backend_for(Device::parse(info.name)).fallbacks())
      ops += (ops.empty() ? "" : ", ") + std::string(backend_op_name(op));
    if (!ops.empty()) std::printf("%-8s %-12s %s\n", "", "falls back", ("to cpu for " + ops).c_str());
    // What carries collectives between ranks' devices (dist::device_group).
    const CommunicatorSupport comm = backend_for(Device::parse(info.name)).communicator_support();
    if (comm.ok) std::printf("%-8s %-12s %s\n", "", "collectives", comm.detail.c_str());
  }
  return 0;
}

}  // namespace convkit::cli
