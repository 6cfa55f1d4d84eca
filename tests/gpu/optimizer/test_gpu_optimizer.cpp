// Raw tests of the fused optimizer kernels (kernels/optimizer.cu) on sim:
// every version against a float64 transcription of PyTorch's rules and
// against the cpu backend's fused loop, on lengths around the 16-byte vector
// width (1, 3, 4, 5, 17, 1023, 4097), SGD with and without momentum,
// dampening, Nesterov and weight decay (first and later steps), Adam and
// AdamW at steps 1, 2 and 10; v2's alignment rule and the fallback; v3's
// tables of many tensors against the per-tensor v1, bit for bit, and their
// launch count.
#include <cmath>

#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "gpu/gpu_testing.h"
#include "kernels/optimizer.cuh"

namespace convkit {
namespace {

namespace kernels = convkit::gpu_sim;
using testing::all_close;
using V = std::vector<double>;

const std::int64_t kLengths[] = {1, 3, 4, 5, 17, 1023, 4097};

struct State {
  V p, g, a, b;  // parameter, gradient, and two buffers (momentum; or exp_avg, exp_avg_sq)
};

State random_state(std::int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1), pos(0, 0.5);
  State s;
  for (std::int64_t i = 0; i < n; ++i) {
    s.p.push_back(u(rng));
    s.g.push_back(u(rng));
    s.a.push_back(u(rng));
    s.b.push_back(pos(rng));  // exp_avg_sq is never negative
  }
  return s;
}

// PyTorch's rules in float64 (as tests/optim), one element at a time.
void sgd_reference(State& s, const SgdStep& st) {
  for (std::size_t i = 0; i < s.p.size(); ++i) {
    double d = s.g[i] + st.weight_decay * s.p[i];
    if (st.momentum != 0) {
      s.a[i] = st.first_step ? d : st.momentum * s.a[i] + (1 - st.dampening) * d;
      d = st.nesterov ? d + st.momentum * s.a[i] : s.a[i];
    }
    s.p[i] -= st.lr * d;
  }
}

void adam_reference(State& s, const AdamStep& st) {
  const double bc2 = st.bias_correction2_sqrt * st.bias_correction2_sqrt;
  for (std::size_t i = 0; i < s.p.size(); ++i) {
    double g = s.g[i];
    if (st.decoupled_weight_decay) {
      s.p[i] *= 1 - st.lr * st.weight_decay;
    } else {
      g += st.weight_decay * s.p[i];
    }
    s.a[i] = st.beta1 * s.a[i] + (1 - st.beta1) * g;
    s.b[i] = st.beta2 * s.b[i] + (1 - st.beta2) * g * g;
    const double m_hat = s.a[i] / st.bias_correction1, v_hat = s.b[i] / bc2;
    s.p[i] -= st.lr * m_hat / (std::sqrt(v_hat) + st.eps);
  }
}

template <typename T>
std::vector<T> cast(const V& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <typename T>
V widen(const std::vector<T>& v) {
  return V(v.begin(), v.end());
}

// The cpu backend's fused update of the same (rounded) state.
template <typename T>
State cpu_fused(const State& s, const SgdStep* sgd, const AdamStep* adam) {
  const TensorOptions o = TensorOptions().dtype(dtype_of<T>::value);
  const Shape shape{static_cast<std::int64_t>(s.p.size())};
  Tensor p = from_vector(s.p, shape, o), g = from_vector(s.g, shape, o), a = from_vector(s.a, shape, o),
         b = from_vector(s.b, shape, o);
  Backend& cpu = backend_for(Device(DeviceType::cpu));
  if (sgd) cpu.sgd_update(p, g, a, *sgd);
  if (adam) cpu.adam_update(p, g, a, b, *adam);
  return {p.to_vector<double>(), s.g, a.to_vector<double>(), b.to_vector<double>()};
}

// Runs one update on sim with `version` and checks it against the cpu's fused
// loop and the float64 reference (both from the same rounded start).
template <typename T>
void check(const State& start, const SgdStep* sgd, const AdamStep* adam, int version) {
  const DType dt = dtype_of<T>::value;
  std::vector<T> p = cast<T>(start.p), g = cast<T>(start.g), a = cast<T>(start.a), b = cast<T>(start.b);
  const State rounded{widen(p), widen(g), widen(a), widen(b)};
  const auto n = static_cast<std::int64_t>(p.size());
  if (sgd) kernels::launch_sgd_update(dt, p.data(), g.data(), a.data(), n, *sgd, version);
  if (adam) kernels::launch_adam_update(dt, p.data(), g.data(), a.data(), b.data(), n, *adam, version);

  State ref = rounded;
  if (sgd) sgd_reference(ref, *sgd);
  if (adam) adam_reference(ref, *adam);
  const State cpu = cpu_fused<T>(rounded, sgd, adam);
  // Against the cpu's fused loop: the same operations, so at most an FMA's rounding apart.
  const double same = dt == DType::float32 ? 1e-6 : 1e-15;
  // Against float64: float32 rounds every intermediate.
  const double tol = dt == DType::float32 ? 2e-6 : 1e-13;
  EXPECT_TRUE(all_close(widen(p), cpu.p, same, same)) << "param vs cpu";
  EXPECT_TRUE(all_close(widen(a), cpu.a, same, same)) << "buffer vs cpu";
  EXPECT_TRUE(all_close(widen(p), ref.p, tol, tol)) << "param vs float64";
  EXPECT_TRUE(all_close(widen(a), ref.a, tol, tol)) << "buffer vs float64";
  if (adam) {
    EXPECT_TRUE(all_close(widen(b), cpu.b, same, same)) << "exp_avg_sq vs cpu";
    EXPECT_TRUE(all_close(widen(b), ref.b, tol, tol)) << "exp_avg_sq vs float64";
  }
  if (sgd && sgd->momentum == 0) {
    EXPECT_EQ(widen(a), rounded.a) << "no momentum: the buffer is not touched";
  }
}

std::vector<SgdStep> sgd_steps() {
  auto make = [](double lr, double wd, double momentum, double dampening, bool nesterov, bool first) {
    SgdStep s;
    s.lr = lr;
    s.weight_decay = wd;
    s.momentum = momentum;
    s.dampening = dampening;
    s.nesterov = nesterov;
    s.first_step = first;
    return s;
  };
  return {make(0.1, 0, 0, 0, false, false),     make(0.1, 0.01, 0, 0, false, false),
          make(0.1, 0, 0.9, 0, false, true),     make(0.1, 0, 0.9, 0, false, false),
          make(0.05, 0.01, 0.8, 0.3, false, false), make(0.1, 0.05, 0.9, 0, true, true),
          make(0.1, 0.05, 0.9, 0, true, false)};
}

std::vector<AdamStep> adam_steps() {
  std::vector<AdamStep> out;
  for (bool decoupled : {false, true})
    for (double wd : {0.0, 0.1})
      for (int t : {1, 2, 10}) {
        AdamStep s;
        s.lr = 0.01;
        s.beta1 = decoupled ? 0.85 : 0.9;
        s.beta2 = decoupled ? 0.99 : 0.999;
        s.eps = decoupled ? 1e-8 : 1e-6;
        s.weight_decay = wd;
        s.decoupled_weight_decay = decoupled;
        s.bias_correction1 = 1 - std::pow(s.beta1, t);
        s.bias_correction2_sqrt = std::sqrt(1 - std::pow(s.beta2, t));
        out.push_back(s);
      }
  return out;
}

class GpuOptimizer : public ::testing::TestWithParam<int> {};

TEST_P(GpuOptimizer, SgdMatchesReferenceAndCpu) {
  std::mt19937_64 rng(testing::kSeed + 800);
  for (std::int64_t n : kLengths)
    for (const SgdStep& s : sgd_steps()) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " momentum " << s.momentum << " dampening " << s.dampening
                                        << " nesterov " << s.nesterov << " wd " << s.weight_decay << " first "
                                        << s.first_step);
      const State start = random_state(n, rng);
      check<float>(start, &s, nullptr, GetParam());
      check<double>(start, &s, nullptr, GetParam());
    }
}

