#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <latch>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "convkit/backend/kernel_versions.h"
#include "convkit/backend/precision.h"
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

std::string plan_text(const ConvPlan& p) {
  std::string text;
  for (const ConvPassChoice* c : {&p.forward, &p.backward_data, &p.backward_weights})
    text += std::string(conv_algo_name(c->algo)) + " " + c->kernel_family + " " + std::to_string(c->kernel_version) +
            "; ";
  return text;
}

bool same_plan(const ConvPlan& a, const ConvPlan& b) { return plan_text(a) == plan_text(b); }

ConvPlan every_pass(ConvAlgo algo) { return {{algo, {}, 0}, {algo, {}, 0}, {algo, {}, 0}}; }

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

TEST(ConvAlgoSelection, ExplicitChoicesWinOverTheDefaultAndTheDefaultOverTheHeuristic) {
  SelectionGuard guard;
  const Conv2dDesc d = make_conv2d_desc({1, 2, 8, 8}, {3, 2, 3, 3}, Conv2dParams());
  const auto plan = [&](ConvAlgo requested) { return select_conv_plan(requested, d, DType::float32, kCPU); };
  EXPECT_TRUE(same_plan(plan(ConvAlgo::fft), every_pass(ConvAlgo::fft))) << plan_text(plan(ConvAlgo::fft));
  EXPECT_TRUE(same_plan(plan(ConvAlgo::automatic), every_pass(backend_for(kCPU).conv2d_heuristic(d, DType::float32))));
  set_default_conv_algo(ConvAlgo::direct);
  EXPECT_TRUE(same_plan(plan(ConvAlgo::automatic), every_pass(ConvAlgo::direct)));
  EXPECT_TRUE(same_plan(plan(ConvAlgo::im2col_gemm), every_pass(ConvAlgo::im2col_gemm)));
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

TEST(ConvAlgoSelection, BenchmarkModeTimesEachPassAndCachesItsWinnersToAFile) {
  SelectionGuard guard;
  set_conv_benchmark_mode(true);
  // Stride 2: neither fft nor winograd can run it, so each pass must pick
  // direct or im2col_gemm; cpu's algorithms have no kernel versions.
  const Conv2dDesc d = make_conv2d_desc({2, 3, 9, 9}, {4, 3, 3, 3}, Conv2dParams().stride(2));
  const ConvPlan first = select_conv_plan(ConvAlgo::automatic, d, DType::float32, kCPU);
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
    const ConvPassChoice& c = first.at(pass);
    EXPECT_TRUE(c.algo == ConvAlgo::direct || c.algo == ConvAlgo::im2col_gemm) << plan_text(first);
    EXPECT_EQ(c.kernel_version, 0) << plan_text(first);
  }
  EXPECT_TRUE(same_plan(select_conv_plan(ConvAlgo::automatic, d, DType::float32, kCPU), first));  // cached
  const std::string path = ::testing::TempDir() + "conv_cache.txt";
  save_conv_algo_cache(path);
  clear_conv_algo_cache();
  load_conv_algo_cache(path);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* pass : {"forward", "backward_data", "backward_weights"})
    EXPECT_NE(text.find(std::string("cpu float32 highest ") + pass + " 2 3 9 9 4 3 3 2 2 0 0 0 0 1 1 1 268435456 -> "),
              std::string::npos)
        << text;
  EXPECT_TRUE(same_plan(select_conv_plan(ConvAlgo::automatic, d, DType::float32, kCPU), first));
  // The precision is part of the key: at high the passes are timed again.
  {
    const ScopedFloat32Precision high(Float32Precision::high);
    select_conv_plan(ConvAlgo::automatic, d, DType::float32, kCPU);
  }
  save_conv_algo_cache(path);
  std::ifstream again(path);
  const std::string both((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_NE(both.find("cpu float32 high forward 2 3 9 9"), std::string::npos) << both;
  // And so is the workspace limit: what can run depends on it.
  Conv2dDesc small = d;
  small.workspace_limit = 1 << 20;
  select_conv_plan(ConvAlgo::automatic, small, DType::float32, kCPU);
  save_conv_algo_cache(path);
  std::ifstream third(path);
  const std::string all((std::istreambuf_iterator<char>(third)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("cpu float32 highest forward 2 3 9 9 4 3 3 2 2 0 0 0 0 1 1 1 1048576 -> "), std::string::npos)
      << all;
  std::remove(path.c_str());
}

// Threads that ask for one descriptor's plan together get one timing and
// the same plan: every timing is logged, and only one is.
TEST(ConvAlgoSelection, ThreadsSelectingOneDescriptorTogetherTimeItOnce) {
  SelectionGuard guard;
  set_conv_benchmark_mode(true);
  set_conv_algo_logging(true);
  const Conv2dDesc d = make_conv2d_desc({2, 3, 9, 9}, {4, 3, 3, 3}, Conv2dParams().stride(2));
  constexpr int kThreads = 4;
  std::vector<ConvPlan> plans(kThreads);
  ::testing::internal::CaptureStderr();
  {
    std::latch start(kThreads);  // all ask at once
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        plans[i] = select_conv_plan(ConvAlgo::automatic, d, DType::float32, kCPU);
      });
    for (std::thread& t : threads) t.join();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  std::size_t timings = 0;
  for (std::size_t at = log.find("(benchmark:"); at != std::string::npos; at = log.find("(benchmark:", at + 1))
    ++timings;
  EXPECT_EQ(timings, 1u) << log;
  for (const ConvPlan& p : plans) EXPECT_TRUE(same_plan(p, plans[0])) << plan_text(p) << " vs " << plan_text(plans[0]);
}

// On a GPU backend (sim runs its code) each algorithm names the kernel
// family it runs and the versions worth timing: reduced precision times the
// tensor-core conv's default (3) and its candidate 4 (not 5, whose wgmma no
// GPU has run yet, though sim runs it); a pinned family is left as the user
// pinned it.
TEST(ConvAlgoSelection, AGpuBackendNamesTheKernelVersionsWorthTiming) {
  Backend& sim = backend_for(kSim);
  const Conv2dDesc d = make_conv2d_desc({2, 8, 8, 8}, {8, 8, 3, 3}, Conv2dParams().stride(2).padding(1));
  const auto choices = [&](ConvAlgo a, DType dtype) { return sim.conv2d_kernel_choices(a, d, dtype); };
  {
    const ScopedFloat32Precision high(Float32Precision::high);
    const KernelChoices tc = choices(ConvAlgo::im2col_gemm, DType::float32);
    EXPECT_EQ(tc.family, "conv2d_implicit_gemm_tensor_core");
    EXPECT_EQ(tc.versions, (std::vector<int>{3, 4}));
    EXPECT_EQ(choices(ConvAlgo::im2col_gemm, DType::float64).family, "conv2d_implicit_gemm");
    set_kernel_version("conv2d_implicit_gemm_tensor_core", 2);
    const KernelChoices pinned = choices(ConvAlgo::im2col_gemm, DType::float32);
    set_kernel_version("conv2d_implicit_gemm_tensor_core", 0);
    EXPECT_EQ(pinned.family, "conv2d_implicit_gemm_tensor_core");
    EXPECT_TRUE(pinned.versions.empty());
  }
  const KernelChoices strict = choices(ConvAlgo::im2col_gemm, DType::float32);
  EXPECT_EQ(strict.family, "conv2d_implicit_gemm");
  EXPECT_EQ(strict.versions, (std::vector<int>{5}));
  EXPECT_EQ(choices(ConvAlgo::direct, DType::float32).family, "conv2d_direct");
  EXPECT_FALSE(choices(ConvAlgo::direct, DType::float32).versions.empty());
  EXPECT_TRUE(backend_for(kCPU).conv2d_kernel_choices(ConvAlgo::im2col_gemm, d, DType::float32).family.empty());
}

// In tf32 on sim, benchmark mode's plan runs each pass with a version it
// timed, and the convolution's values and gradients are those of the
// heuristic's plan within tf32's rounding.
TEST(ConvAlgoSelection, ABenchmarkedPlanOnAGpuBackendRunsTheVersionsItTimed) {
  SelectionGuard guard;
  const ScopedFloat32Precision high(Float32Precision::high);
  std::mt19937_64 rng(testing::kSeed);
  const TensorOptions o = TensorOptions().device(kSim);
  const Tensor x = testing::random_tensor({2, 8, 8, 8}, rng, o), w = testing::random_tensor({8, 8, 3, 3}, rng, o);
  const Conv2dParams p = Conv2dParams().stride(2).padding(1);
  const auto grads = [&] {
    const Tensor xv = x.detach().requires_grad_(true), wv = w.detach().requires_grad_(true);
    Tensor y = conv2d(xv, wv, Tensor(), p);
    y.sum().backward();
    return std::vector<Tensor>{y.detach(), xv.grad(), wv.grad()};
  };
  const std::vector<Tensor> heuristic = grads();
  set_conv_benchmark_mode(true);
  const ConvPlan plan = select_conv_plan(ConvAlgo::automatic, make_conv2d_desc(x.shape(), w.shape(), p),
                                         DType::float32, kSim);
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
    const ConvPassChoice& c = plan.at(pass);
    if (c.algo == ConvAlgo::im2col_gemm) {
      EXPECT_EQ(c.kernel_family, "conv2d_implicit_gemm_tensor_core") << plan_text(plan);
      EXPECT_TRUE(c.kernel_version == 3 || c.kernel_version == 4) << plan_text(plan);
    } else {
      EXPECT_FALSE(c.kernel_family.empty()) << plan_text(plan);
    }
  }
  const std::vector<Tensor> tuned = grads();
  for (std::size_t i = 0; i < tuned.size(); ++i)
    EXPECT_TRUE(testing::all_close(tuned[i].to(kCPU), heuristic[i].to(kCPU).to_vector<double>(), 2e-2, 2e-2))
        << "output " << i << ", plan " << plan_text(plan);
}

