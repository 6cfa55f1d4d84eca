// LR schedulers: each one's sequence against PyTorch's closed form (written
// out here independently), and CosineAnnealingLR also against PyTorch's
// recursive (chainable) form, which is what torch actually runs.
#include "support/support.h"

#include <cmath>
#include <functional>
#include <numbers>

namespace convkit {
namespace {

constexpr double kBase0 = 0.1, kBase1 = 0.02;

struct Fixture {
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  optim::SGD opt{std::vector<optim::ParamGroup>{{{a}, kBase0, {}}, {{b}, kBase1, {}}}, optim::SGDOptions(kBase0)};
};

// Steps `sched` `epochs` times and checks get_lr() and the groups' rates
// against want(base, epoch) at every epoch, starting with epoch 0.
void expect_sequence(optim::LRScheduler& sched, optim::Optimizer& opt, int epochs,
                     const std::function<double(double, int)>& want) {
  for (int e = 0; e <= epochs; ++e) {
    if (e > 0) sched.step();
    ASSERT_EQ(sched.last_epoch(), e);
    const auto lr = sched.get_lr();
    ASSERT_EQ(lr.size(), 2u);
    const double bases[] = {kBase0, kBase1};
    for (std::size_t g = 0; g < 2; ++g) {
      const double expected = want(bases[g], e);
      EXPECT_NEAR(lr[g], expected, 1e-15 * std::max(1.0, expected)) << "epoch " << e << " group " << g;
      EXPECT_EQ(*opt.param_groups()[g].lr, lr[g]) << "epoch " << e;
    }
  }
}

TEST(Scheduler, StepLR) {
  Fixture f;
  optim::StepLR sched(f.opt, 3, 0.5);
  expect_sequence(sched, f.opt, 10, [](double base, int e) { return base * std::pow(0.5, e / 3); });
  // Spelled out for group 0: 0.1 x3, 0.05 x3, 0.025 x3, 0.0125.
  Fixture g;
  optim::StepLR s2(g.opt, 3, 0.5);
  std::vector<double> seen;
  for (int e = 0; e < 10; ++e, s2.step()) seen.push_back(s2.get_lr()[0]);
  const std::vector<double> spelled = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125};
  for (std::size_t i = 0; i < spelled.size(); ++i) EXPECT_NEAR(seen[i], spelled[i], 1e-17);
}

TEST(Scheduler, MultiStepLRCountsMilestonesPassed) {
  Fixture f;
  optim::MultiStepLR sched(f.opt, {6, 2, 6, 9}, 0.1);  // unsorted, 6 twice
  expect_sequence(sched, f.opt, 12, [](double base, int e) {
    int passed = (e >= 2) + 2 * (e >= 6) + (e >= 9);
    return base * std::pow(0.1, passed);
  });
}

TEST(Scheduler, ExponentialLR) {
  Fixture f;
  optim::ExponentialLR sched(f.opt, 0.9);
  expect_sequence(sched, f.opt, 15, [](double base, int e) { return base * std::pow(0.9, e); });
}

TEST(Scheduler, CosineAnnealingLRClosedForm) {
  Fixture f;
  optim::CosineAnnealingLR sched(f.opt, 8, 0.001);
  expect_sequence(sched, f.opt, 20, [](double base, int e) {
    return 0.001 + (base - 0.001) * (1 + std::cos(std::numbers::pi * e / 8)) / 2;
  });
}

// torch.optim.lr_scheduler.CosineAnnealingLR.get_lr(), transcribed: the
// recursive form PyTorch applies step by step. Over several periods it must
// agree with the closed form we use.
TEST(Scheduler, CosineAnnealingLRMatchesPyTorchsRecursion) {
  const int t_max = 7;
  const double eta_min = 0.004, base = 0.1, pi = std::numbers::pi;
  Fixture f;
  optim::CosineAnnealingLR sched(f.opt, t_max, eta_min);
  double lr = base;
  for (int e = 1; e <= 4 * t_max; ++e) {
    if ((e - 1 - t_max) % (2 * t_max) == 0) {
      lr = lr + (base - eta_min) * (1 - std::cos(pi / t_max)) / 2;
    } else {
      lr = (1 + std::cos(pi * e / t_max)) / (1 + std::cos(pi * (e - 1) / t_max)) * (lr - eta_min) + eta_min;
    }
    sched.step();
    EXPECT_NEAR(sched.get_lr()[0], lr, 1e-12) << "epoch " << e;
  }
}

TEST(Scheduler, LinearWarmupStandalone) {
  Fixture f;
  optim::LinearWarmup sched(f.opt, 4, 0.25);
  EXPECT_DOUBLE_EQ(*f.opt.param_groups()[0].lr, 0.025);  // written at construction
  expect_sequence(sched, f.opt, 8, [](double base, int e) {
    return base * (0.25 + 0.75 * std::min(e, 4) / 4.0);
  });
}

TEST(Scheduler, LinearWarmupThenCosine) {
  Fixture f;
  auto cosine = std::make_unique<optim::CosineAnnealingLR>(f.opt, 10);
  optim::LinearWarmup sched(f.opt, 5, 0.1, std::move(cosine));
  expect_sequence(sched, f.opt, 16, [](double base, int e) {
    if (e < 5) return base * (0.1 + 0.9 * e / 5.0);
    return base * (1 + std::cos(std::numbers::pi * (e - 5) / 10)) / 2;
  });
}

TEST(Scheduler, ResumesAtAnEpochAndDrivesTheOptimizer) {
  Fixture f;
  optim::StepLR sched(f.opt, 2, 0.1);
  sched.set_last_epoch(5);
  EXPECT_NEAR(*f.opt.param_groups()[0].lr, kBase0 * 0.01, 1e-17);
  // The optimizer really uses the scheduled rate.
  sum(f.a).backward();
  f.opt.step();
  EXPECT_NEAR(f.a.item(), -kBase0 * 0.01, 1e-9);
}

TEST(Scheduler, ArgumentErrors) {
  Fixture f;
  EXPECT_THROW(optim::StepLR(f.opt, 0), Error);
  EXPECT_THROW(optim::ExponentialLR(f.opt, 0.0), Error);
  EXPECT_THROW(optim::CosineAnnealingLR(f.opt, 0), Error);
  EXPECT_THROW(optim::LinearWarmup(f.opt, 3, 0.0), Error);
  EXPECT_THROW(optim::MultiStepLR(f.opt, {-1}), Error);
  optim::StepLR sched(f.opt, 2);
  EXPECT_THROW(sched.set_last_epoch(-1), Error);
  f.opt.add_param_group({{zeros({1}).requires_grad_()}, {}, {}});
  EXPECT_THROW(sched.step(), Error);  // built for 2 groups, now 3
  // A wrapped scheduler from another optimizer is refused.
  Fixture other;
  other.opt.param_groups()[0].lr = 0.5;
  auto foreign = std::make_unique<optim::ExponentialLR>(other.opt, 0.9);
  Fixture mine;
  EXPECT_THROW(optim::LinearWarmup(mine.opt, 2, 0.5, std::move(foreign)), Error);
}

}  // namespace
}  // namespace convkit
