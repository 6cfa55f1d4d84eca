// The heuristic behind ConvAlgo::automatic.
#include <gtest/gtest.h>

#include "cpu/conv/conv_algorithm.h"
#include "cpu/conv/conv_heuristic.h"
#include "cpu/conv/conv_reference.h"

namespace convkit::cpu {
namespace {

Conv2dDesc layer(std::int64_t C, std::int64_t HW, std::int64_t K, std::int64_t RS, std::int64_t stride = 1) {
  Conv2dDesc d;
  d.N = 32, d.C = C, d.H = HW, d.W = HW, d.K = K, d.R = RS, d.S = RS, d.stride_h = stride, d.stride_w = stride;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = RS / 2;
  return d;
}

TEST(ConvHeuristic, PicksASupportedImplementedAlgorithmForEveryCase) {
  for (const auto& c : testing::conv_cases()) {
    const ConvAlgo a = choose_conv_algorithm_heuristic(c.desc);
    EXPECT_NE(a, ConvAlgo::automatic);
    EXPECT_TRUE(conv_algorithm(a).supports(c.desc).ok) << c.name;
  }
}

TEST(ConvHeuristic, FollowsItsDocumentedRules) {
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(64, 32, 64, 1)), ConvAlgo::im2col_gemm);
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(32, 32, 32, 3)), ConvAlgo::winograd);
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(8, 14, 8, 3)), ConvAlgo::winograd);
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(3, 32, 32, 3)), ConvAlgo::im2col_gemm);  // first layer: C = 3
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(32, 32, 4, 3)), ConvAlgo::im2col_gemm);  // K = 4
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(32, 32, 32, 3, 2)), ConvAlgo::im2col_gemm);  // stride 2
  Conv2dDesc depthwise = layer(32, 32, 32, 3);
  depthwise.groups = 32;
  EXPECT_EQ(choose_conv_algorithm_heuristic(depthwise), ConvAlgo::im2col_gemm);
  Conv2dDesc small_batch = layer(64, 8, 64, 3);
  small_batch.N = 16;  // 1024 outputs: too few tiles
  EXPECT_EQ(choose_conv_algorithm_heuristic(small_batch), ConvAlgo::im2col_gemm);
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(16, 64, 16, 7)), ConvAlgo::fft);
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(16, 64, 16, 7, 2)), ConvAlgo::im2col_gemm);  // fft needs stride 1
  EXPECT_EQ(choose_conv_algorithm_heuristic(layer(16, 8, 16, 5)), ConvAlgo::fft);  // 32 x 8x8 outputs
  Conv2dDesc one_image = layer(128, 16, 128, 7);
  one_image.N = 1;  // 256 outputs: the filter transforms would dominate
  EXPECT_EQ(choose_conv_algorithm_heuristic(one_image), ConvAlgo::im2col_gemm);
}

TEST(ConvHeuristic, FallsBackToDirectWhenNothingElseFitsTheWorkspaceLimit) {
  Conv2dDesc d = layer(32, 32, 32, 3);
  d.workspace_limit = 1024;  // below one tile of winograd and one image of im2col_gemm
  EXPECT_EQ(choose_conv_algorithm_heuristic(d), ConvAlgo::direct);
  EXPECT_EQ(choose_conv_algorithm_heuristic(d, DType::float64), ConvAlgo::direct);
}

}  // namespace
}  // namespace convkit::cpu
