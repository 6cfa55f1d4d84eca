#include <cstdio>
#include <fstream>

#include "support/support.h"

namespace convkit {
namespace {

// Restores the process-wide selection settings a test changes.
struct SelectionGuard {
  ~SelectionGuard() {
    set_default_conv_algo(ConvAlgo::automatic);
    set_conv_benchmark_mode(false);
    set_conv_algo_logging(false);
    clear_conv_algo_cache();
  }
};

TEST(ConvAlgoSelection, ExplicitChoicesWinOverTheDefaultAndTheDefaultOverTheHeuristic) {
  SelectionGuard guard;
  const Conv2dDesc d = make_conv2d_desc({1, 2, 8, 8}, {3, 2, 3, 3}, Conv2dParams());
  EXPECT_EQ(select_conv_algo(ConvAlgo::fft, d, DType::float32, kCPU), ConvAlgo::fft);
  EXPECT_EQ(select_conv_algo(ConvAlgo::automatic, d, DType::float32, kCPU),
            backend_for(kCPU).conv2d_heuristic(d, DType::float32));
  set_default_conv_algo(ConvAlgo::direct);
  EXPECT_EQ(select_conv_algo(ConvAlgo::automatic, d, DType::float32, kCPU), ConvAlgo::direct);
  EXPECT_EQ(select_conv_algo(ConvAlgo::im2col_gemm, d, DType::float32, kCPU), ConvAlgo::im2col_gemm);
}

// The GPU's rule (src/gpu/gpu_conv.cpp), through sim, which runs the GPU
// backend's code: winograd for undilated 3x3 at stride 1 past 4 channels,
// fft for large filters, im2col_gemm for the rest (first layers included).
TEST(ConvAlgoSelection, TheGpuHeuristicTakesWinogradForStrideOne3x3) {
  const auto pick = [](const Conv2dDesc& d) { return backend_for(kSim).conv2d_heuristic(d, DType::float32); };
  const auto desc = [](std::int64_t c, std::int64_t k, std::int64_t size, std::int64_t r, Conv2dParams p) {
    return make_conv2d_desc({8, c, size, size}, {k, c, r, r}, p);
  };
  EXPECT_EQ(pick(desc(3, 32, 32, 3, Conv2dParams().padding(1))), ConvAlgo::im2col_gemm);  // a first layer
  EXPECT_EQ(pick(desc(4, 32, 32, 3, Conv2dParams().padding(1))), ConvAlgo::im2col_gemm);  // RGBA
  EXPECT_EQ(pick(desc(5, 32, 32, 3, Conv2dParams().padding(1))), ConvAlgo::winograd);
  EXPECT_EQ(pick(desc(64, 64, 16, 3, Conv2dParams().padding(1))), ConvAlgo::winograd);
  EXPECT_EQ(pick(desc(64, 128, 16, 3, Conv2dParams().padding(1).stride(2))), ConvAlgo::im2col_gemm);
  EXPECT_EQ(pick(desc(64, 64, 16, 3, Conv2dParams().padding(2).dilation(2))), ConvAlgo::im2col_gemm);
  EXPECT_EQ(pick(desc(64, 128, 16, 1, Conv2dParams().stride(2))), ConvAlgo::im2col_gemm);  // a downsample
  EXPECT_EQ(pick(desc(16, 16, 32, 7, Conv2dParams().padding(3))), ConvAlgo::fft);
}

TEST(ConvAlgoSelection, BenchmarkModePicksASupportedAlgorithmAndCachesItToAFile) {
  SelectionGuard guard;
  set_conv_benchmark_mode(true);
  // Stride 2: fft cannot run it, so the winner must be direct or im2col_gemm.
  const Conv2dDesc d = make_conv2d_desc({2, 3, 9, 9}, {4, 3, 3, 3}, Conv2dParams().stride(2));
  const ConvAlgo first = select_conv_algo(ConvAlgo::automatic, d, DType::float32, kCPU);
  EXPECT_TRUE(first == ConvAlgo::direct || first == ConvAlgo::im2col_gemm) << conv_algo_name(first);
  EXPECT_EQ(select_conv_algo(ConvAlgo::automatic, d, DType::float32, kCPU), first);  // cached
  const std::string path = ::testing::TempDir() + "conv_cache.txt";
  save_conv_algo_cache(path);
  clear_conv_algo_cache();
  load_conv_algo_cache(path);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(std::string("-> ") + std::string(conv_algo_name(first))), std::string::npos) << text;
  EXPECT_EQ(select_conv_algo(ConvAlgo::automatic, d, DType::float32, kCPU), first);
  std::remove(path.c_str());
}

TEST(ConvAlgoSelection, AMalformedCacheFileNamesTheFileAndLine) {
  SelectionGuard guard;
  const std::string path = ::testing::TempDir() + "bad_conv_cache.txt";
  {
    std::ofstream out(path);
    out << "# comment\ncpu float32 1 2 3 -> direct\n";
  }
  try {
    load_conv_algo_cache(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2"), std::string::npos) << e.what();
  }
  {
    std::ofstream out(path);
    out << "cpu float32 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 -> quantum\n";
  }
  EXPECT_THROW(load_conv_algo_cache(path), Error);
  EXPECT_THROW(load_conv_algo_cache(path + ".missing"), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace convkit
