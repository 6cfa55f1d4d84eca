#pragma once
// For death tests of out-of-memory paths: a child process limits its address
// space to what it maps now plus some headroom, so that one large allocation
// fails there (std::bad_alloc or a null return) while the test runner is
// untouched. Use inside EXPECT_EXIT(..., ::testing::ExitedWithCode(0), "").
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "convkit/core/error.h"

namespace convkit::testing {

// Sanitizers reserve terabytes of shadow address space, which no limit leaves.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kAddressSpaceLimitWorks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool kAddressSpaceLimitWorks = false;
#else
inline constexpr bool kAddressSpaceLimitWorks = true;
#endif
#else
inline constexpr bool kAddressSpaceLimitWorks = true;
#endif

// Runs `body` under the limit and exits: 0 when it threw a convkit::Error
// whose message contains `expected`, 5 for another message (printed), 6 when
// it threw nothing. Anything else it throws (std::bad_alloc) ends the
// process through std::terminate, which the death test reports.
[[noreturn]] inline void exit_after_body_under_memory_limit(std::uint64_t headroom_bytes,
                                                           const std::function<void()>& body,
                                                           const std::string& expected) {
  long pages = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr || std::fscanf(statm, "%ld", &pages) != 1) std::_Exit(3);
  std::fclose(statm);
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  limit.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) +
                   static_cast<rlim_t>(headroom_bytes);
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(4);
  try {
    body();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find(expected) != std::string::npos) std::_Exit(0);
    std::fprintf(stderr, "message '%s' lacks '%s'\n", what.c_str(), expected.c_str());
    std::_Exit(5);
  }
  std::_Exit(6);
}

}  // namespace convkit::testing
