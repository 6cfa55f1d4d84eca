// Every cpu convolution algorithm and pass at the sizes people train: the
// conv layers of ResNet-18, VGG-A, AlexNet and the 256x256 DATAmadness
// network (benchmarks/layer_sets.txt) at batch 1, and the shapes where the
// algorithms change gear: 63/64/65/129 channels across Winograd's 64-channel
// blocks, Winograd plans on both sides of the point where they have more
// chunks than lanes (and round the chunk), and chunks held at the 512-tile cap.
// Each result is checked against float64 sums from the definition at a sample
// of its elements (bench::check_conv_pass), so the whole file runs in tens of
// seconds. Label `large` (ctest -L large); the release suite runs it.
#include <gtest/gtest.h>

#include <convkit/convkit.h>

#include <string>
#include <vector>

#include "conv_check.h"
#include "convkit/backend/backend.h"
#include "cpu_conv_pass.h"
#include "layer_sets.h"

namespace convkit::bench {
namespace {

constexpr ConvPass kPasses[] = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};

// Runs every supported algorithm and pass on `desc`; returns how many
// algorithms ran (direct and im2col_gemm run every convolution).
int check_every_algorithm(const std::string& name, const Conv2dDesc& desc) {
  int ran = 0;
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    const ConvAlgo algo = info.algo;
    if (!backend_for(kCPU).conv2d_supports(algo, desc)) continue;
    ++ran;
    for (ConvPass pass : kPasses) {
      const CheckResult r = check_conv_pass(desc, algo, pass, testing::run_cpu_pass(desc, algo, pass));
      EXPECT_TRUE(r.ok()) << name << " " << conv_algo_name(algo) << " " << conv_pass_name(pass) << ": " << r.worst;
      EXPECT_GT(r.checked, 0u) << name;
    }
  }
  return ran;
}

Conv2dDesc conv3x3(std::int64_t n, std::int64_t c, std::int64_t hw_h, std::int64_t hw_w, std::int64_t k) {
  Conv2dDesc d;
  d.N = n; d.C = c; d.H = hw_h; d.W = hw_w; d.K = k; d.R = d.S = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  return d;
}

class LargeLayerSet : public ::testing::TestWithParam<const char*> {};

TEST_P(LargeLayerSet, EveryAlgorithmAndPassMatchesTheFloat64ReferenceAtBatch1) {
  const std::vector<LayerSet> sets = load_layer_sets(CONVKIT_LAYER_SETS_FILE);
  const LayerSet& set = find_layer_set(sets, GetParam());
  const BatchScaling batch1{1.0, 1};
  for (const LayerEntry& layer : set.layers) {
    const Conv2dDesc d = batch1.apply(layer.desc);
    EXPECT_GE(check_every_algorithm(set.name + "/" + layer.name, d), 2) << layer.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Sets, LargeLayerSet,
                         ::testing::Values("resnet18-cifar", "vgg-a", "alexnet", "datamadness-cnn"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

TEST(LargeBoundaries, ChannelCountsAcrossWinogradsSixtyFourChannelBlocks) {
  for (std::int64_t c : {63, 64, 65, 129}) {
    const Conv2dDesc d = conv3x3(2, c, 10, 12, c == 129 ? 65 : c);
    EXPECT_EQ(check_every_algorithm("C=" + std::to_string(c), d), 4);
  }
}

// These outputs take F(4x4) tiles: 36 points x (64 + 64) channels of float,
// so a 1 MiB chunk holds 56 tiles, and a 4-row-by-64 band of output is 16
// tiles. 200x64 and 224x64 make 800 and 896 tiles: 16 chunks, one per lane.
// 232x64 (928 tiles, 17 chunks) and 336x64 (1344, 24) make more chunks than
// lanes, and the plan rounds them to whole rounds of 16.
TEST(LargeBoundaries, WinogradChunkCountsAroundTheLaneCount) {
  for (std::int64_t h : {200, 224, 232, 336}) {
    const Conv2dDesc d = conv3x3(1, 64, h, 64, 64);
    EXPECT_EQ(check_every_algorithm("64->64 channels " + std::to_string(h) + "x64", d), 4);
  }
}

// With C = 3 and K = 4 an F(4x4) tile is 36 x 7 floats, so 1 MiB would hold
// 1040 tiles: the chunk is held at the 512-tile cap. 128x128 at batch 8 makes
// 8192 tiles, 16 chunks of 512; batch 12 makes 12288, which the plan rounds
// to 32 chunks of 384.
TEST(LargeBoundaries, WinogradChunksAtTheFiveHundredTwelveTileCap) {
  for (std::int64_t n : {8, 12}) {
    const Conv2dDesc d = conv3x3(n, 3, 128, 128, 4);
    EXPECT_EQ(check_every_algorithm("3->4 channels 128x128, batch " + std::to_string(n), d), 4);
  }
}

}  // namespace
}  // namespace convkit::bench
