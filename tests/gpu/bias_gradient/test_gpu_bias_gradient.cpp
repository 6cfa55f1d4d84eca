// Raw tests of kernels/bias_gradient.cu on sim (and, in the nvcc build, on
// cuda): both versions against a float64 sum on odd shapes (one element, an
// empty plane, planes shorter than a warp, rows that end mid-round of v2's 8
// loads, more images than v2's warps) and on cifar10-cnn conv1's shape;
// each version bit for bit across runs and thread orders; bad arguments.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_testing.h"
#include "kernels/bias_gradient.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::CK_GPU_NS;
using testing::kernel_options;

double tolerance(DType dt) { return dt == DType::float32 ? 1e-6 : 1e-14; }

struct Shape3 {
  std::int64_t N, K, plane;
};

Tensor random_dy(const Shape3& s, DType dt, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(std::max<std::int64_t>(s.N * s.K * s.plane, 1)));
  for (double& x : v) x = u(rng);
  return from_vector(v, {static_cast<std::int64_t>(v.size())}, kernel_options(dt));
}

std::vector<double> reference(const Tensor& dy, const Shape3& s) {
  const std::vector<double> v = dy.to_vector<double>();
  std::vector<double> want(static_cast<std::size_t>(s.K), 0.0);
  for (std::int64_t i = 0; i < s.N * s.K * s.plane; ++i)
    want[static_cast<std::size_t>((i / s.plane) % s.K)] += v[static_cast<std::size_t>(i)];
  return want;
}

std::vector<double> run(const Tensor& dy, const Shape3& s, DType dt, int version) {
  Tensor db = full({std::max<std::int64_t>(s.K, 1)}, 7.0, kernel_options(dt));
  kernels::launch_bias_gradient(dt, dy.raw_data(), s.N, s.K, s.plane, db.raw_data(), version);
  return db.to_vector<double>();
}

TEST(GpuBiasGradient, EveryVersionMatchesTheFloat64Sum) {
  std::mt19937_64 rng(testing::kSeed + 503);
  const std::vector<Shape3> shapes = {{1, 1, 1},  {3, 5, 7},  {2, 3, 300}, {5, 2, 0},
                                      {4, 33, 49}, {33, 3, 600},  // more images than v2's 16 warps
                                      {2, 32, 1024}};              // cifar10-cnn conv1 at batch 2
  for (DType dt : {DType::float32, DType::float64})
    for (const Shape3& s : shapes) {
      const Tensor dy = random_dy(s, dt, rng);
      const std::vector<double> want = reference(dy, s);
      for (int version : {1, 2}) {
        std::vector<double> got = run(dy, s, dt, version);
        got.resize(want.size());
        const double tol = tolerance(dt) * static_cast<double>(s.N * s.plane + 1);
        for (std::size_t k = 0; k < want.size(); ++k)
          EXPECT_NEAR(got[k], want[k], tol) << dt << " N=" << s.N << " K=" << s.K << " plane=" << s.plane << " v"
                                           << version << " k=" << k;
      }
    }
}

TEST(GpuBiasGradient, EachVersionGivesTheSameBitsEveryRun) {
  std::mt19937_64 rng(testing::kSeed + 504);
  const Shape3 s{6, 4, 77};
  const Tensor dy = random_dy(s, DType::float32, rng);
  for (int version : {1, 2}) {
    const std::vector<double> first = run(dy, s, DType::float32, version);
    EXPECT_EQ(run(dy, s, DType::float32, version), first) << "v" << version;
#if !defined(__CUDACC__)  // thread orders are sim's to choose
    for (const char* schedule : {"reverse", "random:5"}) {
      sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
      EXPECT_EQ(run(dy, s, DType::float32, version), first) << "v" << version << " " << schedule;
    }
#endif
  }
}

TEST(GpuBiasGradient, BadArgumentsNameTheProblem) {
  Tensor buf = Tensor::empty({64}, kernel_options(DType::float32));
  EXPECT_THROW(kernels::launch_bias_gradient(DType::float32, buf.raw_data(), -1, 2, 3, buf.raw_data()), Error);
  EXPECT_THROW(kernels::launch_bias_gradient(DType::float32, buf.raw_data(), 1, 2, 3, nullptr), Error);
  EXPECT_THROW(kernels::launch_bias_gradient(DType::int64, buf.raw_data(), 1, 2, 3, buf.raw_data()), Error);
  try {
    kernels::launch_bias_gradient(DType::float32, buf.raw_data(), 1, 2, 3, buf.raw_data(), 3);
    ADD_FAILURE() << "version 3 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("versions are 1..2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace convkit