TEST_P(GpuOptimizer, AdamAndAdamWMatchReferenceAndCpu) {
  std::mt19937_64 rng(testing::kSeed + 801);
  for (std::int64_t n : kLengths)
    for (const AdamStep& s : adam_steps()) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " decoupled " << s.decoupled_weight_decay << " wd "
                                        << s.weight_decay << " bc1 " << s.bias_correction1);
      const State start = random_state(n, rng);
      check<float>(start, nullptr, &s, GetParam());
      check<double>(start, nullptr, &s, GetParam());
    }
}

INSTANTIATE_TEST_SUITE_P(sim, GpuOptimizer, ::testing::Values(0, 1, 2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string name = "v";  // not "v" + std::to_string(...): GCC 12 -Wrestrict false positive
                           name += std::to_string(info.param);
                           return info.param == 0 ? std::string("default") : name;
                         });

TEST(GpuOptimizerChecks, VersionsAgreeAndV2NeedsAlignment) {
  std::mt19937_64 rng(testing::kSeed + 802);
  const State start = random_state(41, rng);
  const AdamStep adam = adam_steps()[4];
  // v1 and v2 run the same per-element code: identical results.
  std::vector<float> p1 = cast<float>(start.p), m1 = cast<float>(start.a), v1 = cast<float>(start.b);
  std::vector<float> p2 = p1, m2 = m1, v2 = v1;
  const std::vector<float> g = cast<float>(start.g);
  kernels::launch_adam_update(DType::float32, p1.data(), g.data(), m1.data(), v1.data(), 41, adam, 1);
  kernels::launch_adam_update(DType::float32, p2.data(), g.data(), m2.data(), v2.data(), 41, adam, 2);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(v1, v2);

  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Arrays one float past a 16-byte boundary: v2 refuses, the default runs v1.
  std::vector<float> p3 = cast<float>(start.p), g3 = g, buf(start.p.size(), 0.5f);
  SgdStep sgd = sgd_steps()[4];
  EXPECT_NE(message([&] { kernels::launch_sgd_update(DType::float32, p3.data() + 1, g3.data() + 1, buf.data() + 1, 40, sgd, 2); })
                .find("16-byte aligned"),
            std::string::npos);
  std::vector<float> p4 = p3, buf4 = buf;
  kernels::launch_sgd_update(DType::float32, p3.data() + 1, g3.data() + 1, buf.data() + 1, 40, sgd, 0);
  kernels::launch_sgd_update(DType::float32, p4.data() + 1, g3.data() + 1, buf4.data() + 1, 40, sgd, 1);
  EXPECT_EQ(p3, p4);
  EXPECT_EQ(buf, buf4);
  EXPECT_NE(message([&] { kernels::launch_sgd_update(DType::float32, p3.data(), g3.data(), nullptr, 40, sgd, 1); })
                .find("needs a momentum buffer"),
            std::string::npos);
  EXPECT_NE(message([&] { kernels::launch_sgd_update(DType::float32, p3.data(), g3.data(), buf.data(), 40, sgd, 4); })
                .find("versions 1..3"),
            std::string::npos);
  AdamStep bad = adam;
  bad.bias_correction1 = 0;
  EXPECT_NE(message([&] { kernels::launch_adam_update(DType::float32, p1.data(), g.data(), m1.data(), v1.data(), 41, bad, 1); })
                .find("bias corrections must be positive"),
            std::string::npos);
}

