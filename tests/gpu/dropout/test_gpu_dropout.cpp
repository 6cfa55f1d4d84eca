// Raw tests of the dropout-mask kernels (kernels/dropout.cu) on sim: every
// version bit for bit against the cpu backend's mask and against the Philox
// formula (uniform >= p), for odd lengths, stream offsets on and off Philox
// block boundaries, p at 0, 1 and in between, float32 and float64; writes stay
// inside the n elements; v3's alignment requirement is a clear error.
#include <cmath>
#include <cstring>

#include "convkit/core/philox.h"
#include "gpu/gpu_testing.h"
#include "kernels/dropout.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::gpu_sim;

constexpr std::uint64_t kStreamSeed = 0x5eed1234abcdULL;
constexpr std::int64_t kGuard = 8;  // sentinel elements either side of the output

const std::int64_t kLengths[] = {1, 3, 4, 5, 17, 1000, 4099};
const double kProbabilities[] = {0.0, 0.1, 1.0 / 3, 0.5, 0.9, 1.0};

template <typename T>
std::vector<T> cpu_mask(std::int64_t n, std::uint64_t offset, double p) {
  Tensor out = Tensor::empty({n}, TensorOptions().dtype(dtype_of<T>::value));
  backend_for(Device(DeviceType::cpu)).dropout_mask(out, kStreamSeed, offset, p);
  return out.to_vector<T>();
}

// Runs `version` into a guarded buffer whose output starts `shift` elements
// past a 16-byte boundary; checks the guards and returns the n elements.
template <typename T>
std::vector<T> gpu_mask(std::int64_t n, std::uint64_t offset, double p, int version, std::int64_t shift = 0) {
  const T sentinel = T(-3);
  std::vector<T> buffer(static_cast<std::size_t>(n + 2 * kGuard), sentinel);
  T* out = buffer.data() + kGuard + shift;
  kernels::launch_dropout_mask(dtype_of<T>::value, out, n - shift, kStreamSeed, offset, p, version);
  for (std::int64_t i = 0; i < kGuard + shift; ++i) EXPECT_EQ(buffer[static_cast<std::size_t>(i)], sentinel) << i;
  for (std::int64_t i = kGuard + n; i < n + 2 * kGuard; ++i)
    EXPECT_EQ(buffer[static_cast<std::size_t>(i)], sentinel) << i;
  return std::vector<T>(out, out + (n - shift));
}

template <typename T>
void check_all(int version, bool aligned_offsets_only) {
  for (std::int64_t n : kLengths)
    for (std::uint64_t offset : {0ULL, 4ULL, 1000ULL, 1ULL, 2ULL, 7ULL}) {
      if (aligned_offsets_only && offset % 4 != 0) continue;
      for (double p : kProbabilities) {
        SCOPED_TRACE(::testing::Message() << "v" << version << " n " << n << " offset " << offset << " p " << p
                                          << " " << dtype_of<T>::value);
        const std::vector<T> got = gpu_mask<T>(n, offset, p, version);
        const std::vector<T> want = cpu_mask<T>(n, offset, p);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(T)), 0);
        const T keep = p < 1 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
        for (std::int64_t i = 0; i < n; ++i) {
          const bool kept = philox::uniform(kStreamSeed, offset, static_cast<std::uint64_t>(i)) >= p;
          ASSERT_EQ(got[static_cast<std::size_t>(i)], kept ? keep : T(0)) << "element " << i;
        }
      }
    }
}

class GpuDropout : public ::testing::TestWithParam<int> {};

TEST_P(GpuDropout, MaskIsTheCpuMaskBitForBit) {
  const int version = GetParam();
  check_all<float>(version, version == 3);
  check_all<double>(version, version == 3);
}

INSTANTIATE_TEST_SUITE_P(sim, GpuDropout, ::testing::Values(0, 1, 2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string name = "v";  // not "v" + std::to_string(...): GCC 12 -Wrestrict false positive
                           name += std::to_string(info.param);
                           return info.param == 0 ? std::string("default") : name;
                         });

TEST(GpuDropoutChecks, UnalignedOutputsFallBackOrFailClearly) {
  // Output one float past a 16-byte boundary, stream offset 8: v3 cannot
  // vector-store it; the default choice runs v2 and still matches the cpu.
  const std::vector<float> shifted = gpu_mask<float>(37, 8, 0.4, 0, 1);
  const std::vector<float> want = cpu_mask<float>(36, 8, 0.4);
  EXPECT_EQ(shifted, want);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<float> out(64);
  EXPECT_NE(message([&] { kernels::launch_dropout_mask(DType::float32, out.data() + 1, 8, 1, 0, 0.5, 3); })
                .find("16-byte aligned"),
            std::string::npos);
  EXPECT_NE(message([&] { kernels::launch_dropout_mask(DType::float32, out.data(), 8, 1, 2, 0.5, 3); })
                .find("multiple of 4"),
            std::string::npos);
  EXPECT_NE(message([&] { kernels::launch_dropout_mask(DType::float32, out.data(), 8, 1, 0, 1.5, 1); })
                .find("p must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(message([&] { kernels::launch_dropout_mask(DType::float32, out.data(), 8, 1, 0, 0.5, 4); })
                .find("versions 1..3"),
            std::string::npos);
  {
    testing::ScopedKernelVersion v1("dropout", 1);
    EXPECT_EQ(gpu_mask<float>(21, 12, 0.3, 0), cpu_mask<float>(21, 12, 0.3));
  }
}

}  // namespace
}  // namespace convkit
