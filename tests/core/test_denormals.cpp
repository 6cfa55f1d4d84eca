// set_flush_denormal / FlushDenormalGuard: a subnormal product is zero with
// flushing on and not with it off, on the calling thread and on every thread
// of the OpenMP pool, and the guard restores the mode it found.
#include <gtest/gtest.h>
#include <omp.h>

#include <limits>
#include <vector>

#include "convkit/core/denormals.h"

namespace convkit {
namespace {

// Out of line with volatile operands, so the product is computed at run
// time under the thread's mode instead of folded by the compiler.
[[gnu::noinline]] float subnormal_product() {
  volatile float tiny = std::numeric_limits<float>::min();  // smallest normal, 1.2e-38
  volatile float half = 0.5f;
  return tiny * half;  // subnormal unless flushed
}

// The product on every pool thread (one entry per thread).
std::vector<float> products_on_pool() {
  std::vector<float> out(static_cast<std::size_t>(omp_get_max_threads()), -1.0f);
#pragma omp parallel
  out[static_cast<std::size_t>(omp_get_thread_num())] = subnormal_product();
  return out;
}

TEST(Denormals, FlushingZeroesSubnormalResultsOnEveryThread) {
  if (!set_flush_denormal(true)) GTEST_SKIP() << "this CPU has no flush-to-zero mode";
  EXPECT_TRUE(flush_denormal_enabled());
  EXPECT_EQ(subnormal_product(), 0.0f);
  for (float v : products_on_pool()) EXPECT_EQ(v, 0.0f);

  ASSERT_TRUE(set_flush_denormal(false));
  EXPECT_FALSE(flush_denormal_enabled());
  EXPECT_GT(subnormal_product(), 0.0f);
  for (float v : products_on_pool()) EXPECT_GT(v, 0.0f);
}

TEST(Denormals, GuardRestoresTheModeItFound) {
  if (!set_flush_denormal(false)) GTEST_SKIP() << "this CPU has no flush-to-zero mode";
  {
    FlushDenormalGuard guard(true);
    EXPECT_TRUE(flush_denormal_enabled());
    for (float v : products_on_pool()) EXPECT_EQ(v, 0.0f);
  }
  EXPECT_FALSE(flush_denormal_enabled());
  for (float v : products_on_pool()) EXPECT_GT(v, 0.0f);

  set_flush_denormal(true);
  { FlushDenormalGuard guard(false); EXPECT_FALSE(flush_denormal_enabled()); }
  EXPECT_TRUE(flush_denormal_enabled());
  set_flush_denormal(false);
}

}  // namespace
}  // namespace convkit