// 70 tensors (more than one v3 launch holds) of every tail length, some
// empty, some one element past a 16-byte boundary (v3 runs v1's loop there),
// with the momentum buffer starting at some of them.
template <typename T>
struct ManyTensors {
  std::vector<std::vector<T>> p, g, a, b;
  std::vector<kernels::OptimizerTensors> table;

  ManyTensors(std::mt19937_64& rng, bool with_momentum) {
    const std::int64_t lengths[] = {1, 3, 4, 5, 17, 0, 1023, 64, 7};
    for (int k = 0; k < 70; ++k) {
      const std::int64_t n = lengths[k % 9];
      const int skew = k % 4 == 3 ? 1 : 0;
      const State s = random_state(n + skew, rng);
      p.push_back(cast<T>(s.p));
      g.push_back(cast<T>(s.g));
      a.push_back(cast<T>(s.a));
      b.push_back(cast<T>(s.b));
    }
    for (int k = 0; k < 70; ++k) {
      const int skew = k % 4 == 3 ? 1 : 0;
      const auto n = static_cast<std::int64_t>(p[k].size()) - skew;
      table.push_back({p[k].data() + skew, g[k].data() + skew, with_momentum ? a[k].data() + skew : nullptr,
                       b[k].data() + skew, n, k % 5 == 0});
    }
  }
};

