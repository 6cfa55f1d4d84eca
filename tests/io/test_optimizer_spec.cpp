// Optimizer specs: every optimizer type rebuilds with its hyper-parameters and
// param groups, and bad specs name what is wrong.
#include "io/io_testing.h"

namespace convkit {
namespace {

using io_testing::throws_with;

std::vector<Tensor> params(int n) {
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) out.push_back(ones({i + 1}).requires_grad_());
  return out;
}

std::vector<optim::ParamGroup> two_groups(const std::vector<Tensor>& p) {
  optim::ParamGroup a, b;
  a.params = {p[0], p[1]};
  b.params = {p[2]};
  b.lr = 0.5;
  return {a, b};
}

TEST(OptimizerSpec, EveryTypeRoundTrips) {
  const auto p = params(3);
  std::vector<std::unique_ptr<optim::Optimizer>> all;
  all.push_back(std::make_unique<optim::SGD>(
      two_groups(p), optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(1e-4).nesterov(false).fused(false)));
  all.push_back(std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9).nesterov()));
  all.push_back(std::make_unique<optim::Adam>(p, optim::AdamOptions(3e-4).betas(0.8, 0.99).eps(1e-7)));
  all.push_back(std::make_unique<optim::AdamW>(two_groups(p)));
  all.push_back(std::make_unique<optim::RMSprop>(
      p, optim::RMSpropOptions(1e-3).alpha(0.9).eps(1e-6).weight_decay(0.01).momentum(0.5).centered()));
  const std::vector<std::string> want = {
      "SGD(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-04, nesterov=false, fused=false, groups=[2, 1])",
      "SGD(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=true, fused=true, groups=[3])",
      "Adam(lr=3e-04, betas=[0.8, 0.99], eps=1e-07, weight_decay=0.0, fused=true, groups=[3])",
      "AdamW(lr=0.001, betas=[0.9, 0.999], eps=1e-08, weight_decay=0.01, fused=true, groups=[2, 1])",
      "RMSprop(lr=0.001, alpha=0.9, eps=1e-06, weight_decay=0.01, momentum=0.5, centered=true, groups=[3])",
  };
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string spec = optim::optimizer_spec(*all[i]);
    EXPECT_EQ(spec, want[i]);
    auto rebuilt = optim::build_optimizer(spec, params(3));
    EXPECT_EQ(rebuilt->name(), all[i]->name());
    EXPECT_EQ(optim::optimizer_spec(*rebuilt), spec);
    ASSERT_EQ(rebuilt->param_groups().size(), all[i]->param_groups().size());
  }
  // AdamW stays AdamW (it derives from Adam).
  EXPECT_NE(dynamic_cast<optim::AdamW*>(optim::build_optimizer(want[3], params(3)).get()), nullptr);
}

TEST(OptimizerSpec, GroupsSplitTheParametersInOrder) {
  const auto p = params(3);
  auto opt = optim::build_optimizer("SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=false, "
                                    "groups=[1, 2])",
                                    p);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  EXPECT_TRUE(opt->param_groups()[0].params[0].same(p[0]));
  EXPECT_TRUE(opt->param_groups()[1].params[1].same(p[2]));
}

TEST(OptimizerSpec, Errors) {
  const std::string sgd = "SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=false, groups=[3])";
  EXPECT_TRUE(throws_with([&] { optim::build_optimizer(sgd, params(2)); }, {"more parameters than the 2 given"}));
  EXPECT_TRUE(throws_with([&] { optim::build_optimizer(sgd, params(4)); }, {"hold 3 parameters but 4 were given"}));
  EXPECT_TRUE(throws_with([] { optim::build_optimizer("Adagrad(lr=0.1)", params(1)); },
                          {"unknown optimizer type 'Adagrad'", "Adam"}));
  EXPECT_TRUE(throws_with([] { optim::build_optimizer("SGD(lr=0.1, groups=[1])", params(1)); },
                          {"SGD", "missing option 'momentum'"}));
  EXPECT_TRUE(throws_with(
      [] {
        optim::build_optimizer("SGD(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=false, "
                               "groups=[1], foo=1)",
                               params(1));
      },
      {"has no option 'foo'"}));
  EXPECT_TRUE(throws_with([] { optim::build_optimizer("Adam(lr=0.1, betas=[0.9], eps=1e-8, weight_decay=0.0, groups=[1])", params(1)); },
                          {"betas must list 2 numbers"}));
}

// An optimizer that is none of the four has no spec.
struct Frozen : optim::Optimizer {
  explicit Frozen(std::vector<Tensor> p) : Optimizer("Frozen", {optim::ParamGroup{std::move(p), {}, {}}}, 0.1, 0) {}
  std::vector<std::string> state_names() const override { return {}; }
  void update(const Tensor&, const Tensor&, optim::ParamState&, const optim::ParamGroup&) override {}
};

TEST(OptimizerSpec, UnknownTypeHasNoSpec) {
  Frozen f(params(1));
  EXPECT_TRUE(throws_with([&] { optim::optimizer_spec(f); }, {"'Frozen'", "SGD, Adam, AdamW, RMSprop"}));
}

}  // namespace
}  // namespace convkit
