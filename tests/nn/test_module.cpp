// nn::Module and nn::Sequential: registration, naming, traversal, state_dict,
// to(), train/eval, zero_grad and the printed tree.
#include "support/support.h"

#include <algorithm>
#include <string>
#include <vector>

namespace convkit {
namespace {

using testing::all_close;

// Runs fn and checks that it throws convkit::Error mentioning every fragment.
::testing::AssertionResult throws_with(const std::function<void()>& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& f : fragments)
      if (what.find(f) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << f << "': " << what;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no convkit::Error thrown";
}

// y = x w^T + b: a dense layer made of core ops only, with a float and an int buffer.
struct Leaf : nn::Module {
  Tensor w, b, stat, count;
  explicit Leaf(std::int64_t n) : Module("Leaf") {
    w = register_parameter("w", randn({n, 2}));
    b = register_parameter("b", zeros({n}));
    stat = register_buffer("stat", randn({n}));
    count = register_buffer("count", zeros({}, DType::int64));
  }
  Tensor forward(const Tensor& x) override { return matmul(x, w.t()) + b; }
};

struct Tree : nn::Module {
  Tensor scale;
  std::shared_ptr<Leaf> a;
  std::shared_ptr<nn::Sequential> seq;
  Tree() : Module("Tree") {
    scale = register_parameter("scale", ones({1}));
    a = register_module("a", std::make_shared<Leaf>(3));
    seq = register_module("seq", std::make_shared<nn::Sequential>());
    seq->push_back(std::make_shared<Leaf>(2));
    seq->push_back(std::make_shared<Leaf>(4));
  }
};

std::vector<std::string> keys(const StateDict& d) {
  std::vector<std::string> out;
  for (const auto& e : d) out.push_back(e.first);
  return out;
}

TEST(Module, NamesComposeWithDotsInRegistrationOrder) {
  Tree t;
  EXPECT_EQ(keys(t.named_parameters()),
            (std::vector<std::string>{"scale", "a.w", "a.b", "seq.0.w", "seq.0.b", "seq.1.w", "seq.1.b"}));
  EXPECT_EQ(keys(t.named_parameters(false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(keys(t.named_buffers()),
            (std::vector<std::string>{"a.stat", "a.count", "seq.0.stat", "seq.0.count", "seq.1.stat", "seq.1.count"}));
  EXPECT_EQ(keys(t.state_dict()),
            (std::vector<std::string>{"scale", "a.w", "a.b", "a.stat", "a.count", "seq.0.w", "seq.0.b", "seq.0.stat",
                                      "seq.0.count", "seq.1.w", "seq.1.b", "seq.1.stat", "seq.1.count"}));
  EXPECT_EQ(t.parameters().size(), 7u);
  EXPECT_EQ(t.buffers().size(), 6u);
  EXPECT_EQ(t.parameter_count(), 1 + 3 * 2 + 3 + 2 * 2 + 2 + 4 * 2 + 4);
  ASSERT_EQ(t.children().size(), 2u);
  EXPECT_EQ(t.children()[0].get(), t.a.get());
  EXPECT_EQ(t.named_children()[1].first, "seq");
  // The registry holds the very handles the members hold.
  EXPECT_TRUE(t.named_parameters()[1].second.same(t.a->w));
  for (const Tensor& p : t.parameters()) EXPECT_TRUE(p.requires_grad());
  for (const Tensor& b : t.buffers()) EXPECT_FALSE(b.requires_grad());
  int visited = 0;
  t.apply([&](nn::Module&) { ++visited; });
  EXPECT_EQ(visited, 5);  // Tree, a, seq, seq.0, seq.1
}

TEST(Module, RegistrationRejectsBadNamesAndTensors) {
  Leaf m(2);
  EXPECT_TRUE(throws_with([&] { m.register_parameter("w", zeros({1})); }, {"Leaf", "'w'", "already registered"}));
  EXPECT_TRUE(throws_with([&] { m.register_buffer("stat", zeros({1})); }, {"already registered"}));
  EXPECT_TRUE(throws_with([&] { m.register_module("b", std::make_shared<Leaf>(1)); }, {"already registered"}));
  EXPECT_TRUE(throws_with([&] { m.register_parameter("x.y", zeros({1})); }, {"'x.y'", "must not contain '.'"}));
  EXPECT_TRUE(throws_with([&] { m.register_parameter("", zeros({1})); }, {"must not be empty"}));
  EXPECT_TRUE(throws_with([&] { m.register_parameter("idx", zeros({1}, DType::int64)); }, {"float32 or float64"}));
  EXPECT_TRUE(throws_with([&] { m.register_parameter("u", Tensor()); }, {"undefined"}));
  Tensor leaf = ones({2}).requires_grad_();
  EXPECT_TRUE(throws_with([&] { m.register_parameter("computed", leaf * 2.0); }, {"not a leaf", "detach()"}));
  EXPECT_TRUE(throws_with([&] { m.register_buffer("trained", ones({2}).requires_grad_()); }, {"requires grad"}));
  EXPECT_TRUE(throws_with([&] { m.register_module("null", std::shared_ptr<Leaf>()); }, {"null module"}));
  // A frozen parameter: registered, listed, but not trainable.
  Tensor frozen = m.register_parameter("frozen", zeros({1}), false);
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_EQ(m.parameters().size(), 3u);
}

TEST(Module, TiedParametersAreListedOnce) {
  // A module that shares another's weight (weight tying).
  struct Tie : nn::Module {
    explicit Tie(const Tensor& w) : Module("Tie") { register_parameter("w", w); }
  };
  nn::Sequential seq;
  auto first = seq.push_back(std::make_shared<Leaf>(2));
  seq.push_back(std::make_shared<Leaf>(2));
  seq.push_back(std::make_shared<Tie>(first->w));
  EXPECT_EQ(keys(seq.named_parameters()), (std::vector<std::string>{"0.w", "0.b", "1.w", "1.b"}));
  EXPECT_EQ(seq.parameters().size(), 4u);
  // state_dict keeps every name, as PyTorch's does.
  EXPECT_EQ(keys(seq.state_dict()).back(), "2.w");
}

TEST(Module, SequentialChainsAndIndexes) {
  manual_seed(7);
  auto seq = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<Leaf>(2), std::make_shared<Leaf>(2)});
  seq->push_back("named", std::make_shared<Leaf>(2));
  ASSERT_EQ(seq->size(), 3u);
  EXPECT_EQ(keys(seq->named_parameters()),
            (std::vector<std::string>{"0.w", "0.b", "1.w", "1.b", "named.w", "named.b"}));
  auto l0 = seq->at<Leaf>(0);
  auto l1 = seq->at<Leaf>(1);
  auto l2 = seq->at<Leaf>(2);
  EXPECT_EQ((*seq)[2].get(), l2.get());
  const Tensor x = randn({5, 2});
  EXPECT_TRUE(all_close(seq->forward(x), (*l2)((*l1)((*l0)(x))).to_vector<double>(), 0, 0));
  EXPECT_TRUE(throws_with([&] { (*seq)[3]; }, {"index 3 is out of range for 3 modules"}));
  EXPECT_TRUE(throws_with([&] { seq->at<nn::Sequential>(0); }, {"child 0 is a Leaf"}));
  nn::Sequential empty;
  EXPECT_TRUE(empty.forward(x).same(x));
}

// Keeps a handle on its last output, as a user's module may.
struct Stash : nn::Module {
  Tensor last;
  Stash() : Module("Stash") {}
  Tensor forward(const Tensor& x) override { return last = x * 1.0; }
};

// Sequential rectifies in place an activation only it holds; the result and
// the gradients are those of relu, and tensors seen elsewhere (the input, a
// stashed output) keep their values.
TEST(Module, SequentialReluInPlaceMatchesRelu) {
  manual_seed(11);
  auto stash = std::make_shared<Stash>();
  auto first = std::make_shared<Leaf>(2), second = std::make_shared<Leaf>(2);
  // The ReLU after `first` may work in place; the ones on the input and on
  // the stashed output must not.
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>(), first, std::make_shared<nn::ReLU>(),
                                              second, stash, std::make_shared<nn::ReLU>());
  const Tensor x = randn({6, 2}, TensorOptions().requires_grad());
  const std::vector<double> x_before = x.detach().to_vector<double>();
  const Tensor y = seq->forward(x);
  sum(y * y).backward();
  const std::vector<double> gx = x.grad().to_vector<double>(), gw = first->w.grad().to_vector<double>();
  EXPECT_EQ(x.detach().to_vector<double>(), x_before);
  const Tensor before_last = second->forward(relu(first->forward(relu(x))));
  const std::vector<double> stashed = stash->last.detach().to_vector<double>();
  EXPECT_EQ(stashed, before_last.detach().to_vector<double>());
  EXPECT_TRUE(std::any_of(stashed.begin(), stashed.end(), [](double v) { return v < 0; }));
  x.grad().zero_();
  first->w.grad().zero_();
  const Tensor want = relu(before_last);
  EXPECT_EQ(y.detach().to_vector<double>(), want.detach().to_vector<double>());
  sum(want * want).backward();
  EXPECT_EQ(gx, x.grad().to_vector<double>());
  EXPECT_EQ(gw, first->w.grad().to_vector<double>());
}

// Sequential runs BatchNorm2d + ReLU as one batch_norm_relu; outputs and
// gradients are those of the two modules run one after the other.
TEST(Module, SequentialFusesBatchNormAndRelu) {
  manual_seed(12);
  auto bn = std::make_shared<nn::BatchNorm2d>(3);
  nn::init::uniform_(bn->weight, 0.5, 1.5);
  nn::init::uniform_(bn->bias, -0.5, 0.5);
  auto seq = std::make_shared<nn::Sequential>(bn, std::make_shared<nn::ReLU>());
  const Tensor x = randn({4, 3, 5, 5}, TensorOptions().requires_grad());
  const Tensor y = seq->forward(x);
  sum(y * y).backward();
  const std::vector<double> gx = x.grad().to_vector<double>(), gw = bn->weight.grad().to_vector<double>();
  const std::vector<double> mean_after_one = bn->running_mean.to_vector<double>();
  x.grad().zero_();
  bn->weight.grad().zero_();
  const Tensor want = relu(bn->forward(x));
  EXPECT_TRUE(all_close(y, want.to_vector<double>(), 0, 0));
  sum(want * want).backward();
  EXPECT_TRUE(all_close(x.grad(), gx, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(bn->weight.grad(), gw, 1e-6, 1e-6));
  EXPECT_EQ(bn->num_batches_tracked.item(), 2.0);  // each forward counted once
  EXPECT_NE(mean_after_one, std::vector<double>(3, 0.0));  // the fused forward updated the running mean
}

// Sequential runs ReLU + MaxPool2d as max pooling then ReLU (they commute):
// the output and the gradients are those of the modules in their order, bit
// for bit, with windows whose maximum is negative, zero or tied. With a batch
// norm before them, the batch norm then runs without its fused ReLU.
TEST(Module, SequentialPoolsBeforeRectifyingWithTheSameResults) {
  manual_seed(13);
  auto bn = std::make_shared<nn::BatchNorm2d>(2);
  auto pool = std::make_shared<nn::MaxPool2d>(2);
  auto relu_module = std::make_shared<nn::ReLU>();
  for (bool with_bn : {false, true}) {
    SCOPED_TRACE(with_bn ? "batch norm, ReLU, max pool" : "ReLU, max pool");
    std::vector<std::shared_ptr<nn::Module>> modules;
    if (with_bn) modules.push_back(bn);
    modules.push_back(relu_module);
    modules.push_back(pool);
    nn::Sequential seq;
    for (const auto& m : modules) seq.push_back(m);
    // Whole numbers in [-4, 2]: ties within windows, zeros, and windows
    // that are all negative.
    std::vector<double> whole(3 * 2 * 6 * 5);
    for (std::size_t k = 0; k < whole.size(); ++k) whole[k] = static_cast<double>((k * 7 + k / 5) % 7) - 4.0;
    Tensor x = from_vector(whole, {3, 2, 6, 5}).requires_grad_();
    const Tensor y = seq.forward(x);
    const Tensor g = uniform(y.shape(), -1, 1);
    (y * g).sum().backward();
    const std::vector<double> gx = x.grad().to_vector<double>();
    x.grad().zero_();
    Tensor want = x;
    if (with_bn) want = bn->forward(want);
    want = pool->forward(relu_module->forward(want));
    EXPECT_EQ(y.to_vector<double>(), want.to_vector<double>());
    (want * g).sum().backward();
    EXPECT_EQ(gx, x.grad().to_vector<double>());
    const std::vector<double> values = y.to_vector<double>();
    EXPECT_TRUE(std::count(values.begin(), values.end(), 0.0) > 0) << "some windows have no positive maximum";
  }
}

// steps() names the fusions forward makes, and running the steps one after
// another with forward_range is the forward, bit for bit, gradients too.
TEST(Module, SequentialStepsRunAsItsForward) {
  manual_seed(14);
  auto make = [] {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 3, 3).padding(1)));  // 0
    net->push_back(std::make_shared<nn::BatchNorm2d>(3));                                  // 1+2 fused
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 3, 3).padding(1)));  // 3
    net->push_back(std::make_shared<nn::BatchNorm2d>(3));                                  // 4 alone
    net->push_back(std::make_shared<nn::ReLU>());                                          // 5+6 pool first
    net->push_back(std::make_shared<nn::MaxPool2d>(2));
    net->push_back(std::make_shared<nn::ReLU>());                                          // 7, in place
    net->push_back(std::make_shared<nn::Flatten>());                                       // 8
    return net;
  };
  auto net = make();
  using Steps = std::vector<std::pair<std::size_t, std::size_t>>;
  EXPECT_EQ(net->steps(), (Steps{{0, 1}, {1, 3}, {3, 4}, {4, 5}, {5, 7}, {7, 8}, {8, 9}}));
  EXPECT_EQ(nn::Sequential().steps(), Steps{});

  const Tensor x = randn({2, 2, 6, 6}, TensorOptions().requires_grad());
  const std::vector<double> x_before = x.to_vector<double>();
  const Tensor y = net->forward(x);
  const Tensor g = uniform(y.shape(), -1, 1);
  (y * g).sum().backward();
  const std::vector<double> gx = x.grad().to_vector<double>();
  x.grad().zero_();
  for (const Tensor& p : net->parameters()) p.grad().zero_();

  auto again = make();
  again->load_state_dict(net->state_dict());  // the same weights; running statistics of one step each
  net->load_state_dict(again->state_dict());
  Tensor z = x;
  for (const auto& [begin, end] : again->steps()) z = again->forward_range(std::move(z), begin, end, x);
  EXPECT_EQ(x.to_vector<double>(), x_before) << "the caller's input was written";
  EXPECT_EQ(z.to_vector<double>(), y.to_vector<double>());
  (z * g).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), gx);

  EXPECT_TRUE(throws_with([&] { again->forward_range(x, 3, 2, x); }, {"forward_range", "[3, 2)", "9 children"}));
  EXPECT_TRUE(throws_with([&] { again->forward_range(x, 0, 10, x); }, {"forward_range", "[0, 10)"}));
}

