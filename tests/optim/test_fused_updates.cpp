// The fused optimizer updates (fused_sgd_update / fused_adam_update, one
// Backend call per parameter) against their composed reference twins
// (sgd_update / adam_update, built from tensor ops), step after step from the
// same state on every device: float32 to ~1e-6 relative (they differ only
// where a compiler fuses a multiply and an add), float64 to ~1e-14. Also the
// fallbacks for non-contiguous tensors, the optimizers' `fused` option, the
// version counters the fused path bumps, and argument errors.
#include "support/support.h"

#include <functional>

namespace convkit {
namespace {

using testing::all_close;

struct Tensors {
  Tensor p, g;
};

Tensors random_pair(const Shape& shape, DType dt, Device device, std::mt19937_64& rng) {
  const TensorOptions o = TensorOptions().dtype(dt).device(device);
  return {testing::random_tensor(shape, rng, o), testing::random_tensor(shape, rng, o)};
}

double tolerance(DType dt) { return dt == DType::float32 ? 1e-6 : 1e-14; }

struct SgdConfig {
  const char* name;
  optim::SGDOptions options;
  double weight_decay;
};

std::vector<SgdConfig> sgd_configs() {
  using optim::SGDOptions;
  return {{"plain", SGDOptions(0.1), 0},
          {"decay", SGDOptions(0.1), 0.01},
          {"momentum", SGDOptions(0.1).momentum(0.9), 0},
          {"dampening_decay", SGDOptions(0.05).momentum(0.8).dampening(0.3), 0.01},
          {"nesterov_decay", SGDOptions(0.1).momentum(0.9).nesterov(), 0.05}};
}

struct AdamConfig {
  const char* name;
  optim::AdamOptions options;
  double weight_decay;
  bool decoupled;
};

std::vector<AdamConfig> adam_configs() {
  using optim::AdamOptions;
  return {{"adam", AdamOptions(0.01), 0, false},
          {"adam_l2", AdamOptions(0.02).betas(0.8, 0.95).eps(1e-6), 0.1, false},
          {"adamw", AdamOptions(0.01), 0.01, true},
          {"adamw_decay", AdamOptions(0.02).betas(0.85, 0.99), 0.3, true}};
}

const Shape kShapes[] = {{1}, {3, 5}, {2, 3, 7}, {1029}};

class FusedUpdate : public ::testing::TestWithParam<Device> {};

TEST_P(FusedUpdate, SgdMatchesComposedReferenceStepByStep) {
  NoGradGuard no_grad;
  std::mt19937_64 rng(testing::kSeed + 60);
  for (const SgdConfig& c : sgd_configs())
    for (DType dt : {DType::float32, DType::float64})
      for (const Shape& shape : kShapes) {
        const Tensors start = random_pair(shape, dt, GetParam(), rng);
        Tensor fused_p = start.p.clone(), ref_p = start.p.clone(), fused_buf, ref_buf;
        for (int step = 1; step <= 4; ++step) {
          // A fresh gradient each step, shared by both twins.
          const Tensor g = testing::random_tensor(shape, rng, TensorOptions().dtype(dt).device(GetParam()));
          optim::fused_sgd_update(fused_p, g, fused_buf, c.options.lr_, c.weight_decay, c.options);
          optim::sgd_update(ref_p, g, ref_buf, c.options.lr_, c.weight_decay, c.options);
          const double tol = tolerance(dt);
          ASSERT_TRUE(all_close(fused_p, ref_p.to_vector<double>(), tol, tol))
              << c.name << " " << dt << " " << shape << " step " << step;
          ASSERT_EQ(fused_buf.defined(), ref_buf.defined()) << c.name;
          if (ref_buf.defined()) {
            ASSERT_TRUE(all_close(fused_buf, ref_buf.to_vector<double>(), tol, tol))
                << c.name << " " << dt << " " << shape << " step " << step;
          }
        }
      }
}

TEST_P(FusedUpdate, AdamMatchesComposedReferenceStepByStep) {
  NoGradGuard no_grad;
  std::mt19937_64 rng(testing::kSeed + 61);
  for (const AdamConfig& c : adam_configs())
    for (DType dt : {DType::float32, DType::float64})
      for (const Shape& shape : kShapes) {
        const Tensors start = random_pair(shape, dt, GetParam(), rng);
        Tensor fused_p = start.p.clone(), ref_p = start.p.clone();
        Tensor fused_m, fused_v, ref_m, ref_v;
        for (int step = 1; step <= 4; ++step) {
          const Tensor g = testing::random_tensor(shape, rng, TensorOptions().dtype(dt).device(GetParam()));
          optim::fused_adam_update(fused_p, g, fused_m, fused_v, step, c.options.lr_, c.weight_decay, c.decoupled,
                                   c.options);
          optim::adam_update(ref_p, g, ref_m, ref_v, step, c.options.lr_, c.weight_decay, c.decoupled, c.options);
          const double tol = tolerance(dt);
          ASSERT_TRUE(all_close(fused_p, ref_p.to_vector<double>(), tol, tol))
              << c.name << " " << dt << " " << shape << " step " << step;
          ASSERT_TRUE(all_close(fused_m, ref_m.to_vector<double>(), tol, tol)) << c.name << " step " << step;
          ASSERT_TRUE(all_close(fused_v, ref_v.to_vector<double>(), tol, tol)) << c.name << " step " << step;
        }
      }
}

// A transposed parameter takes the composed path; a gapped gradient and a
// transposed state buffer are made contiguous for the kernel. Either way the
// result is the reference's.
TEST_P(FusedUpdate, NonContiguousTensorsGiveTheReferenceResult) {
  NoGradGuard no_grad;
  std::mt19937_64 rng(testing::kSeed + 62);
  const TensorOptions o = TensorOptions().device(GetParam());
  const optim::SGDOptions sgd = optim::SGDOptions(0.1).momentum(0.9).nesterov();
  {
    Tensor base = testing::random_tensor({4, 6}, rng, o);
    Tensor p = base.t();  // a non-contiguous view of `base`, updated in place
    const Tensor g = testing::random_tensor({6, 4}, rng, o);
    Tensor ref_p = p.contiguous(), buf, ref_buf;
    optim::fused_sgd_update(p, g, buf, 0.1, 0.01, sgd);
    optim::sgd_update(ref_p, g, ref_buf, 0.1, 0.01, sgd);
    EXPECT_TRUE(all_close(p, ref_p.to_vector<double>(), 1e-6, 1e-6));
    EXPECT_TRUE(all_close(base.t(), ref_p.to_vector<double>(), 1e-6, 1e-6)) << "the update reached the storage";
  }
  {
    Tensor p = testing::random_tensor({5, 3}, rng, o), ref_p = p.clone();
    const Tensor g = testing::noncontiguous(testing::random_tensor({5, 3}, rng, o));
    Tensor m = testing::random_tensor({3, 5}, rng, o).t(), v = testing::random_tensor({5, 3}, rng, o, 0, 1);
    Tensor ref_m = m.clone(), ref_v = v.clone();
    ASSERT_FALSE(m.is_contiguous());
    optim::fused_adam_update(p, g, m, v, 3, 0.01, 0.1, true, optim::AdamOptions(0.01));
    optim::adam_update(ref_p, g, ref_m, ref_v, 3, 0.01, 0.1, true, optim::AdamOptions(0.01));
    EXPECT_TRUE(all_close(p, ref_p.to_vector<double>(), 1e-6, 1e-6));
    EXPECT_TRUE(all_close(m, ref_m.to_vector<double>(), 1e-6, 1e-6));
    EXPECT_TRUE(m.is_contiguous()) << "the slot now holds a contiguous copy";
  }
}

// The optimizers' `fused` option picks the path; both follow PyTorch's rule,
// so a run with each ends within rounding of the other.
TEST_P(FusedUpdate, OptimizerFusedOptionAgreesWithComposed) {
  std::mt19937_64 rng(testing::kSeed + 63);
  const Tensor target = testing::random_tensor({7, 3}, rng, TensorOptions().device(GetParam()));
  const Tensor p0 = testing::random_tensor({7, 3}, rng, TensorOptions().device(GetParam()));
  using Make = std::function<std::unique_ptr<optim::Optimizer>(Tensor, bool)>;
  const std::vector<std::pair<const char*, Make>> makers = {
      {"sgd", [](Tensor p, bool f) {
         return std::make_unique<optim::SGD>(std::vector<Tensor>{p},
                                             optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01).fused(f));
       }},
      {"adam", [](Tensor p, bool f) {
         return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions(0.05).weight_decay(0.1).fused(f));
       }},
      {"adamw", [](Tensor p, bool f) {
         return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(0.05).fused(f));
       }}};
  for (const auto& [name, make] : makers) {
    Tensor a = p0.clone().requires_grad_(), b = p0.clone().requires_grad_();
    auto fused = make(a, true), composed = make(b, false);
    for (int step = 0; step < 5; ++step) {
      for (auto [p, opt] : {std::pair{a, fused.get()}, std::pair{b, composed.get()}}) {
        opt->zero_grad();
        const Tensor d = p - target;
        sum(d * d).backward();
        opt->step();
      }
    }
    EXPECT_TRUE(all_close(a, b.to_vector<double>(), 1e-5, 1e-5)) << name;
    EXPECT_NE(a.to_vector<double>(), p0.to_vector<double>()) << name << " moved";
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, FusedUpdate, ::testing::ValuesIn(testing::test_devices()), testing::device_name);