std::uint64_t launches_of(const std::vector<sim::KernelProfile>& profile, const std::string& prefix) {
  std::uint64_t n = 0;
  for (const auto& k : profile)
    if (k.kernel.rfind(prefix, 0) == 0) n += k.launches;
  return n;
}

template <typename T>
void expect_v3_matches_v1(int seed) {
  const DType dt = dtype_of<T>::value;
  for (const SgdStep& step : sgd_steps()) {
    std::mt19937_64 rng(testing::kSeed + seed), rng_twin(testing::kSeed + seed);
    ManyTensors<T> v3(rng, step.momentum != 0), v1(rng_twin, step.momentum != 0);
    kernels::launch_sgd_update_multi(dt, v3.table.data(), v3.table.size(), step, 3);
    kernels::launch_sgd_update_multi(dt, v1.table.data(), v1.table.size(), step, 1);
    EXPECT_EQ(v3.p, v1.p) << "momentum " << step.momentum << " nesterov " << step.nesterov;
    EXPECT_EQ(v3.a, v1.a) << "momentum " << step.momentum << " nesterov " << step.nesterov;
  }
  for (const AdamStep& step : adam_steps()) {
    std::mt19937_64 rng(testing::kSeed + seed), rng_twin(testing::kSeed + seed);
    ManyTensors<T> v3(rng, true), v1(rng_twin, true);
    kernels::launch_adam_update_multi(dt, v3.table.data(), v3.table.size(), step, 3);
    kernels::launch_adam_update_multi(dt, v1.table.data(), v1.table.size(), step, 1);
    EXPECT_EQ(v3.p, v1.p) << "decoupled " << step.decoupled_weight_decay << " wd " << step.weight_decay;
    EXPECT_EQ(v3.a, v1.a);
    EXPECT_EQ(v3.b, v1.b);
  }
}

TEST(GpuOptimizerMultiTensor, V3TablesMatchThePerTensorV1BitForBit) {
  expect_v3_matches_v1<float>(803);
  expect_v3_matches_v1<double>(804);
}

TEST(GpuOptimizerMultiTensor, V3LaunchesOncePer64Tensors) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  std::mt19937_64 rng(testing::kSeed + 805);
  ManyTensors<float> t(rng, true);
  std::uint64_t nonempty = 0;
  for (const auto& e : t.table) nonempty += e.n > 0 ? 1 : 0;
  sim::ScopedProfile profile;
  kernels::launch_sgd_update_multi(DType::float32, t.table.data(), 40, sgd_steps()[3], 3);
  kernels::launch_sgd_update_multi(DType::float32, t.table.data(), t.table.size(), sgd_steps()[3], 3);
  kernels::launch_adam_update_multi(DType::float32, t.table.data(), t.table.size(), adam_steps()[1], 3);
  kernels::launch_adam_update_multi(DType::float32, t.table.data(), t.table.size(), adam_steps()[1], 1);
  const auto counted = profile.take();
  EXPECT_EQ(launches_of(counted, "sgd_v3"), 1u + 2u);  // 40 tensors, then 70 = 64 + 6
  EXPECT_EQ(launches_of(counted, "adam_v3"), 2u);
  EXPECT_EQ(launches_of(counted, "adam_v1"), nonempty) << "the twin launches once per non-empty tensor";
}

}  // namespace
}  // namespace convkit
