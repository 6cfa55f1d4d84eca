// BasicBlock and ResNet-18 (CIFAR variant): structure, parameter count,
// names, the residual wiring, and a training-mode forward/backward.
#include "support/support.h"

namespace convkit {
namespace {

using testing::all_close;
using testing::random_tensor;

TEST(ResNet, Resnet18CifarHasTheKnownParameterCountAndNames) {
  auto net = nn::resnet18_cifar(10);
  EXPECT_EQ(net->parameter_count(), 11173962);
  EXPECT_EQ(nn::resnet18_cifar(100)->parameter_count(), 11173962 + 90 * 512 + 90);
  const StateDict state = net->state_dict();
  for (const char* name : {"conv1.weight", "bn1.running_mean", "layer1.0.conv1.weight", "layer1.1.bn2.bias",
                           "layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_var",
                           "layer4.1.bn2.num_batches_tracked", "fc.weight", "fc.bias"})
    EXPECT_TRUE(find_tensor(state, name).defined()) << name;
  EXPECT_FALSE(find_tensor(state, "layer1.0.downsample.0.weight").defined());  // identity shortcut
  EXPECT_FALSE(find_tensor(state, "conv1.bias").defined());                    // convs before BN have no bias
  EXPECT_EQ(find_tensor(state, "layer3.0.conv1.weight").shape(), (Shape{256, 128, 3, 3}));
  EXPECT_EQ(find_tensor(state, "fc.weight").shape(), (Shape{10, 512}));
  // 20 convs / BNs / 1 linear: 62 parameter tensors (conv 20 + BN 2*20 + fc 2).
  EXPECT_EQ(net->parameters().size(), 62u);
  EXPECT_EQ(net->named_children()[3].first, "layer1");
  EXPECT_THROW(nn::resnet18_cifar(0), Error);
}

class ResNetOnDevice : public ::testing::TestWithParam<Device> {};

TEST_P(ResNetOnDevice, BasicBlockAddsTheShortcut) {
  std::mt19937_64 rng(testing::kSeed + 60);
  const TensorOptions o = TensorOptions().device(GetParam());
  // With bn2's scale and shift at zero the residual branch is zero, so the
  // block computes relu(shortcut(x)).
  nn::BasicBlock same(8, 8, 1);
  same.to(GetParam());
  EXPECT_EQ(same.downsample, nullptr);
  nn::init::zeros_(same.bn2->weight);
  nn::init::zeros_(same.bn2->bias);
  const Tensor x = random_tensor({2, 8, 6, 6}, rng, o);
  EXPECT_TRUE(all_close(same(x), relu(x).to_vector<double>(), 1e-6, 0));

  nn::BasicBlock down(8, 16, 2);
  down.to(GetParam());
  ASSERT_NE(down.downsample, nullptr);
  EXPECT_EQ(down.downsample->size(), 2u);
  nn::init::zeros_(down.bn2->weight);
  nn::init::zeros_(down.bn2->bias);
  const Tensor y = down(x);
  EXPECT_EQ(y.shape(), (Shape{2, 16, 3, 3}));
  EXPECT_TRUE(all_close(y, relu(down.downsample->forward(x)).to_vector<double>(), 1e-6, 0));
  EXPECT_NE(nn::BasicBlock(8, 8, 2).downsample, nullptr);  // stride alone needs a projection
}

TEST_P(ResNetOnDevice, Resnet18TrainsAStepAndEvaluates) {
  manual_seed(3);
  auto net = nn::resnet18_cifar(10);
  net->to(GetParam());
  const TensorOptions o = TensorOptions().device(GetParam());
  const Tensor x = randn({2, 3, 32, 32}, o);
  const Tensor labels = from_vector(std::vector<std::int64_t>{3, 7}, {2}, TensorOptions().dtype(DType::int64).device(GetParam()));
  const Tensor logits = (*net)(x);
  EXPECT_EQ(logits.shape(), (Shape{2, 10}));
  cross_entropy(logits, labels).backward();
  for (const auto& [name, p] : net->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().shape(), p.shape()) << name;
  }
  EXPECT_EQ(find_tensor(net->state_dict(), "layer2.1.bn1.num_batches_tracked").item(), 1.0);
  net->eval();
  NoGradGuard no_grad;
  const Tensor a = (*net)(x), b = (*net)(x);
  EXPECT_TRUE(all_close(a, b.to_vector<double>(), 0, 0));  // eval is deterministic
}

// In float64 and training mode (batch statistics), with the identity and the
// projection shortcut: the input gradient by gradcheck, and every parameter's
// gradient against central differences of the same projection <block(x), v>
// at its first and last elements.
TEST_P(ResNetOnDevice, BasicBlockGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(testing::kSeed + 61);
  const TensorOptions o = TensorOptions().dtype(DType::float64).device(GetParam());
  for (const std::int64_t stride : {1, 2}) {
    nn::BasicBlock block(4, stride == 1 ? 4 : 6, stride);
    block.to(DType::float64);
    block.to(GetParam());
    const Tensor x = random_tensor({2, 4, 4, 4}, rng, o).requires_grad_(true);
    autograd::GradcheckOptions sampled;
    sampled.max_elements = 16;  // each element costs two forward passes, which sim runs slowly
    EXPECT_TRUE(testing::grad_ok([&](const std::vector<Tensor>& in) { return block(in[0]); }, {x}, sampled))
        << "stride " << stride;

    const Tensor v = random_tensor(block(x).shape(), rng, o);
    auto projection = [&] {
      NoGradGuard no_grad;
      return (block(x) * v).sum().item();
    };
    block.zero_grad();
    (block(x) * v).sum().backward();
    constexpr double kEps = 1e-6;
    for (const auto& [name, param] : block.named_parameters()) {
      const Tensor& p = param;  // clang 14 cannot capture a structured binding in a lambda
      ASSERT_TRUE(p.grad().defined()) << name;
      const std::vector<double> analytic = p.grad().to_vector<double>();
      std::vector<double> values = p.to_vector<double>();
      for (std::int64_t i : {std::int64_t{0}, p.numel() - 1}) {
        const double original = values[static_cast<std::size_t>(i)];
        auto set = [&](double value) {
          values[static_cast<std::size_t>(i)] = value;
          NoGradGuard no_grad;
          p.detach().copy_(from_vector(values, p.shape(), o));
        };
        set(original + kEps);
        const double plus = projection();
        set(original - kEps);
        const double minus = projection();
        set(original);
        const double numeric = (plus - minus) / (2 * kEps);
        EXPECT_NEAR(analytic[static_cast<std::size_t>(i)], numeric, 1e-5 + 1e-4 * std::abs(numeric))
            << "stride " << stride << ", " << name << "[" << i << "]";
      }
    }
  }
}

// The block runs bn1 with its ReLU and bn2 with the shortcut's add and the
// final ReLU fused (batch_norm_relu, batch_norm_add_relu). Its output, the
// gradients of its input and of every parameter, and its running statistics
// equal those of the unfused composition of the same layers, in training and
// in eval, with either shortcut.
TEST_P(ResNetOnDevice, FusedBlockMatchesTheUnfusedComposition) {
  std::mt19937_64 rng(testing::kSeed + 62);
  for (DType dt : {DType::float32, DType::float64})
    for (const std::int64_t stride : {1, 2}) {
      const TensorOptions o = TensorOptions().dtype(dt).device(GetParam());
      const double tol = dt == DType::float32 ? 1e-4 : 1e-11;
      const std::int64_t out_channels = stride == 1 ? 4 : 6;
      nn::BasicBlock fused(4, out_channels, stride), plain(4, out_channels, stride);
      for (nn::BasicBlock* b : {&fused, &plain}) {
        b->to(dt);
        b->to(GetParam());
      }
      plain.load_state_dict(fused.state_dict());
      auto unfused = [&](const Tensor& x) {
        const Tensor h = plain.conv2->forward(relu(plain.bn1->forward(plain.conv1->forward(x))));
        const Tensor shortcut = plain.downsample ? plain.downsample->forward(x) : x;
        return relu(plain.bn2->forward(h) + shortcut);
      };
      for (bool training : {true, false}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " stride " << stride << " training " << training);
        fused.train(training);
        plain.train(training);
        fused.zero_grad();
        plain.zero_grad();
        const Tensor x0 = random_tensor({2, 4, 5, 5}, rng, o);
        const Tensor xf = x0.clone().requires_grad_(true), xp = x0.clone().requires_grad_(true);
        const Tensor yf = fused(xf), yp = unfused(xp);
        const Tensor v = random_tensor(yf.shape(), rng, o);
        (yf * v).sum().backward();
        (yp * v).sum().backward();
        EXPECT_TRUE(all_close(yf, yp.to_vector<double>(), tol, tol)) << "output";
        EXPECT_TRUE(all_close(xf.grad(), xp.grad().to_vector<double>(), tol, tol)) << "input gradient";
        const StateDict pf = fused.named_parameters(), pp = plain.named_parameters();
        ASSERT_EQ(pf.size(), pp.size());
        for (std::size_t i = 0; i < pf.size(); ++i)
          EXPECT_TRUE(all_close(pf[i].second.grad(), pp[i].second.grad().to_vector<double>(), tol, tol))
              << pf[i].first << " gradient";
        const StateDict bf = fused.named_buffers(), bp = plain.named_buffers();
        ASSERT_EQ(bf.size(), bp.size());
        for (std::size_t i = 0; i < bf.size(); ++i)
          EXPECT_TRUE(all_close(bf[i].second, bp[i].second.to_vector<double>(), tol, tol)) << bf[i].first;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Devices, ResNetOnDevice, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_name);

}  // namespace
}  // namespace convkit
