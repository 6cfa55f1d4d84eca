// `convkit devices`: every backend, whether it can run here, and why not.
#include <cstdio>

#include "cli/commands.h"
#include "convkit/backend/backend.h"

namespace convkit::cli {

int run_devices(const Args& args) {
  CK_CHECK(args.empty(), "devices: takes no arguments, got '", args.front(), "'");
  for (const BackendInfo& info : list_backends()) {
    std::printf("%-8s %-12s %s\n", info.name.c_str(), info.usable ? "usable" : "not usable",
                info.detail.c_str());
  }
  return 0;
}

}  // namespace convkit::cli
