// A kernel launch that fails names the kernel and its launch shape, and
// leaves the device usable for the next launch. The kernels (error_kernels.cpp)
// are built by g++ for sim, as kernels/*.cu are; the test binary exports its
// symbols (ENABLE_EXPORTS), as the library does its kernels', so the names
// can be found.
// The cuda side of the same report (convkit/sim/cuda_compat.h) needs a GPU.
#include <functional>
#include <vector>

#include "convkit/backend/kernel_launch.h"
#include "error_kernels.h"
#include "support/support.h"

namespace convkit::kernel_error_test {

namespace {

std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "nothing was thrown";
}

TEST(KernelErrors, BadConfigurationNamesTheKernelAndShape) {
  std::vector<float> buffer(8, 0.0f);
  const std::string what = message_of(
      [&] { launch_fill_ones(4, 2048, buffer.data(), 8); });
  EXPECT_NE(what.find("kernel convkit::kernel_error_test::fill_ones(float*, int) (grid (4,1,1), "
                      "block (2048,1,1), 0 B dynamic shared memory): sim launch: block too large"),
            std::string::npos)
      << what;
  // Nothing is left broken: the next launch runs.
  launch_fill_ones(1, 8, buffer.data(), 8);
  EXPECT_EQ(buffer, std::vector<float>(8, 1.0f));
}

TEST(KernelErrors, AnErrorInsideTheKernelNamesItToo) {
  std::vector<float> buffer(6, 0.0f);
  const std::string what = message_of(
      [&] { launch_fail_in_block(6, 32, buffer.data(), 3); });
  EXPECT_NE(what.find("kernel convkit::kernel_error_test::fail_in_block(float*, int) (grid (6,1,1), "
                      "block (32,1,1), 0 B dynamic shared memory): sim: block (3,0,0), thread (0,0,0): "
                      "block 3 found a corrupt value"),
            std::string::npos)
      << what;
  launch_fail_in_block(6, 1, buffer.data(), -1);
  EXPECT_EQ(buffer, std::vector<float>(6, 2.0f));
}

TEST(KernelName, UnknownAddressesAreNamedByAddress) {
  int not_a_function = 0;
  EXPECT_EQ(detail::kernel_name(&not_a_function).rfind("kernel at 0x", 0), 0u);
  EXPECT_EQ(detail::last_launch(), "");  // sim launches are not remembered: no sticky errors
}

}  // namespace
}  // namespace convkit::kernel_error_test