TEST(Module, BaseForwardExplainsItself) {
  struct Holder : nn::Module {
    Holder() : Module("Holder") {}
  } h;
  EXPECT_TRUE(throws_with([&] { h.forward(zeros({1})); }, {"Holder", "no forward()"}));
}

TEST(Module, TrainEvalReachesEveryDescendant) {
  Tree t;
  EXPECT_TRUE(t.is_training());
  t.eval();
  t.apply([](nn::Module& m) { EXPECT_FALSE(m.is_training()) << m.name(); });
  t.seq->train();
  EXPECT_FALSE(t.is_training());
  EXPECT_TRUE(t.seq->at<Leaf>(1)->is_training());
  t.train();
  t.apply([](nn::Module& m) { EXPECT_TRUE(m.is_training()) << m.name(); });
}

TEST(Module, StateDictRoundTripsAndSharesStorage) {
  manual_seed(1);
  Tree source;
  manual_seed(2);
  Tree target;
  ASSERT_NE(source.a->w.to_vector<double>(), target.a->w.to_vector<double>());
  {
    NoGradGuard no_grad;
    source.a->count.fill_(5);
  }
  target.load_state_dict(source.state_dict());
  const StateDict want = source.state_dict();
  const StateDict got = target.state_dict();
  ASSERT_EQ(keys(got), keys(want));
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].second.dtype(), want[i].second.dtype()) << got[i].first;
    EXPECT_EQ(got[i].second.to_vector<double>(), want[i].second.to_vector<double>()) << got[i].first;
  }
  // The handles survive loading (values are copied in, not rebound).
  EXPECT_TRUE(target.named_parameters()[1].second.same(target.a->w));
  // state_dict() views the module's storage, as PyTorch's does.
  Tensor view = source.state_dict()[0].second;
  {
    NoGradGuard no_grad;
    view.fill_(42);
  }
  EXPECT_EQ(source.scale.item(), 42.0);
}

