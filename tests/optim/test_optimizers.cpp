// SGD, Adam, AdamW and RMSprop against hand-written float64 transcriptions
// of PyTorch's update rules, plus the Optimizer base: groups, skipping,
// zero_grad, state_dict round trips and argument errors.
#include "support/support.h"

#include <cmath>
#include <functional>
#include <memory>

namespace convkit {
namespace {

using testing::all_close;
using V = std::vector<double>;

// A small smooth problem: loss = sum(c (p - t)^2 / 2 + k p^3 / 3), so
// grad = c (p - t) + k p^2, computed by autograd on the convkit side and by
// this formula in the reference.
struct Problem {
  static constexpr double k = 0.1;
  Shape shape;
  V c, t, p0;
};

Problem make_problem(const Shape& shape, std::mt19937_64& rng) {
  Problem pr{shape, {}, {}, {}};
  std::uniform_real_distribution<double> u(-1, 1), pos(0.5, 2);
  for (std::int64_t i = 0; i < shape.numel(); ++i) {
    pr.c.push_back(pos(rng));
    pr.t.push_back(u(rng));
    pr.p0.push_back(u(rng));
  }
  return pr;
}

Tensor loss_of(const Tensor& p, const Problem& pr) {
  const TensorOptions o = TensorOptions().dtype(p.dtype()).device(p.device());
  const Tensor c = from_vector(pr.c, pr.shape, o), t = from_vector(pr.t, pr.shape, o);
  const Tensor d = p - t;
  return sum(c * d * d * 0.5 + p * p * p * (Problem::k / 3.0));
}

V grad_ref(const V& p, const Problem& pr) {
  V g(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) g[i] = pr.c[i] * (p[i] - pr.t[i]) + Problem::k * p[i] * p[i];
  return g;
}

// One parameter's reference optimizer: p is updated in place from g.
using RefStep = std::function<void(V& p, const V& g, double lr, double weight_decay)>;

RefStep sgd_ref(double momentum, double dampening, bool nesterov) {
  auto buf = std::make_shared<V>();
  return [=](V& p, const V& g, double lr, double wd) {
    const bool first = buf->empty();
    buf->resize(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + wd * p[i];
      if (momentum != 0) {
        (*buf)[i] = first ? d : momentum * (*buf)[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * (*buf)[i] : (*buf)[i];
      }
      p[i] -= lr * d;
    }
  };
}

RefStep adam_ref(double beta1, double beta2, double eps, bool decoupled) {
  struct S { V m, v; int t = 0; };
  auto s = std::make_shared<S>();
  return [=](V& p, const V& g, double lr, double wd) {
    if (s->m.empty()) s->m.assign(p.size(), 0), s->v.assign(p.size(), 0);
    ++s->t;
    const double bc1 = 1 - std::pow(beta1, s->t), bc2 = 1 - std::pow(beta2, s->t);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double gi = g[i];
      if (decoupled) {
        p[i] *= 1 - lr * wd;
      } else {
        gi += wd * p[i];
      }
      s->m[i] = beta1 * s->m[i] + (1 - beta1) * gi;
      s->v[i] = beta2 * s->v[i] + (1 - beta2) * gi * gi;
      const double m_hat = s->m[i] / bc1, v_hat = s->v[i] / bc2;
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  };
}

RefStep rmsprop_ref(double alpha, double eps, double momentum, bool centered) {
  struct S { V sq, avg, buf; };
  auto s = std::make_shared<S>();
  return [=](V& p, const V& g, double lr, double wd) {
    if (s->sq.empty()) s->sq.assign(p.size(), 0), s->avg.assign(p.size(), 0), s->buf.assign(p.size(), 0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double gi = g[i] + wd * p[i];
      s->sq[i] = alpha * s->sq[i] + (1 - alpha) * gi * gi;
      double denom;
      if (centered) {
        s->avg[i] = alpha * s->avg[i] + (1 - alpha) * gi;
        denom = std::sqrt(s->sq[i] - s->avg[i] * s->avg[i]) + eps;
      } else {
        denom = std::sqrt(s->sq[i]) + eps;
      }
      if (momentum > 0) {
        s->buf[i] = momentum * s->buf[i] + gi / denom;
        p[i] -= lr * s->buf[i];
      } else {
        p[i] -= lr * gi / denom;
      }
    }
  };
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<optim::ParamGroup>)>;

struct Case {
  std::string name;
  MakeOptimizer make;
  std::function<RefStep()> ref;  // a fresh reference state per parameter
  double lr, weight_decay;       // the optimizer's defaults (group 0)
};

// Two parameters in two groups; group 1 overrides lr and weight decay.
constexpr double kGroup1Lr = 0.03, kGroup1Wd = 0.2;

void check_against_reference(const Case& c, DType dtype, Device device) {
  std::mt19937_64 rng(testing::kSeed + 40);
  const std::vector<Problem> problems = {make_problem({3, 4}, rng), make_problem({5}, rng)};
  std::vector<Tensor> params;
  std::vector<V> ref_params;
  std::vector<RefStep> refs;
  for (const auto& pr : problems) {
    params.push_back(from_vector(pr.p0, pr.shape, TensorOptions().dtype(dtype).device(device)).requires_grad_());
    ref_params.push_back(pr.p0);
    refs.push_back(c.ref());
  }
  auto opt = c.make({optim::ParamGroup{{params[0]}, {}, {}}, optim::ParamGroup{{params[1]}, kGroup1Lr, kGroup1Wd}});
  const double lrs[] = {c.lr, kGroup1Lr}, wds[] = {c.weight_decay, kGroup1Wd};
  const double tol = dtype == DType::float64 ? 1e-12 : 2e-6;
  for (int step = 1; step <= 6; ++step) {
    opt->zero_grad();
    Tensor loss = loss_of(params[0], problems[0]) + loss_of(params[1], problems[1]);
    loss.backward();
    opt->step();
    for (std::size_t k = 0; k < params.size(); ++k) {
      refs[k](ref_params[k], grad_ref(ref_params[k], problems[k]), lrs[k], wds[k]);
      ASSERT_TRUE(all_close(params[k], ref_params[k], tol, tol))
          << c.name << " " << dtype << " parameter " << k << " after step " << step;
    }
  }
  EXPECT_EQ(opt->state(params[0])->step, 6);
}

std::vector<Case> cases() {
  using namespace optim;
  auto sgd = [](SGDOptions o) {
    return [o](std::vector<ParamGroup> g) { return std::make_unique<SGD>(std::move(g), o); };
  };
  auto adam = [](AdamOptions o) {
    return [o](std::vector<ParamGroup> g) { return std::make_unique<Adam>(std::move(g), o); };
  };
  auto adamw = [](AdamOptions o) {
    return [o](std::vector<ParamGroup> g) { return std::make_unique<AdamW>(std::move(g), o); };
  };
  auto rms = [](RMSpropOptions o) {
    return [o](std::vector<ParamGroup> g) { return std::make_unique<RMSprop>(std::move(g), o); };
  };
  return {
      {"sgd_plain", sgd(SGDOptions(0.1)), [] { return sgd_ref(0, 0, false); }, 0.1, 0},
      {"sgd_momentum", sgd(SGDOptions(0.1).momentum(0.9)), [] { return sgd_ref(0.9, 0, false); }, 0.1, 0},
      {"sgd_dampening_decay", sgd(SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(0.01)),
       [] { return sgd_ref(0.8, 0.3, false); }, 0.05, 0.01},
      {"sgd_nesterov", sgd(SGDOptions(0.1).momentum(0.9).nesterov().weight_decay(0.05)),
       [] { return sgd_ref(0.9, 0, true); }, 0.1, 0.05},
      {"adam", adam(AdamOptions(0.01)), [] { return adam_ref(0.9, 0.999, 1e-8, false); }, 0.01, 0},
      {"adam_l2", adam(AdamOptions(0.02).betas(0.8, 0.95).eps(1e-6).weight_decay(0.1)),
       [] { return adam_ref(0.8, 0.95, 1e-6, false); }, 0.02, 0.1},
      {"adamw", adamw(AdamWOptions(0.01)), [] { return adam_ref(0.9, 0.999, 1e-8, true); }, 0.01, 0.01},
      {"adamw_decay", adamw(AdamWOptions(0.02).betas(0.85, 0.99).weight_decay(0.3)),
       [] { return adam_ref(0.85, 0.99, 1e-8, true); }, 0.02, 0.3},
      // The composed reference twins (fused(false)) follow the same rules.
      {"sgd_nesterov_composed", sgd(SGDOptions(0.1).momentum(0.9).nesterov().weight_decay(0.05).fused(false)),
       [] { return sgd_ref(0.9, 0, true); }, 0.1, 0.05},
      {"adam_l2_composed", adam(AdamOptions(0.02).betas(0.8, 0.95).eps(1e-6).weight_decay(0.1).fused(false)),
       [] { return adam_ref(0.8, 0.95, 1e-6, false); }, 0.02, 0.1},
      {"adamw_composed", adamw(AdamWOptions(0.02).betas(0.85, 0.99).weight_decay(0.3).fused(false)),
       [] { return adam_ref(0.85, 0.99, 1e-8, true); }, 0.02, 0.3},
      {"rmsprop", rms(RMSpropOptions(0.01)), [] { return rmsprop_ref(0.99, 1e-8, 0, false); }, 0.01, 0},
      {"rmsprop_momentum", rms(RMSpropOptions(0.01).alpha(0.9).momentum(0.5)),
       [] { return rmsprop_ref(0.9, 1e-8, 0.5, false); }, 0.01, 0},
      {"rmsprop_centered", rms(RMSpropOptions(0.01).centered().eps(1e-6)),
       [] { return rmsprop_ref(0.99, 1e-6, 0, true); }, 0.01, 0},
      {"rmsprop_all", rms(RMSpropOptions(0.005).alpha(0.95).momentum(0.7).centered().weight_decay(0.02)),
       [] { return rmsprop_ref(0.95, 1e-8, 0.7, true); }, 0.005, 0.02},
  };
}

class OptimizerOnDevice : public ::testing::TestWithParam<Device> {};

TEST_P(OptimizerOnDevice, StepsMatchPyTorchRulesInFloat64AndFloat32) {
  for (const Case& c : cases())
    for (DType dt : {DType::float64, DType::float32}) check_against_reference(c, dt, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Devices, OptimizerOnDevice, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

TEST(Optimizer, GroupsTakeDefaultsUnlessTheyOverride) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({2}).requires_grad_();
  optim::SGD opt({optim::ParamGroup{{a}, {}, {}}, optim::ParamGroup{{b}, 0.5, {}}},
                 optim::SGDOptions(0.1).weight_decay(0.01));
  EXPECT_EQ(*opt.param_groups()[0].lr, 0.1);
  EXPECT_EQ(*opt.param_groups()[1].lr, 0.5);
  EXPECT_EQ(*opt.param_groups()[1].weight_decay, 0.01);
  Tensor c = zeros({1}).requires_grad_();
  opt.add_param_group({{c}, {}, 0.0});
  EXPECT_EQ(*opt.param_groups()[2].lr, 0.1);
  EXPECT_EQ(*opt.param_groups()[2].weight_decay, 0.0);
  EXPECT_EQ(opt.name(), "SGD");
}

TEST(Optimizer, SkipsParametersWithoutGradientsAndZeroesGrads) {
  Tensor a = ones({3}).requires_grad_(), b = ones({3}).requires_grad_();
  optim::Adam opt(std::vector<Tensor>{a, b}, optim::AdamOptions(0.1));
  sum(a * 2.0).backward();
  opt.step();
  EXPECT_NE(a.to_vector<double>(), V(3, 1.0));
  EXPECT_EQ(b.to_vector<double>(), V(3, 1.0));
  EXPECT_EQ(opt.state(b), nullptr);
  ASSERT_NE(opt.state(a), nullptr);
  EXPECT_EQ(opt.state(a)->step, 1);
  opt.zero_grad(false);
  EXPECT_EQ(a.grad().to_vector<double>(), V(3, 0.0));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, LearningRateChangesTakeEffectAtTheNextStep) {
  Tensor p = zeros({1}).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(1.0));
  sum(p).backward();
  opt.step();
  EXPECT_DOUBLE_EQ(p.item(), -1.0);
  opt.param_groups()[0].lr = 0.25;
  opt.step();  // the same gradient again
  EXPECT_DOUBLE_EQ(p.item(), -1.25);
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().clone().requires_grad_());
  return out;
}

// Resuming from state_dict continues exactly where the original would have gone.
TEST(Optimizer, StateDictRoundTripResumesBitExactly) {
  std::mt19937_64 rng(testing::kSeed + 41);
  const std::vector<Problem> problems = {make_problem({3, 4}, rng), make_problem({5}, rng)};
  for (const Case& c : cases()) {
    std::vector<Tensor> params;
    for (const auto& pr : problems) params.push_back(from_vector(pr.p0, pr.shape).requires_grad_());
    auto groups = [](const std::vector<Tensor>& ps) {
      return std::vector<optim::ParamGroup>{{{ps[0]}, {}, {}}, {{ps[1]}, kGroup1Lr, kGroup1Wd}};
    };
    auto run = [&](optim::Optimizer& opt, const std::vector<Tensor>& ps, int steps) {
      for (int s = 0; s < steps; ++s) {
        opt.zero_grad();
        (loss_of(ps[0], problems[0]) + loss_of(ps[1], problems[1])).backward();
        opt.step();
      }
    };
    auto original = c.make(groups(params));
    run(*original, params, 3);
    original->param_groups()[1].lr = 0.07;  // as a scheduler would
    const StateDict saved = original->state_dict();
    EXPECT_EQ(find_tensor(saved, "param_groups.1.lr").item(), 0.07) << c.name;
    EXPECT_EQ(find_tensor(saved, "state.1.step").item(), 3.0) << c.name;
    EXPECT_EQ(find_tensor(saved, "state.1.step").dtype(), DType::int64) << c.name;

    std::vector<Tensor> resumed_params = clones(params);
    auto resumed = c.make(groups(resumed_params));
    resumed->load_state_dict(saved);
    EXPECT_EQ(*resumed->param_groups()[1].lr, 0.07) << c.name;
    // `saved` shares storage with the original's state (as PyTorch's does),
    // so if loading aliased instead of copying, the two runs below would
    // update one buffer twice and diverge.
    run(*original, params, 3);
    run(*resumed, resumed_params, 3);
    for (std::size_t k = 0; k < params.size(); ++k)
      EXPECT_EQ(params[k].to_vector<double>(), resumed_params[k].to_vector<double>()) << c.name << " " << k;
  }
}

TEST(Optimizer, StateDictNamesBuffersPerParameter) {
  Tensor a = ones({2}).requires_grad_(), b = ones({3}).requires_grad_();
  optim::RMSprop opt(std::vector<Tensor>{a, b}, optim::RMSpropOptions().momentum(0.9).centered());
  sum(a * b.sum()).backward();
  opt.step();
  std::vector<std::string> keys;
  for (const auto& e : opt.state_dict()) keys.push_back(e.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"param_groups.0.lr", "param_groups.0.weight_decay", "state.0.step",
                                            "state.0.grad_avg", "state.0.momentum_buffer", "state.0.square_avg",
                                            "state.1.step", "state.1.grad_avg", "state.1.momentum_buffer",
                                            "state.1.square_avg"}));
}

