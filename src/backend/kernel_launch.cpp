#include "convkit/backend/kernel_launch.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "convkit/core/error.h"

namespace convkit::detail {

namespace {

thread_local KernelLaunch t_last;
thread_local bool t_launched = false;

}  // namespace

std::string kernel_name(const void* kernel) {
  Dl_info info{};
  if (kernel != nullptr && dladdr(kernel, &info) != 0 && info.dli_sname != nullptr &&
      info.dli_saddr == kernel) {
    int status = 0;
    const std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status), std::free);
    return status == 0 && demangled ? demangled.get() : info.dli_sname;
  }
  char address[32];
  std::snprintf(address, sizeof address, "%p", kernel);
  return std::string("kernel at ") + address;
}

std::string describe_launch(const KernelLaunch& l) {
  return concat("kernel ", kernel_name(l.kernel), " (grid (", l.grid[0], ",", l.grid[1], ",", l.grid[2],
                "), block (", l.block[0], ",", l.block[1], ",", l.block[2], "), ", l.shared_bytes,
                " B dynamic shared memory)");
}

void note_launch(const KernelLaunch& launch) noexcept {
  t_last = launch;
  t_launched = true;
}

std::string last_launch() { return t_launched ? describe_launch(t_last) : std::string(); }

}  // namespace convkit::detail