TEST(Module, LoadStateDictNamesEveryProblemAndChangesNothing) {
  manual_seed(3);
  Tree t;
  const auto before = t.a->w.to_vector<double>();
  StateDict state = t.state_dict();
  for (auto& e : state) e.second = e.second.clone();

  StateDict missing(state.begin() + 1, state.end());
  EXPECT_TRUE(throws_with([&] { t.load_state_dict(missing); }, {"Tree.load_state_dict", "missing keys: scale"}));
  // Non-strict loading accepts missing keys.
  EXPECT_NO_THROW(t.load_state_dict(missing, false));

  StateDict extra = state;
  extra.emplace_back("a.bogus", zeros({1}));
  extra.emplace_back("head.weight", zeros({1}));
  EXPECT_TRUE(throws_with([&] { t.load_state_dict(extra); }, {"unexpected keys: a.bogus, head.weight"}));
  EXPECT_NO_THROW(t.load_state_dict(extra, false));

  StateDict wrong = state;
  wrong[1].second = zeros({3, 3});  // a.w is [3, 2]
  wrong[1].second.add_(1.0);
  EXPECT_TRUE(throws_with([&] { t.load_state_dict(wrong); }, {"shape mismatches", "a.w: checkpoint [3, 3], model [3, 2]"}));
  EXPECT_TRUE(throws_with([&] { t.load_state_dict(wrong, false); }, {"a.w"}));  // shapes are checked even then
  EXPECT_EQ(t.a->w.to_vector<double>(), before);

  StateDict twice = state;
  twice.push_back(state[0]);
  EXPECT_TRUE(throws_with([&] { t.load_state_dict(twice); }, {"'scale' appears twice"}));
}