TEST(FusedUpdateChecks, BumpsVersionsSoSavedTensorsNoticeTheWrite) {
  NoGradGuard no_grad;
  Tensor p = ones({4}), g = ones({4}), buf;
  const auto before = p.storage()->version();
  optim::fused_sgd_update(p, g, buf, 0.1, 0, optim::SGDOptions(0.1).momentum(0.5));
  EXPECT_GT(p.storage()->version(), before);
  const auto buf_before = buf.storage()->version();
  optim::fused_sgd_update(p, g, buf, 0.1, 0, optim::SGDOptions(0.1).momentum(0.5));
  EXPECT_GT(buf.storage()->version(), buf_before);
}

TEST(FusedUpdateChecks, BadArgumentsAreClearErrors) {
  auto throws_with = [](const std::function<void()>& fn, const std::string& fragment) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what()).find(fragment) != std::string::npos;
    }
    return false;
  };
  Tensor p = ones({4}), buf;
  const optim::SGDOptions sgd = optim::SGDOptions(0.1).momentum(0.9);
  {
    NoGradGuard no_grad;
    EXPECT_TRUE(throws_with([&] { optim::fused_sgd_update(p, ones({5}), buf, 0.1, 0, sgd); },
                            "the gradient ([5], float32, cpu) does not match its parameter ([4], float32, cpu)"));
    EXPECT_TRUE(throws_with([&] { optim::fused_sgd_update(p, ones({4}, DType::float64), buf, 0.1, 0, sgd); },
                            "does not match its parameter"));
    Tensor wrong = zeros({2, 2});
    EXPECT_TRUE(throws_with([&] { optim::fused_sgd_update(p, ones({4}), wrong, 0.1, 0, sgd); },
                            "the momentum buffer ([2, 2], float32, cpu) does not match"));
    Tensor m, v;
    EXPECT_TRUE(throws_with([&] { optim::fused_adam_update(p, ones({4}), m, v, 0, 0.1, 0, false, optim::AdamOptions()); },
                            "step counts from 1"));
    EXPECT_TRUE(throws_with([&] { optim::fused_sgd_update(zeros({4}, DType::int64), zeros({4}, DType::int64), buf, 0.1, 0, sgd); },
                            "float32 or float64"));
  }
  Tensor leaf = ones({4}).requires_grad_();
  EXPECT_TRUE(throws_with([&] { optim::fused_sgd_update(leaf, ones({4}), buf, 0.1, 0, sgd); }, "NoGradGuard"));
}

}  // namespace
}  // namespace convkit
