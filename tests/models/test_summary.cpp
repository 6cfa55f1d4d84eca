// nn::summary: rows, output shapes, Keras-style counts, and no side effects.
#include "models/models_testing.h"

namespace convkit {
namespace {

using models_testing::throws_with;

TEST(Summary, FashionCnnRowsShapesAndCounts) {
  auto net = models::create("fmnist-cnn");
  const nn::ModelSummary s = nn::summarize(*net, {1, 28, 28});
  struct Row {
    const char* name;
    const char* type;
    Shape shape;
    std::int64_t params;
  };
  const std::vector<Row> want = {
      {"0", "Conv2d", {-1, 32, 28, 28}, 320},   {"1", "ReLU", {-1, 32, 28, 28}, 0},
      {"2", "MaxPool2d", {-1, 32, 14, 14}, 0},  {"3", "Conv2d", {-1, 64, 14, 14}, 18'496},
      {"4", "ReLU", {-1, 64, 14, 14}, 0},       {"5", "MaxPool2d", {-1, 64, 7, 7}, 0},
      {"6", "Flatten", {-1, 3136}, 0},          {"7", "Linear", {-1, 128}, 401'536},
      {"8", "ReLU", {-1, 128}, 0},              {"9", "Dropout", {-1, 128}, 0},
      {"10", "Linear", {-1, 10}, 1'290},
  };
  ASSERT_EQ(s.layers.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s.layers[i].name, want[i].name);
    EXPECT_EQ(s.layers[i].type, want[i].type);
    EXPECT_EQ(s.layers[i].output_shape, want[i].shape) << want[i].name;
    EXPECT_EQ(s.layers[i].params.total(), want[i].params) << want[i].name;
  }
  EXPECT_EQ(s.params.total(), 421'642);
  EXPECT_EQ(s.params.non_trainable, 0);
  const std::string table = s.str();
  EXPECT_NE(table.find("Layer (type)"), std::string::npos);
  EXPECT_NE(table.find("7 (Linear)"), std::string::npos) << table;
  EXPECT_NE(table.find("[-1, 64, 14, 14]"), std::string::npos) << table;
  EXPECT_NE(table.find("401,536"), std::string::npos) << table;
  EXPECT_NE(table.find("Total params: 421,642"), std::string::npos) << table;
  EXPECT_NE(table.find("Trainable params: 421,642"), std::string::npos) << table;
  EXPECT_NE(table.find("Non-trainable params: 0"), std::string::npos) << table;
  EXPECT_EQ(nn::summary(*net, {1, 28, 28}), table);
}

// The totals of every zoo model but datamadness-cnn (test_zoo.cpp runs that
// one) and resnet18-cifar (the next test).
TEST(Summary, ZooTotalsMatchTheirInfo) {
  for (const auto& name : models::names()) {
    if (name == "datamadness-cnn" || name == "resnet18-cifar") continue;
    SCOPED_TRACE(name);
    const auto& info = models::info(name);
    auto net = models::create(name);
    const nn::ModelSummary s = nn::summarize(*net, info.input_shape);
    EXPECT_EQ(s.params.trainable, info.trainable_params);
    EXPECT_EQ(s.params.non_trainable, info.non_trainable_params);
    std::int64_t rows = 0;
    for (const auto& row : s.layers) rows += row.params.total();
    EXPECT_EQ(rows, s.params.total());  // every parameter sits in some row
    const std::int64_t outputs = info.loss == models::LossKind::sigmoid_bce ? 1 : info.num_classes;
    EXPECT_EQ(s.layers.back().output_shape, Shape({-1, outputs}));
  }
}

TEST(Summary, ResNetRowsAreBlocksWithDottedNames) {
  auto net = models::create("resnet18-cifar");
  const nn::ModelSummary s = nn::summarize(*net, {3, 32, 32});
  std::vector<std::string> names;
  for (const auto& row : s.layers) names.push_back(row.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "bn1", "relu", "layer1.0", "layer1.1", "layer2.0", "layer2.1",
                                             "layer3.0", "layer3.1", "layer4.0", "layer4.1", "avgpool", "flatten",
                                             "fc"}));
  EXPECT_EQ(s.layers[3].type, "BasicBlock");
  // Two 3x3 64->64 convs (73,728) + two BatchNorms (256 trainable, 256 running stats).
  EXPECT_EQ(s.layers[3].params.trainable, 73'984);
  EXPECT_EQ(s.layers[3].params.non_trainable, 256);
  EXPECT_EQ(s.layers[9].output_shape, Shape({-1, 512, 4, 4}));
  EXPECT_EQ(s.params.trainable, 11'173'962);
  EXPECT_EQ(s.params.non_trainable, 9'600);
  EXPECT_EQ(s.params.trainable, models::info("resnet18-cifar").trainable_params);
  EXPECT_EQ(s.params.non_trainable, models::info("resnet18-cifar").non_trainable_params);
  EXPECT_EQ(s.layers.back().output_shape, Shape({-1, 10}));
}

TEST(Summary, LeavesModesBuffersAndGeneratorAlone) {
  auto net = models::create("fmnist-cnn-bn");
  net->train();
  auto bn = std::dynamic_pointer_cast<nn::Sequential>(net)->operator[](1);
  bn->eval();  // a mixed tree: one module in eval, the rest training
  const auto before = net->state_dict();
  std::vector<std::vector<double>> values;
  for (const auto& [n, t] : before) values.push_back(t.to_vector<double>());
  const Generator gen = default_generator();

  nn::summarize(*net, {1, 28, 28});

  EXPECT_TRUE(net->is_training());
  EXPECT_FALSE(bn->is_training());
  EXPECT_TRUE(std::dynamic_pointer_cast<nn::Sequential>(net)->operator[](3)->is_training());
  const auto after = net->state_dict();
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].second.to_vector<double>(), values[i]) << after[i].first;
  EXPECT_EQ(default_generator().seed, gen.seed);
  EXPECT_EQ(default_generator().offset, gen.offset);
}

TEST(Summary, CountsFrozenParametersAsNonTrainable) {
  nn::Sequential net;
  auto fc = net.push_back(std::make_shared<nn::Linear>(4, 3));
  net.push_back(std::make_shared<nn::BatchNorm1d>(3));
  fc->weight.requires_grad_(false);
  const nn::ParameterCount c = nn::count_parameters(net);
  EXPECT_EQ(c.trainable, 3 + 6);      // fc.bias, bn weight and bias
  EXPECT_EQ(c.non_trainable, 12 + 6);  // fc.weight, running mean and var (not num_batches_tracked)
}

TEST(Summary, WrongInputNamesTheLayer) {
  auto net = models::create("fmnist-cnn");
  EXPECT_TRUE(throws_with([&] { nn::summarize(*net, {3, 28, 28}); }, {"layer '0' (Conv2d)", "[1, 3, 28, 28]"}));
  EXPECT_TRUE(throws_with([&] { nn::summarize(*net, {1, 20, 20}); }, {"layer '7' (Linear)"}));
  EXPECT_TRUE(throws_with([&] { nn::summarize(*net, {}); }, {"input_shape"}));
  EXPECT_TRUE(net->is_training());
}

}  // namespace
}  // namespace convkit