// A plan with a different algorithm per pass (here from a cache file) runs
// each pass with its own: the gradients are the single-algorithm ones.
TEST(ConvAlgoSelection, EachPassRunsItsOwnAlgorithm) {
  SelectionGuard guard;
  std::mt19937_64 rng(testing::kSeed);
  const Tensor x = testing::random_tensor({2, 3, 7, 7}, rng), w = testing::random_tensor({4, 3, 3, 3}, rng);
  const auto grads = [&](ConvAlgo algo) {
    const Tensor xv = x.detach().requires_grad_(true), wv = w.detach().requires_grad_(true);
    Tensor y = conv2d(xv, wv, Tensor(), Conv2dParams().padding(1).algo(algo));
    (y * y).sum().backward();
    return std::vector<Tensor>{y.detach(), xv.grad(), wv.grad()};
  };
  const std::vector<Tensor> want = grads(ConvAlgo::direct);
  const std::string key = " 2 3 7 7 4 3 3 1 1 1 1 1 1 1 1 1 268435456 -> ";
  const std::string path = ::testing::TempDir() + "per_pass_cache.txt";
  write_file(path, "cpu float32 highest forward" + key + "fft\ncpu float32 highest backward_data" + key +
                       "im2col_gemm\ncpu float32 highest backward_weights" + key + "winograd\n");
  load_conv_algo_cache(path);
  set_conv_benchmark_mode(true);
  const ConvPlan plan = select_conv_plan(ConvAlgo::automatic, make_conv2d_desc(x.shape(), w.shape(),
                                                                               Conv2dParams().padding(1)),
                                         DType::float32, kCPU);
  EXPECT_EQ(plan.forward.algo, ConvAlgo::fft);
  EXPECT_EQ(plan.backward_data.algo, ConvAlgo::im2col_gemm);
  EXPECT_EQ(plan.backward_weights.algo, ConvAlgo::winograd);
  const std::vector<Tensor> got = grads(ConvAlgo::automatic);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(testing::all_close(got[i], want[i].to_vector<double>(), 1e-4, 1e-4)) << "output " << i;
  // A cached algorithm that cannot run the descriptor is named, not run.
  clear_conv_algo_cache();
  const Tensor x5 = x.detach(), w5 = testing::random_tensor({4, 3, 3, 3}, rng);
  write_file(path, "cpu float32 highest forward 2 3 7 7 4 3 3 2 2 1 1 1 1 1 1 1 268435456 -> winograd\n"
                   "cpu float32 highest backward_data 2 3 7 7 4 3 3 2 2 1 1 1 1 1 1 1 268435456 -> direct\n"
                   "cpu float32 highest backward_weights 2 3 7 7 4 3 3 2 2 1 1 1 1 1 1 1 268435456 -> direct\n");
  load_conv_algo_cache(path);
  EXPECT_TRUE(testing::throws_with([&] { conv2d(x5, w5, Tensor(), Conv2dParams().padding(1).stride(2)); },
                                   {"algorithm winograd cannot run"}));
  std::remove(path.c_str());
}

