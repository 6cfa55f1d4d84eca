// The model zoo: names, facts, parameter counts (Keras' counting), output
// shapes, options, and that every model rebuilds from its spec. The 58M
// parameter datamadness-cnn runs forward once, in test_summary.cpp.
#include <map>

#include "models/models_testing.h"

namespace convkit {
namespace {

using models_testing::same_layout;
using models_testing::throws_with;

struct Counts {
  std::int64_t trainable, non_trainable;
};

// The numbers docs/models.md lists, written out independently of zoo.cpp.
const std::map<std::string, Counts>& expected_counts() {
  static const std::map<std::string, Counts> counts = {
      {"fmnist-cnn", {421'642, 0}},
      {"fmnist-cnn-bn", {422'090, 448}},
      {"cifar10-cnn", {1'250'858, 0}},
      {"cifar10-cnn-bn", {1'252'266, 1'408}},
      {"catdog-cnn", {813'217, 0}},
      {"catdog-cnn-improved", {407'745, 0}},
      {"datamadness-cnn", {58'088'516, 2'880}},
      {"resnet18-cifar", {11'173'962, 9'600}},
  };
  return counts;
}

TEST(Zoo, NamesAndFacts) {
  EXPECT_EQ(models::names(), (std::vector<std::string>{"fmnist-cnn", "fmnist-cnn-bn", "cifar10-cnn", "cifar10-cnn-bn",
                                                       "catdog-cnn", "catdog-cnn-improved", "datamadness-cnn", "resnet18-cifar"}));
  for (const auto& name : models::names()) {
    const auto& info = models::info(name);
    EXPECT_EQ(info.name, name);
    EXPECT_FALSE(info.description.empty());
    EXPECT_EQ(info.trainable_params, expected_counts().at(name).trainable) << name;
    EXPECT_EQ(info.non_trainable_params, expected_counts().at(name).non_trainable) << name;
  }
  const auto& fm = models::info("fmnist-cnn");
  EXPECT_EQ(fm.input_shape, Shape({1, 28, 28}));
  EXPECT_EQ(fm.num_classes, 10);
  EXPECT_EQ(fm.loss, models::LossKind::softmax_cross_entropy);
  EXPECT_EQ(fm.default_init, nn::Init::keras);
  EXPECT_EQ(models::info("cifar10-cnn").input_shape, Shape({3, 32, 32}));
  EXPECT_EQ(models::info("catdog-cnn").input_shape, Shape({3, 64, 64}));
  EXPECT_EQ(models::info("catdog-cnn").loss, models::LossKind::sigmoid_bce);
  EXPECT_EQ(models::info("catdog-cnn").num_classes, 2);
  EXPECT_EQ(models::info("catdog-cnn-improved").input_shape, Shape({3, 128, 128}));
  EXPECT_EQ(models::info("datamadness-cnn").input_shape, Shape({3, 256, 256}));
  EXPECT_EQ(models::info("datamadness-cnn").num_classes, 4);
  EXPECT_EQ(models::info("resnet18-cifar").default_init, nn::Init::pytorch);
  EXPECT_STREQ(models::loss_kind_name(models::LossKind::sigmoid_bce), "sigmoid_bce");
}

TEST(Zoo, UnknownNameListsTheKnownOnes) {
  EXPECT_TRUE(throws_with([] { models::info("lenet"); }, {"unknown model 'lenet'", "fmnist-cnn", "resnet18-cifar"}));
  EXPECT_TRUE(throws_with([] { models::create("lenet"); }, {"unknown model 'lenet'"}));
}

// Counts, forward shape and spec round trip of every model but the two big
// ones: datamadness-cnn has its own test below, and resnet18-cifar's counts
// and output shape are checked by Summary.ResNetRowsAreBlocksWithDottedNames
// and its rebuild by SpecRoundTrip.ResNetKeepsTorchvisionNames.
TEST(Zoo, SmallModelsCountForwardAndRebuild) {
  std::mt19937_64 rng(testing::kSeed);
  for (const auto& name : models::names()) {
    if (name == "datamadness-cnn" || name == "resnet18-cifar") continue;
    SCOPED_TRACE(name);
    const auto& info = models::info(name);
    auto net = models::create(name);
    const nn::ParameterCount count = nn::count_parameters(*net);
    EXPECT_EQ(count.trainable, expected_counts().at(name).trainable);
    EXPECT_EQ(count.non_trainable, expected_counts().at(name).non_trainable);

    std::vector<std::int64_t> dims{1};
    dims.insert(dims.end(), info.input_shape.begin(), info.input_shape.end());
    net->eval();
    const Tensor y = (*net)(testing::random_tensor(Shape(dims), rng, {}, 0, 1));
    const std::int64_t outputs = info.loss == models::LossKind::sigmoid_bce ? 1 : info.num_classes;
    EXPECT_EQ(y.shape(), Shape({1, outputs}));

    auto rebuilt = nn::build_module(net->spec());
    EXPECT_EQ(rebuilt->spec(), net->spec());
    EXPECT_TRUE(same_layout(rebuilt->state_dict(), net->state_dict()));
  }
}

TEST(Zoo, DatamadnessCountsMatchKeras) {
  // Keras: Total params 58,091,396; Trainable params 58,088,516 (BatchNorm's
  // moving mean and variance are the 2,880 non-trainable ones).
  auto net = models::create("datamadness-cnn");
  const nn::ParameterCount count = nn::count_parameters(*net);
  EXPECT_EQ(count.total(), 58'091'396);
  EXPECT_EQ(count.trainable, 58'088'516);
  EXPECT_EQ(count.non_trainable, 2'880);
  // 'same' convolutions: 256 -> 85 -> 42 -> 21, so the dense layer sees 128 * 21 * 21.
  const std::string spec = net->spec();
  EXPECT_NE(spec.find("Linear(56448, 1024, init=keras)"), std::string::npos) << spec;
  EXPECT_NE(spec.find("Conv2d(3, 32, 3, padding=same, init=keras)"), std::string::npos) << spec;
  EXPECT_NE(spec.find("MaxPool2d(3)"), std::string::npos) << spec;

  // The model's one forward pass (batch 1): summary's output shapes.
  const nn::ModelSummary summary = nn::summarize(*net, {3, 256, 256});
  EXPECT_EQ(summary.params.total(), 58'091'396);
  EXPECT_EQ(summary.params.trainable, 58'088'516);
  std::map<std::string, Shape> shapes;
  for (const auto& row : summary.layers) shapes[row.name] = row.output_shape;
  EXPECT_EQ(shapes.at("0"), Shape({-1, 32, 256, 256}));
  EXPECT_EQ(shapes.at("3"), Shape({-1, 32, 85, 85}));
  EXPECT_EQ(shapes.at("11"), Shape({-1, 64, 42, 42}));
  EXPECT_EQ(shapes.at("19"), Shape({-1, 128, 21, 21}));
  EXPECT_EQ(shapes.at("21"), Shape({-1, 56448}));
  EXPECT_EQ(summary.layers.back().output_shape, Shape({-1, 4}));
  const std::string table = summary.str();
  EXPECT_NE(table.find("Total params: 58,091,396"), std::string::npos) << table;
  EXPECT_NE(table.find("Trainable params: 58,088,516"), std::string::npos) << table;
  EXPECT_NE(table.find("Non-trainable params: 2,880"), std::string::npos) << table;
}

TEST(Zoo, KerasDefaultsAndInitOption) {
  auto net = models::create("fmnist-cnn-bn");
  const std::string spec = net->spec();
  EXPECT_NE(spec.find("BatchNorm2d(32, eps=0.001, momentum=0.01)"), std::string::npos) << spec;
  EXPECT_NE(spec.find("BatchNorm1d(128, eps=0.001, momentum=0.01)"), std::string::npos) << spec;
  // Keras init: zero biases; PyTorch's draws them.
  auto zero_bias = [](const nn::Module& m) {
    for (const auto& v : find_tensor(m.state_dict(), "0.bias").to_vector<double>()) {
      if (v != 0) return false;
    }
    return true;
  };
  EXPECT_TRUE(zero_bias(*models::create("fmnist-cnn")));
  models::ModelOptions torch_init;
  torch_init.init = nn::Init::pytorch;
  EXPECT_FALSE(zero_bias(*models::create("fmnist-cnn", torch_init)));
  EXPECT_EQ(models::create("fmnist-cnn", torch_init)->spec().find("init=keras"), std::string::npos);
}

TEST(Zoo, NumClassesOption) {
  models::ModelOptions hundred;
  hundred.num_classes = 100;
  auto net = models::create("cifar10-cnn", hundred);
  net->eval();
  EXPECT_EQ((*net)(zeros({1, 3, 32, 32})).shape(), Shape({1, 100}));
  EXPECT_EQ(nn::count_parameters(*net).trainable, 1'250'858 + 90 * 513);
  models::ModelOptions three;
  three.num_classes = 3;
  EXPECT_TRUE(throws_with([&] { models::create("catdog-cnn", three); }, {"catdog-cnn", "exactly 2 classes"}));
  models::ModelOptions one;
  one.num_classes = 1;
  EXPECT_TRUE(throws_with([&] { models::create("fmnist-cnn", one); }, {"at least 2"}));
}

}  // namespace
}  // namespace convkit