TEST(Module, LoadStateDictConvertsDtype) {
  Leaf m(2);
  StateDict state = m.state_dict();
  for (auto& e : state)
    if (is_floating(e.second.dtype())) e.second = full(e.second.shape(), 0.5, DType::float64);
  m.load_state_dict(state);
  EXPECT_EQ(m.w.dtype(), DType::float32);
  EXPECT_EQ(m.w.to_vector<double>(), std::vector<double>(4, 0.5));
}

TEST(Module, ZeroGradClearsOrZeroes) {
  Leaf m(3);
  Tensor x = randn({4, 2});
  sum(m(x)).backward();
  ASSERT_TRUE(m.w.grad().defined());
  m.zero_grad(false);
  EXPECT_EQ(m.w.grad().to_vector<double>(), std::vector<double>(6, 0.0));
  m.zero_grad();
  EXPECT_FALSE(m.w.grad().defined());
  EXPECT_FALSE(m.b.grad().defined());
}

TEST(Module, PrintsTheTreeLikePyTorch) {
  Tree t;
  EXPECT_EQ(t.str(),
            "Tree(\n"
            "  (a): Leaf()\n"
            "  (seq): Sequential(\n"
            "    (0): Leaf()\n"
            "    (1): Leaf()\n"
            "  )\n"
            ")");
  nn::Sequential net;
  net.push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 8, 3).padding(1)));
  net.push_back(std::make_shared<nn::ReLU>());
  net.push_back(std::make_shared<nn::MaxPool2d>(2));
  net.push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(8, 16, 3).stride(2).padding("same").bias(false).algo(ConvAlgo::fft)));
  net.push_back(std::make_shared<nn::BatchNorm2d>(16));
  net.push_back(std::make_shared<nn::Dropout>(0.25));
  net.push_back(std::make_shared<nn::Flatten>());
  net.push_back(std::make_shared<nn::Linear>(72, 4));
  std::ostringstream os;
  os << net;
  EXPECT_EQ(os.str(),
            "Sequential(\n"
            "  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
            "  (1): ReLU()\n"
            "  (2): MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))\n"
            "  (3): Conv2d(8, 16, kernel_size=(3, 3), stride=(2, 2), padding=same, bias=False, algo=fft)\n"
            "  (4): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
            "  (5): Dropout(p=0.25)\n"
            "  (6): Flatten(start_dim=1, end_dim=-1)\n"
            "  (7): Linear(in_features=72, out_features=4, bias=True)\n"
            ")");
}