// A cached kernel version runs under its scope, and one the family lacks is
// an Error naming the family where the pass reads it.
TEST(ConvAlgoSelection, ACachedKernelVersionIsCheckedWhereThePassRunsIt) {
  SelectionGuard guard;
  std::mt19937_64 rng(testing::kSeed);
  const TensorOptions o = TensorOptions().device(kSim);
  const Tensor x = testing::random_tensor({1, 2, 5, 5}, rng, o), w = testing::random_tensor({2, 2, 3, 3}, rng, o);
  const std::string key = " 1 2 5 5 2 3 3 1 1 0 0 0 0 1 1 1 268435456 -> ";
  const std::string path = ::testing::TempDir() + "version_cache.txt";
  write_file(path, "sim float32 highest forward" + key + "direct conv2d_direct 9\nsim float32 highest backward_data" +
                       key + "direct\nsim float32 highest backward_weights" + key + "direct\n");
  load_conv_algo_cache(path);
  set_conv_benchmark_mode(true);
  const Conv2dDesc d = make_conv2d_desc(x.shape(), w.shape(), Conv2dParams());
  EXPECT_EQ(select_conv_plan(ConvAlgo::automatic, d, DType::float32, kSim).forward.kernel_version, 9);
  EXPECT_TRUE(testing::throws_with([&] { conv2d(x, w); }, {"conv2d_direct has versions 1..5, got 9"}));
  // A version the user pinned outranks the plan's.
  set_kernel_version("conv2d_direct", 2);
  EXPECT_NO_THROW(conv2d(x, w));
  set_kernel_version("conv2d_direct", 0);
  write_file(path, "sim float32 highest forward" + key + "direct conv2d_direct 1\n");
  load_conv_algo_cache(path);
  EXPECT_EQ(select_conv_plan(ConvAlgo::automatic, d, DType::float32, kSim).forward.kernel_version, 1);
  const Tensor want = conv2d(x, w, Tensor(), Conv2dParams().algo(ConvAlgo::direct));
  EXPECT_TRUE(testing::all_close(conv2d(x, w).to(kCPU), want.to(kCPU).to_vector<double>(), 1e-5, 1e-5));
  std::remove(path.c_str());
}