TEST(Optimizer, LoadStateDictRejectsWhatDoesNotFit) {
  Tensor a = ones({2}).requires_grad_();
  optim::Adam opt(std::vector<Tensor>{a});
  sum(a).backward();
  opt.step();
  const auto before = opt.state(a)->get("exp_avg").to_vector<double>();
  auto fails_with = [&](StateDict sd, const std::string& fragment) {
    try {
      opt.load_state_dict(sd);
    } catch (const Error& e) {
      return std::string(e.what()).find(fragment) != std::string::npos;
    }
    return false;
  };
  StateDict good = opt.state_dict();
  StateDict bad_shape = good;
  bad_shape.emplace_back("state.0.exp_avg_sq", zeros({3}));
  EXPECT_TRUE(fails_with(bad_shape, "state.0.exp_avg_sq has shape [3] but parameter 0 has shape [2]"));
  StateDict bad_index = good;
  bad_index.emplace_back("state.1.exp_avg", zeros({2}));
  EXPECT_TRUE(fails_with(bad_index, "unexpected key state.1.exp_avg (Adam has 1 groups, 1 parameters)"));
  StateDict bad_name = good;
  bad_name.emplace_back("state.0.momentum_buffer", zeros({2}));  // an SGD buffer
  EXPECT_TRUE(fails_with(bad_name, "unexpected key state.0.momentum_buffer"));
  StateDict bad_group = good;
  bad_group.emplace_back("param_groups.4.lr", scalar_tensor(1.0));
  EXPECT_TRUE(fails_with(bad_group, "param_groups.4.lr"));
  EXPECT_TRUE(fails_with({{"lr", scalar_tensor(1.0)}}, "unexpected key lr"));
  EXPECT_EQ(opt.state(a)->get("exp_avg").to_vector<double>(), before);  // nothing was loaded
  EXPECT_NO_THROW(opt.load_state_dict(good));
}

