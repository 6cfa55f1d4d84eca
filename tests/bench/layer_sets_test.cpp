// benchmarks/layer_sets.txt: the file the benchmarks and the report read
// parses, every entry is a valid convolution, and the shapes are the ones the
// literature and our zoo define. Also the parser's error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "convkit/core/error.h"
#include "layer_sets.h"

namespace convkit::bench {
namespace {

const std::vector<LayerSet>& sets() {
  static const std::vector<LayerSet> s = load_layer_sets(default_layer_sets_path());
  return s;
}

const LayerEntry& layer(const std::string& set, const std::string& name) {
  const LayerSet& s = find_layer_set(sets(), set);
  const auto it = std::find_if(s.layers.begin(), s.layers.end(), [&](const LayerEntry& e) { return e.name == name; });
  if (it == s.layers.end()) throw Error("no layer " + name + " in " + set);
  return *it;
}

TEST(LayerSets, EverySetTheIssueNamesIsThere) {
  for (const char* name : {"convnet-benchmarks", "alexnet", "vgg-a", "overfeat-fast", "cifar10-cnn", "fmnist-cnn",
                           "catdog-cnn", "catdog-cnn-improved", "datamadness-cnn", "resnet18-cifar", "sweep-batch",
                           "sweep-size", "sweep-kernel", "sweep-filters", "sweep-stride"})
    EXPECT_NO_THROW(find_layer_set(sets(), name)) << name;
}

TEST(LayerSets, EveryEntryIsAValidDescriptorWithUniqueNames) {
  std::set<std::string> set_names;
  for (const LayerSet& s : sets()) {
    EXPECT_TRUE(set_names.insert(s.name).second) << "duplicate set " << s.name;
    EXPECT_FALSE(s.layers.empty()) << s.name;
    EXPECT_FALSE(s.description.empty()) << s.name;
    std::set<std::string> layer_names;
    for (const LayerEntry& e : s.layers) {
      EXPECT_TRUE(layer_names.insert(e.name).second) << s.name << "/" << e.name;
      EXPECT_NO_THROW(e.desc.validate("layer set test")) << s.name << "/" << e.name;
      EXPECT_GE(e.desc.P(), 1) << s.name << "/" << e.name;
      EXPECT_GE(e.desc.Q(), 1) << s.name << "/" << e.name;
      EXPECT_GE(e.count, 1);
      EXPECT_GT(e.desc.flops(), 0);
    }
  }
}

TEST(LayerSets, EverySetStaysValidAtAReducedBatch) {
  for (const BatchScaling scaling : {BatchScaling{1.0 / 128, 0}, BatchScaling{1.0, 2}, BatchScaling{0.001, 0}}) {
    for (const LayerSet& s : sets())
      for (const LayerEntry& e : s.layers) {
        const Conv2dDesc d = scaling.apply(e.desc);
        EXPECT_GE(d.N, 1);
        EXPECT_LE(d.N, e.desc.N);
        EXPECT_NO_THROW(d.validate("layer set test"));
      }
  }
}

TEST(LayerSets, ConvnetBenchmarksL1) {
  const Conv2dDesc& d = layer("convnet-benchmarks", "L1").desc;
  EXPECT_EQ(d.N, 128);
  EXPECT_EQ(d.C, 3);
  EXPECT_EQ(d.H, 128);
  EXPECT_EQ(d.W, 128);
  EXPECT_EQ(d.K, 96);
  EXPECT_EQ(d.R, 11);
  EXPECT_EQ(d.S, 11);
  EXPECT_EQ(d.stride_h, 1);
  EXPECT_EQ(d.pad_top, 0);
  EXPECT_EQ(d.P(), 118);
}

TEST(LayerSets, OutputSizesMatchThePublishedNetworks) {
  EXPECT_EQ(layer("alexnet", "conv1").desc.P(), 55);   // 224, 11x11, s4 p2
  EXPECT_EQ(layer("alexnet", "conv2").desc.P(), 27);
  EXPECT_EQ(layer("overfeat-fast", "conv1").desc.P(), 56);  // 231, 11x11, s4
  EXPECT_EQ(layer("overfeat-fast", "conv2").desc.P(), 20);
  EXPECT_EQ(layer("vgg-a", "conv1").desc.P(), 224);
  EXPECT_EQ(layer("vgg-a", "conv5").count, 2);
  // Keras 'same' keeps the size; 'valid' shrinks it by 2 for 3x3.
  EXPECT_EQ(layer("cifar10-cnn", "conv1").desc.P(), 32);
  EXPECT_EQ(layer("cifar10-cnn", "conv2").desc.P(), 30);
  EXPECT_EQ(layer("cifar10-cnn", "conv4").desc.P(), 13);
  // datamadness: 128 channels at 21x21 after the last pool flatten to 56,448.
  EXPECT_EQ(layer("datamadness-cnn", "conv5").desc.P() / 2, 21);
  EXPECT_EQ(layer("datamadness-cnn", "conv5").desc.K * 21 * 21, 56448);
}

TEST(LayerSets, ResNet18HasTwentyConvolutions) {
  std::int64_t convs = 0;
  for (const LayerEntry& e : find_layer_set(sets(), "resnet18-cifar").layers) convs += e.count;
  EXPECT_EQ(convs, 20);  // 1 stem + 16 in the blocks + 3 downsampling shortcuts
  EXPECT_EQ(layer("resnet18-cifar", "layer4").desc.P(), 4);
}

// Each sweep changes one parameter of the base N=128 C=K=128 32x32 5x5 s1,
// and passes through the base itself.
TEST(LayerSets, SweepsVaryOneParameterAroundTheBase) {
  const std::map<std::string, std::function<std::int64_t(const Conv2dDesc&)>> varied = {
      {"sweep-batch", [](const Conv2dDesc& d) { return d.N; }},
      {"sweep-size", [](const Conv2dDesc& d) { return d.H; }},
      {"sweep-kernel", [](const Conv2dDesc& d) { return d.R; }},
      {"sweep-filters", [](const Conv2dDesc& d) { return d.K; }},
      {"sweep-stride", [](const Conv2dDesc& d) { return d.stride_h; }},
  };
  for (const auto& [name, field] : varied) {
    const LayerSet& s = find_layer_set(sets(), name);
    bool has_base = false;
    std::set<std::int64_t> values;
    for (const LayerEntry& e : s.layers) {
      Conv2dDesc d = e.desc;
      values.insert(field(d));
      has_base |= d.N == 128 && d.C == 128 && d.H == 32 && d.W == 32 && d.K == 128 && d.R == 5 && d.S == 5 &&
                  d.stride_h == 1;
      EXPECT_EQ(d.C, 128) << name << "/" << e.name;
      EXPECT_EQ(d.H, d.W) << name << "/" << e.name;
      EXPECT_EQ(d.R, d.S) << name << "/" << e.name;
      EXPECT_EQ(d.pad_top + d.pad_left, 0) << name << "/" << e.name;
      const int differences = (d.N != 128) + (d.H != 32) + (d.K != 128) + (d.R != 5) + (d.stride_h != 1);
      EXPECT_LE(differences, 1) << name << "/" << e.name;
    }
    EXPECT_TRUE(has_base) << name;
    EXPECT_EQ(values.size(), s.layers.size()) << name << " repeats a value";
  }
}

TEST(LayerSetsParser, ReadsEveryField) {
  const auto s = parse_layer_sets(
      "# comment\n"
      "set demo  a demo set  # trailing comment\n"
      "a  2 3 9x7 4 3x1 s2x1 p1x0 x3\n"
      "b  1 8 16 8 5 same\n",
      "inline");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "demo");
  EXPECT_EQ(s[0].description, "a demo set");
  const Conv2dDesc& a = s[0].layers[0].desc;
  EXPECT_EQ(a.N, 2);
  EXPECT_EQ(a.C, 3);
  EXPECT_EQ(a.H, 9);
  EXPECT_EQ(a.W, 7);
  EXPECT_EQ(a.K, 4);
  EXPECT_EQ(a.R, 3);
  EXPECT_EQ(a.S, 1);
  EXPECT_EQ(a.stride_h, 2);
  EXPECT_EQ(a.stride_w, 1);
  EXPECT_EQ(a.pad_top, 1);
  EXPECT_EQ(a.pad_bottom, 1);
  EXPECT_EQ(a.pad_left, 0);
  EXPECT_EQ(s[0].layers[0].count, 3);
  EXPECT_EQ(s[0].layers[0].line, 3);
  const Conv2dDesc& b = s[0].layers[1].desc;
  EXPECT_EQ(b.P(), 16);  // same
  EXPECT_EQ(b.pad_top + b.pad_bottom, 4);
}

// Each malformed input gives an error naming the line and the problem.
TEST(LayerSetsParser, RejectsMalformedInputWithTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a 1 1 4 1 1\n", ":1: a layer comes before any 'set NAME' line"},
      {"set Demo\na 1 1 4 1 1\n", ":1: set name 'Demo'"},
      {"set d\n\na 1 1 4\n", ":3: a layer needs at least"},
      {"set d\na 0 1 4 1 1\n", ":2: N (batch) must be a positive integer, got '0'"},
      {"set d\na 1 1 4x 1 1\n", ":2: HxW (input size) must be a positive integer"},
      {"set d\na 1 1 4 1 1 q2\n", ":2: unknown field 'q2'"},
      {"set d\na 1 1 4 1 1 s2 s1\n", ":2: stride given twice"},
      {"set d\na 1 1 4 1 1 p1 same\n", ":2: padding given twice"},
      {"set d\na 1 1 4 1 9\n", ":2: layer a is not a valid convolution"},
      {"set d\na 1 1 4 1 1\na 1 1 4 1 1\n", ":3: layer a appears twice in set d"},
      {"set d\na 1 1 4 1 1\nset d\n", ":3: set d is defined twice"},
      {"set d\nset e\na 1 1 4 1 1\n", ":2: set d has no layers"},
      {"set d\n", "set d has no layers"},
      {"# nothing\n", "no sets defined"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      parse_layer_sets(text, "t.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << "input:\n" << text << "message: " << e.what() << "\nexpected to contain: " << expected;
    }
  }
}

TEST(LayerSetsParser, MissingFileAndUnknownSetAreErrors) {
  EXPECT_THROW(load_layer_sets("/nonexistent/layer_sets.txt"), Error);
  try {
    find_layer_set(sets(), "no-such-set");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cifar10-cnn"), std::string::npos) << "lists the known sets: " << e.what();
  }
}

TEST(BatchScaling, ScalesRoundsAndCaps) {
  EXPECT_EQ((BatchScaling{0.125, 0}.apply(128)), 16);
  EXPECT_EQ((BatchScaling{0.125, 0}.apply(1)), 1);   // never 0
  EXPECT_EQ((BatchScaling{0.5, 0}.apply(3)), 2);     // rounds
  EXPECT_EQ((BatchScaling{1.0, 8}.apply(128)), 8);   // capped
  EXPECT_EQ((BatchScaling{1.0, 8}.apply(4)), 4);
  EXPECT_THROW((BatchScaling{0.0, 0}.apply(4)), Error);
  EXPECT_THROW((BatchScaling{1.0, -1}.apply(4)), Error);
}

}  // namespace
}  // namespace convkit::bench