// The older one-line-per-descriptor form loads as its algorithm for every
// pass, at precision highest.
TEST(ConvAlgoSelection, AnOlderCacheLineLoadsForEveryPass) {
  SelectionGuard guard;
  const std::string path = ::testing::TempDir() + "old_conv_cache.txt";
  // The second line: the current form, spaced loosely, is the same key.
  write_file(path, "# an older cache\ncpu float32 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 -> direct\n"
                   "cpu  float32\thighest forward 1 2 9 9 3 3 3 1 1 0 0 0 0 1 1 1  268435456 -> fft\n");
  load_conv_algo_cache(path);
  set_conv_benchmark_mode(true);
  const Conv2dDesc d = make_conv2d_desc({1, 2, 8, 8}, {3, 2, 3, 3}, Conv2dParams());
  EXPECT_TRUE(same_plan(select_conv_plan(ConvAlgo::automatic, d, DType::float32, kCPU), every_pass(ConvAlgo::direct)));
  const Conv2dDesc d9 = make_conv2d_desc({1, 2, 9, 9}, {3, 2, 3, 3}, Conv2dParams());
  EXPECT_EQ(select_conv_plan(ConvAlgo::automatic, d9, DType::float32, kCPU).forward.algo, ConvAlgo::fft);
  std::remove(path.c_str());
}

TEST(ConvAlgoSelection, AMalformedCacheFileNamesTheFileAndLine) {
  SelectionGuard guard;
  const std::string path = ::testing::TempDir() + "bad_conv_cache.txt";
  const std::string key = "cpu float32 highest forward 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 268435456 -> ";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"cpu float32 1 2 3 -> direct", "16 descriptor fields"},
      {"cpu float32 highest forward 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 268435456 direct", "expected 'key -> algo'"},
      {key + "quantum", "quantum"},
      {"cpu float32 highest sideways 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 268435456 -> direct", "'sideways' is not a pass"},
      {"cpu float32 lowest forward 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 268435456 -> direct", "lowest"},
      {"cpu float32 highest forward 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 x 268435456 -> direct", "'x' is not a descriptor field"},
      {key + "direct conv2d_direct", "'algo kernel-family version'"},
      {key + "direct conv2d_direct 0", "'algo kernel-family version'"},
      {key + "direct conv2d_direct 2 more", "'algo kernel-family version'"},
      {"cpu float23 highest forward 1 2 8 8 3 3 3 1 1 0 0 0 0 1 1 1 268435456 -> direct", "'float23' is not a floating dtype"},
  };
  for (const auto& [line, why] : bad) {
    write_file(path, "# comment\n" + line + "\n");
    EXPECT_TRUE(testing::throws_with([&] { load_conv_algo_cache(path); }, {path + ":2", why})) << line;
  }
  EXPECT_THROW(load_conv_algo_cache(path + ".missing"), Error);
  std::remove(path.c_str());
}

// CONVKIT_CONV_BENCHMARK sets the mode a process starts in (ctest runs this
// with it set, tests/conv/CMakeLists.txt; unset, the test skips).
TEST(ConvBenchmarkEnvironment, TheVariableSetsTheStartingMode) {
  const char* named = std::getenv("CONVKIT_CONV_BENCHMARK");
  if (named == nullptr) GTEST_SKIP() << "CONVKIT_CONV_BENCHMARK is unset";
  const std::string v = named;
  EXPECT_EQ(conv_benchmark_mode(), v == "1" || v == "true");
}

}  // namespace
}  // namespace convkit