TEST(Optimizer, ConstructorsCheckTheirArguments) {
  Tensor a = ones({2}).requires_grad_();
  auto throws_with = [](const std::function<void()>& fn, const std::string& fragment) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what()).find(fragment) != std::string::npos;
    }
    return false;
  };
  using namespace optim;
  EXPECT_TRUE(throws_with([&] { SGD(std::vector<Tensor>{}, SGDOptions(0.1)); }, "parameter group 0 is empty"));
  EXPECT_TRUE(throws_with([&] { SGD(std::vector<Tensor>{a * 2.0}, SGDOptions(0.1)); }, "not a leaf"));
  EXPECT_TRUE(throws_with([&] { SGD(std::vector<Tensor>{a, a}, SGDOptions(0.1)); }, "more than once"));
  EXPECT_TRUE(throws_with([&] { SGD(std::vector<Tensor>{zeros({1}, DType::int64)}, SGDOptions(0.1)); },
                          "float32 or float64"));
  EXPECT_TRUE(throws_with([&] { SGD(std::vector<Tensor>{a}, SGDOptions(-1)); }, "lr must be non-negative"));
  EXPECT_TRUE(throws_with([&] { SGD(std::vector<Tensor>{a}, SGDOptions(0.1).nesterov()); },
                          "nesterov momentum requires momentum > 0"));
  EXPECT_TRUE(throws_with([&] { Adam(std::vector<Tensor>{a}, AdamOptions().betas(0.9, 1.0)); },
                          "betas must be in [0, 1)"));
  EXPECT_TRUE(throws_with([&] { RMSprop(std::vector<Tensor>{a}, RMSpropOptions().alpha(1.5)); },
                          "alpha must be in [0, 1]"));
  EXPECT_TRUE(throws_with([&] { SGD({ParamGroup{{a}, -0.5, {}}}, SGDOptions(0.1)); },
                          "learning rate of group 0"));
  // AdamW's default weight decay is PyTorch's 1e-2.
  AdamW w(std::vector<Tensor>{a});
  EXPECT_EQ(*w.param_groups()[0].weight_decay, 1e-2);
  EXPECT_EQ(w.name(), "AdamW");
}

}  // namespace
}  // namespace convkit
