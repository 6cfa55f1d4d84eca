// The compiler builds what the source says. GCC 12.2 with -march=native on
// AVX-512 Intel cores (seen on a Sapphire Rapids host) emitted a broadcast
// of 1.0 for the initializer list {1, 1, 1, 0}: its SLP vectorizer took a
// constant vector whose last entry differs for a uniform one. The build now
// turns that pass off for GCC < 13 (cmake/ConvkitWarnings.cmake); this test
// fails if a toolchain brings the fault back.
#include <gtest/gtest.h>

#include <vector>

namespace {

// Out of line, so that the constants reach memory through the code under
// suspicion instead of being folded into the comparisons below.
[[gnu::noinline]] std::vector<double> last_differs() { return {1, 1, 1, 0}; }
[[gnu::noinline]] std::vector<double> first_differs() { return {0, 1, 1, 1}; }
[[gnu::noinline]] std::vector<float> eight_floats() { return {1, 1, 1, 1, 1, 1, 1, 0}; }
[[gnu::noinline]] std::vector<std::vector<double>> nested() { return {{1, 1, 1, 0}, {0, 1, -1, -1}}; }

TEST(Toolchain, BuildsConstantInitializerListsExactly) {
  const std::vector<double> a = last_differs();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0], 1.0);
  EXPECT_EQ(a[3], 0.0) << "the compiler built {1, 1, 1, 0} as a broadcast of its first entry";
  const std::vector<double> b = first_differs();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], 0.0);
  EXPECT_EQ(b[3], 1.0);
  const std::vector<float> c = eight_floats();
  ASSERT_EQ(c.size(), 8u);
  EXPECT_EQ(c[6], 1.0f);
  EXPECT_EQ(c[7], 0.0f);
  const std::vector<std::vector<double>> d = nested();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0][3], 0.0);
  EXPECT_EQ(d[1][0], 0.0);
  EXPECT_EQ(d[1][3], -1.0);
}

}  // namespace