class ModuleOnDevice : public ::testing::TestWithParam<Device> {};

// The identity rule of Module::to: handles keep their identity, so members,
// named_parameters() and an optimizer made BEFORE the move all see it.
TEST_P(ModuleOnDevice, ToMovesInPlaceKeepingHandles) {
  const Device dev = GetParam();
  manual_seed(11);
  Tree t;
  Tensor x = randn({4, 2});
  sum(t.a->forward(x)).backward();
  const auto w_values = t.a->w.to_vector<double>();
  const auto w_grad = t.a->w.grad().to_vector<double>();
  const Tensor w_handle = t.a->w;
  optim::SGD opt(t.parameters(), optim::SGDOptions(0.1).momentum(0.9));

  t.to(dev);
  for (const auto& [name, tensor] : t.state_dict()) EXPECT_EQ(tensor.device(), dev) << name;
  EXPECT_TRUE(w_handle.same(t.a->w));
  EXPECT_EQ(t.a->w.device(), dev);
  EXPECT_TRUE(t.a->w.requires_grad());
  EXPECT_TRUE(t.a->w.is_leaf());
  EXPECT_EQ(t.a->w.to_vector<double>(), w_values);
  ASSERT_TRUE(t.a->w.grad().defined());
  EXPECT_EQ(t.a->w.grad().device(), dev);
  EXPECT_EQ(t.a->w.grad().to_vector<double>(), w_grad);
  EXPECT_EQ(opt.param_groups()[0].params[1].device(), dev);

  // The optimizer made before the move steps the moved tensors; its
  // momentum buffers are created on the device.
  opt.step();
  EXPECT_EQ(opt.state(t.a->w)->get("momentum_buffer").device(), dev);
  std::vector<double> want(w_values.size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = w_values[i] - 0.1 * w_grad[i];
  EXPECT_TRUE(all_close(t.a->w, want, 1e-6, 1e-6));

  // Training continues on the device.
  t.zero_grad();
  sum(t.a->forward(x.to(dev))).backward();
  EXPECT_EQ(t.a->w.grad().device(), dev);
  opt.step();

  // And back: state made on the device follows the parameter at the next step.
  t.to(kCPU);
  sum(t.a->forward(x)).backward();
  opt.step();
  EXPECT_EQ(opt.state(t.a->w)->get("momentum_buffer").device(), kCPU);
}

TEST_P(ModuleOnDevice, ToDtypeConvertsFloatingTensorsOnly) {
  Tree t;
  t.to(GetParam());
  const Tensor w = t.a->w;
  optim::Adam opt(t.parameters());
  sum(t.a->forward(randn({3, 2}, GetParam()))).backward();
  opt.step();
  t.to(DType::float64);
  EXPECT_TRUE(w.same(t.a->w));
  EXPECT_EQ(t.a->w.dtype(), DType::float64);
  EXPECT_EQ(t.a->stat.dtype(), DType::float64);
  EXPECT_EQ(t.a->count.dtype(), DType::int64);  // counters stay integers
  EXPECT_EQ(t.a->w.grad().dtype(), DType::float64);
  sum(t.a->forward(randn({3, 2}, TensorOptions().dtype(DType::float64).device(GetParam())))).backward();
  opt.step();  // Adam's moments follow the parameter to float64
  EXPECT_EQ(opt.state(t.a->w)->get("exp_avg").dtype(), DType::float64);
  EXPECT_THROW(t.to(DType::int64), Error);
}

INSTANTIATE_TEST_SUITE_P(Devices, ModuleOnDevice, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

}  // namespace
}  // namespace convkit
