// The tensor-core implicit-GEMM convolution
// (kernels/conv2d_implicit_gemm_tensor_core.cu) as the GPU im2col_gemm
// algorithm runs it under allow_tf32, on sim (and cuda, in the nvcc build):
// every version, every pass, on tests/cpu/conv's descriptors (odd sizes,
// batch 1, stride, padding, dilation, groups, 1x1) plus tile-straddling and
// split-K cases and two real layers; against the float64 reference within
// the tf32 bound, versions 2 to 4 against their twin (2 and 3 bit for bit,
// and 4's backward-weights in one slice),
// bit for bit across runs; the fragment reads of versions 2 to 4
// conflict-free, version 4's gathers 16 bytes each; the
// setting off leaves every pass strict to the bit, float64 always strict,
// CONVKIT_ALLOW_TF32 honoured; a conv net trains with it on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "convkit/backend/precision.h"
#include "convkit/sim/check.h"
#include "convkit/sim/profile.h"
#include "convkit/sim/schedule.h"
#include "convkit/sim/wgmma.h"
#include "gpu/gpu_conv_testing.h"
#include "gpu/tensor_core_tolerance.h"
#include "kernels/conv2d_implicit_gemm.cuh"
#include "kernels/conv2d_implicit_gemm_problem.cuh"
#include "kernels/conv2d_implicit_gemm_tensor_core.cuh"
#include "support/support.h"

namespace convkit::gpu_testing {
namespace {

using cpu::testing::ConvCase;

constexpr const char* kFamily = "conv2d_implicit_gemm_tensor_core";
constexpr int kWarp = kernels::kImplicitGemmTcWarpVersion;
constexpr int kTiled = kernels::kImplicitGemmTcTiledVersion;
constexpr int kPipelined = kernels::kImplicitGemmTcPipelinedVersion;
constexpr int kChannelsLast = kernels::kImplicitGemmTcChannelsLastVersion;
constexpr int kWgmma = kernels::kImplicitGemmTcWgmmaVersion;

// The versions this device runs: version 5 needs wgmma (sim, or sm_90a on a
// compute capability 9.0 GPU).
std::vector<int> runnable(std::initializer_list<int> versions) {
  std::vector<int> out;
  for (int v : versions)
    if (v != kWgmma || device_runs_wgmma()) out.push_back(v);
  return out;
}

class RegisterFamilies : public ::testing::Environment {
 public:
  void SetUp() override {
    kernels::register_conv2d_implicit_gemm_family();
    kernels::register_conv2d_implicit_gemm_tensor_core_family();
  }
};
[[maybe_unused]] const ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new RegisterFamilies);

Conv2dDesc make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t R,
                std::int64_t S, std::int64_t pad, std::int64_t stride = 1, std::int64_t groups = 1,
                std::int64_t dilation = 1) {
  Conv2dDesc d;
  d.N = N, d.C = C, d.H = H, d.W = W, d.K = K, d.R = R, d.S = S;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  d.stride_h = d.stride_w = stride;
  d.groups = groups;
  d.dilation_h = d.dilation_w = dilation;
  return d;
}

// tests/cpu/conv's small descriptors and these: products past one 64x64
// tile with depths no multiple of the 32-deep K-step or of the mma's 8,
// channel counts no multiple of 8 or 16, a 1x1 at stride 2 with padding,
// and two- and four-slice split-K.
const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = [] {
    std::vector<ConvCase> c;
    for (const ConvCase& k : cpu::testing::conv_cases())
      if (k.name.rfind("parallel_", 0) != 0 && k.name.rfind("one_image_parallel", 0) != 0 && k.name != "kernel11x11")
        c.push_back(k);
    c.push_back({"tiles_70x19_odd", make(2, 19, 11, 13, 70, 3, 3, 1)});
    c.push_back({"groups2_stride2_dilation2", make(3, 6, 13, 11, 4, 3, 3, 2, 2, 2, 2)});
    c.push_back({"c13_k21_1x1_stride2_pad1", make(2, 13, 9, 10, 21, 1, 1, 1, 2)});
    c.push_back({"split_k_2", make(4, 3, 17, 17, 5, 3, 3, 1)});
    c.push_back({"split_k_4_groups", make(2, 4, 32, 32, 6, 3, 3, 1, 1, 2)});
    return c;
  }();
  return all;
}

const ConvCase& named(const std::string& name) {
  for (const ConvCase& c : cases())
    if (c.name == name) return c;
  throw std::runtime_error("no case " + name);
}

const conv::ConvAlgorithm& algo() { return kernels::im2col_gemm_gpu_conv_algorithm(); }

using kernels::TensorCorePrecision;
constexpr TensorCorePrecision kTf32 = TensorCorePrecision::tf32, kBf16 = TensorCorePrecision::bf16;

double unit_of(TensorCorePrecision p) {
  return p == kTf32 ? convkit::testing::kTf32Unit : convkit::testing::kBf16Unit;
}

std::vector<double> rounded_tolerances(const cpu::testing::Reference& ref, TensorCorePrecision p) {
  std::vector<double> tol(ref.value.size());
  for (std::size_t i = 0; i < tol.size(); ++i)
    tol[i] = convkit::testing::rounded_operand_bound(ref.magnitude[i], ref.max_terms, unit_of(p));
  return tol;
}

// The passes of the algorithm on the tensor cores in `precision` (float32
// precision high for tf32, medium for bf16), in `version`.
Outputs<float> run_tc(const Conv2dDesc& d, int version, TensorCorePrecision precision = kTf32) {
  const ScopedFloat32Precision level(precision == kTf32 ? Float32Precision::high : Float32Precision::medium);
  ScopedKernelVersion select(kFamily, version);
  return run_passes<float>(algo(), d, case_data(d).in);
}

void expect_within_bound(const ConvCase& c, const Outputs<float>& out, const std::string& where,
                         TensorCorePrecision precision = kTf32) {
  using cpu::testing::all_within;
  const CaseData& data = case_data(c.desc);
  const std::string in = where + " " + kernels::precision_name(precision);
  EXPECT_TRUE(all_within(out.y, data.y.value, rounded_tolerances(data.y, precision))) << "forward " << in;
  EXPECT_TRUE(all_within(out.dx, data.dx.value, rounded_tolerances(data.dx, precision))) << "backward_data " << in;
  EXPECT_TRUE(all_within(out.dw, data.dw.value, rounded_tolerances(data.dw, precision))) << "backward_weights " << in;
  EXPECT_TRUE(all_within(out.db, data.db.value, cpu::testing::tolerances<float>(ConvAlgo::direct, data.db)))
      << "bias " << in;
}

using Param = std::tuple<std::size_t, int, TensorCorePrecision>;
std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  return cases()[std::get<0>(info.param)].name + "_v" + std::to_string(std::get<1>(info.param)) + "_" +
         kernels::precision_name(std::get<2>(info.param));
}

class TensorCoreCase : public ::testing::TestWithParam<Param> {};

TEST_P(TensorCoreCase, EveryPassIsWithinTheRoundingBoundOfTheFloat64Reference) {
  const auto [index, version, precision] = GetParam();
  const ConvCase& c = cases()[index];
  if (version == kWgmma && !device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  ASSERT_EQ(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, c.desc, version), "");
  expect_within_bound(c, run_tc(c.desc, version, precision), c.name + " v" + std::to_string(version), precision);
}

INSTANTIATE_TEST_SUITE_P(Cases, TensorCoreCase,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()),
                                            ::testing::Values(kWarp, kTiled, kPipelined, kChannelsLast, kWgmma),
                                            ::testing::Values(kTf32, kBf16)),
                         case_name);

// Same rounding, the same mma per k-step (8 elements in tf32, 16 in bf16) in
// the same order: under sim the tiled and pipelined versions and their twin
// agree bit for bit, except where one splits backward-weights' K (its
// partials are summed in another order). Version 4 runs forward's and
// backward-data's k in (r, s, c) order, not (c, r, s): within the bound;
// its backward-weights sums the positions in version 1's order, so it
// agrees bit for bit in one slice. Version 5 sums version 4's k in the same
// order, slices of 8 (tf32; bf16 runs version 4's kernels): under sim it
// gives version 4's bits in every pass.
TEST(ConvTensorCore, TiledAndPipelinedAgreeWithTheirTwin) {
  for (TensorCorePrecision p : {kTf32, kBf16})
    for (const ConvCase& c : cases())
      for (int version : runnable({kTiled, kPipelined, kChannelsLast, kWgmma})) {
        const std::string where = c.name + " " + kernels::precision_name(p) + " v" + std::to_string(version);
        const Outputs<float> twin = run_tc(c.desc, kWarp, p), tiled = run_tc(c.desc, version, p);
#if !defined(__CUDACC__)
        if (version != kChannelsLast && version != kWgmma) {
          EXPECT_EQ(tiled.y, twin.y) << where;
          EXPECT_EQ(tiled.dx, twin.dx) << where;
        }
        if (version == kWgmma) {
          const Outputs<float> v4 = run_tc(c.desc, kChannelsLast, p);
          EXPECT_EQ(tiled.y, v4.y) << where;
          EXPECT_EQ(tiled.dx, v4.dx) << where;
          EXPECT_EQ(tiled.dw, v4.dw) << where;
        }
        if (kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, c.desc, version) == 1) {
          EXPECT_EQ(tiled.dw, twin.dw) << where;
        }
#endif
        const CaseData& data = case_data(c.desc);
        EXPECT_TRUE(agree(tiled.y, twin.y, rounded_tolerances(data.y, p))) << "forward " << where;
        EXPECT_TRUE(agree(tiled.dx, twin.dx, rounded_tolerances(data.dx, p))) << "bwd-data " << where;
        EXPECT_TRUE(agree(tiled.dw, twin.dw, rounded_tolerances(data.dw, p))) << "bwd-weights " << where;
      }
}

// cifar10-cnn conv4 and resnet18-cifar layer2 (128 -> 128, 3x3 on 16x16),
// at batch 1 (the float64 reference is the slow part), in both precisions.
TEST(ConvTensorCoreLayer, RealLayersAreWithinTheRoundingBound) {
  const std::vector<ConvCase> layers = {{"cifar10_cnn_conv4", make(1, 64, 15, 15, 64, 3, 3, 0)},
                                        {"resnet18_layer2", make(1, 128, 16, 16, 128, 3, 3, 1)}};
  for (TensorCorePrecision p : {kTf32, kBf16})
    for (const ConvCase& c : layers)
      for (int version : runnable({kTiled, kPipelined, kChannelsLast, kWgmma})) {
        const Outputs<float> out = run_tc(c.desc, version, p);
        expect_within_bound(c, out, c.name + " v" + std::to_string(version), p);
        // Far inside the worst case: the errors of a real layer are random-signed.
        const CaseData& data = case_data(c.desc);
        double worst = 0;
        for (std::size_t i = 0; i < out.y.size(); ++i)
          worst = std::max(worst, std::abs(out.y[i] - data.y.value[i]) / data.y.magnitude[i]);
        EXPECT_LT(worst, 2 * unit_of(p)) << c.name << " v" << version << " " << kernels::precision_name(p);
      }
}

// The split of backward-weights is version 3's, fixed by the descriptor: two
// runs (and one under another thread order) give the same bits.
TEST(ConvTensorCore, SplitKBackwardWeightsIsDeterministic) {
  const ConvCase& split = named("split_k_4_groups");
  ASSERT_EQ(kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, split.desc, kTiled), 4);
  ASSERT_EQ(kernels::conv2d_implicit_gemm_weight_slices(DType::float32, split.desc, kernels::kImplicitGemmTiledVersion),
            4);
  // Version 4's own backward-weights splits by the same rule, within what
  // its copies leave of the workspace limit.
  ASSERT_EQ(kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, split.desc, kChannelsLast), 4);
  for (int version : runnable({kTiled, kChannelsLast, kWgmma})) {
    const Outputs<float> first = run_tc(split.desc, version);
    EXPECT_EQ(run_tc(split.desc, version).dw, first.dw) << "v" << version;
#if !defined(__CUDACC__)
    sim::ScopedSchedule schedule(sim::Schedule::parse("random:5"));
    EXPECT_EQ(run_tc(split.desc, version).dw, first.dw) << "v" << version;
#endif
  }
}

#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(ConvTensorCore, TiledVersionIsRightUnderOtherThreadOrders) {
  for (const char* order : {"reverse", "random:11"}) {
    sim::ScopedSchedule schedule(sim::Schedule::parse(order));
    for (const char* name : {"tiles_70x19_odd", "groups2_stride2_dilation2", "split_k_2", "stride_dilation_groups"})
      expect_within_bound(named(name), run_tc(named(name).desc, kTiled), std::string(name) + " " + order);
  }
}
#endif

// Off (the default) is strict float32: every pass gives the bits of the
// strict kernels launched directly; and float64 is strict whatever the setting.
TEST(ConvTensorCore, OffIsBitForBitTheStrictKernelsAndFloat64IsAlwaysStrict) {
  if (std::getenv("CONVKIT_ALLOW_TF32") == nullptr) {
    EXPECT_FALSE(allow_tf32());
  }
  for (const char* name : {"tiles_70x19_odd", "groups2_stride2_dilation2", "split_k_4_groups"}) {
    const ConvCase& c = named(name);
    const CaseData& data = case_data(c.desc);
    Outputs<float> off;
    {
      const ScopedAllowTf32 strict(false);
      off = run_passes<float>(algo(), c.desc, data.in);
    }
    const int v = kernels::kImplicitGemmTiledVersion;
    const Conv2dDesc& d = c.desc;
    std::size_t bytes = 0;
    for (ConvPass pass : {ConvPass::backward_data, ConvPass::backward_weights})
      bytes = std::max(bytes, kernels::conv2d_implicit_gemm_workspace_bytes(DType::float32, d, pass, v));
    const Tensor ws = empty({static_cast<std::int64_t>(bytes / 4 + 1)}, TensorOptions().device(kernel_device()));
    const Tensor x = device_tensor<float>(data.in.x), w = device_tensor<float>(data.in.w);
    const Tensor b = device_tensor<float>(data.in.b), dy = device_tensor<float>(data.in.dy);
    const Tensor y = garbage<float>(y_size(d)), dx = garbage<float>(x_size(d)), dw = garbage<float>(w_size(d));
    kernels::launch_conv2d_implicit_gemm_forward(DType::float32, d, x.raw_data(), w.raw_data(), b.raw_data(),
                                                 y.raw_data(), v);
    kernels::launch_conv2d_implicit_gemm_backward_data(DType::float32, d, dy.raw_data(), w.raw_data(), dx.raw_data(),
                                                       ws.raw_data(), v);
    kernels::launch_conv2d_implicit_gemm_backward_weights(DType::float32, d, x.raw_data(), dy.raw_data(),
                                                          dw.raw_data(), ws.raw_data(), v);
    EXPECT_EQ(off.y, y.to_vector<float>()) << name;
    EXPECT_EQ(off.dx, dx.to_vector<float>()) << name;
    EXPECT_EQ(off.dw, dw.to_vector<float>()) << name;
    // The tensor-core path rounds: on differs from off somewhere.
    const Outputs<float> on = run_tc(d, kTiled);
    EXPECT_NE(on.y, off.y) << name;
    EXPECT_NE(on.dw, off.dw) << name;
    Outputs<double> strict64, on64;
    {
      const ScopedAllowTf32 strict(false);
      strict64 = run_passes<double>(algo(), d, data.in);
    }
    {
      const ScopedAllowTf32 allowed(true);
      on64 = run_passes<double>(algo(), d, data.in);
    }
    EXPECT_EQ(on64.y, strict64.y) << name;
    EXPECT_EQ(on64.dx, strict64.dx) << name;
    EXPECT_EQ(on64.dw, strict64.dw) << name;
  }
}

// x = 1 + 2^-20 has no tf32 form (1 + 2^-10 has one, but no bf16 form); times
// w = 3 the result shows which path ran.
float rounding_probe(double x_value = 1.0 + 0x1p-20) {
  const Conv2dDesc d = make(1, 1, 1, 1, 1, 1, 1, 0);
  const Tensor x = device_tensor<float>({x_value}), w = device_tensor<float>({3.0});
  const Tensor y = garbage<float>(1);
  algo().forward(d, DType::float32, x.raw_data(), w.raw_data(), nullptr, y.raw_data(), nullptr);
  return y.to_vector<float>()[0];
}

TEST(ConvTensorCore, OperandsAreRoundedOnlyWhenAllowed) {
  {
    const ScopedAllowTf32 strict(false);
    EXPECT_EQ(rounding_probe(), 3.0f * (1.0f + 0x1p-20f));
  }
  for (int version : {0, kTiled}) {  // the default, and a pinned version
    const ScopedKernelVersion pinned(kFamily, version);
    {
      const ScopedAllowTf32 on(true);
      EXPECT_EQ(rounding_probe(), 3.0f) << "v" << version << ": the tensor cores did not run";
      EXPECT_EQ(rounding_probe(1.0 + 0x1p-10), 3.0f * (1.0f + 0x1p-10f)) << "tf32 keeps 10 mantissa bits";
    }
    const ScopedFloat32Precision medium(Float32Precision::medium);
    EXPECT_EQ(rounding_probe(1.0 + 0x1p-10), 3.0f) << "v" << version << ": bf16 keeps 7";
  }
}

// Run by the ctest entry <suite>.env with CONVKIT_ALLOW_TF32=1 (and skipped
// in the ordinary run, where the variable is unset).
TEST(ConvTensorCoreEnvironment, TheVariableTurnsTheTensorCoresOn) {
  const char* v = std::getenv("CONVKIT_ALLOW_TF32");
  if (v == nullptr || std::string(v) != "1") GTEST_SKIP() << "CONVKIT_ALLOW_TF32 is not 1";
  EXPECT_TRUE(allow_tf32());
  EXPECT_EQ(rounding_probe(), 3.0f);
}

// The workspace is a function of the descriptor alone: the same whatever
// allow_tf32 says, enough for either path, and (default versions) exactly
// version 3's, since the tensor-core kernel cuts the same split-K.
TEST(ConvTensorCore, WorkspaceDoesNotDependOnTheSetting) {
  for (const ConvCase& c : cases())
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
      std::size_t off = 0, on = 0;
      {
        const ScopedAllowTf32 strict(false);
        off = algo().workspace_bytes(c.desc, DType::float32, pass);
      }
      {
        const ScopedAllowTf32 allowed(true);
        on = algo().workspace_bytes(c.desc, DType::float32, pass);
      }
      EXPECT_EQ(on, off) << c.name << " " << conv_pass_name(pass);
      EXPECT_EQ(off, kernels::conv2d_implicit_gemm_workspace_bytes(DType::float32, c.desc, pass,
                                                                   kernels::kImplicitGemmTiledVersion))
          << c.name << " " << conv_pass_name(pass);
      EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, c.desc, pass, kTiled), off)
          << c.name << " " << conv_pass_name(pass);
      EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, c.desc, pass, kWarp), 0u);
    }
  // The strict simple version needs none; the tensor-core one's partials
  // still fit, so the algorithm asks for them under every setting.
  ScopedKernelVersion simple("conv2d_implicit_gemm", kernels::kImplicitGemmSimpleVersion);
  const ConvCase& split = named("split_k_4_groups");
  const std::size_t partials = kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(
      DType::float32, split.desc, ConvPass::backward_weights, kTiled);
  EXPECT_GT(partials, 0u);
  EXPECT_EQ(algo().workspace_bytes(split.desc, DType::float32, ConvPass::backward_weights), partials);
  EXPECT_EQ(algo().workspace_bytes(split.desc, DType::float64, ConvPass::backward_weights), 0u);
  expect_within_bound(split, run_tc(split.desc, kTiled), "strict v2 selected");
}

TEST(ConvTensorCore, BadArgumentsNameTheProblem) {
  const Conv2dDesc d = make(1, 2, 5, 5, 2, 3, 3, 0);
  EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float64, d, kTiled).find("float32"),
            std::string::npos);
  EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, d, 6).find("versions 1..5"),
            std::string::npos);
  // Version 5 runs where wgmma does, and says why not elsewhere.
  if (device_runs_wgmma()) {
    EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, d, kWgmma), "");
  } else {
    EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, d, kWgmma)
                  .find(why_no_wgmma()),
              std::string::npos);
  }
  const Conv2dDesc huge = make(1 << 16, 64, 32, 32, 64, 3, 3, 1);
  EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, huge, kTiled).find("32 bits"),
            std::string::npos);
  try {
    kernels::launch_conv2d_implicit_gemm_tensor_core_forward(kernels::TensorCorePrecision::tf32, DType::float32, d,
                                                             nullptr, nullptr, nullptr, nullptr, nullptr, kTiled);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("null"), std::string::npos) << e.what();
  }
}

// A conv net (two convolutions, nothing else with a product) trains on the
// kernel device at float32 precision high (tf32) and medium (bf16): it
// learns, stays near the strict run, and is not it (the tensor cores ran).
std::vector<double> train(Float32Precision precision) {
  const ScopedFloat32Precision setting(precision);
  manual_seed(321);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 24, 3).padding(1)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(24, 4, 8)));
  net->push_back(std::make_shared<nn::Flatten>());
  nn::set_conv_algo(*net, ConvAlgo::im2col_gemm);
  net->to(kernel_device());
  manual_seed(8);
  const Tensor x = randn({8, 3, 8, 8}).to(kernel_device());
  const Tensor y = from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 0, 1, 2, 3}, {8},
                               TensorOptions().dtype(DType::int64).device(kernel_device()));
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  std::vector<double> losses;
  for (int step = 0; step < 8; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item());
  }
  return losses;
}

TEST(ConvTensorCoreTraining, AConvNetTrainsWithTf32AndBf16) {
  const std::vector<double> strict = train(Float32Precision::highest);
  for (Float32Precision p : {Float32Precision::high, Float32Precision::medium}) {
    const std::vector<double> reduced = train(p);
    // bf16 (2^-8) drifts further from the strict run than tf32 (2^-11).
    const double drift = p == Float32Precision::high ? 1e-2 : 5e-2;
    EXPECT_LT(reduced.back(), 0.5 * reduced.front()) << to_string(p) << ": the network should learn the batch";
    bool differs = false;
    for (std::size_t i = 0; i < strict.size(); ++i) {
      EXPECT_NEAR(reduced[i], strict[i], drift * std::abs(strict[i]) + 1e-4) << to_string(p) << " step " << i;
      differs = differs || reduced[i] != strict[i];
    }
    EXPECT_TRUE(differs) << to_string(p) << " changed nothing: the tensor-core path did not run";
  }
}

#if !defined(__CUDACC__)  // the performance model is sim's
sim::KernelProfile profiled(const Conv2dDesc& d, ConvPass pass, int version, TensorCorePrecision precision = kTf32) {
  const CaseData& data = case_data(d);
  const ScopedFloat32Precision level(precision == kTf32 ? Float32Precision::high : Float32Precision::medium);
  ScopedKernelVersion select(kFamily, version);
  // The profile sees global accesses to the memory allocated while it is
  // on: the operands are allocated under it, and their fills forgotten.
  const sim::ScopedProfile profile;
  const Tensor x = device_tensor<float>(data.in.x), w = device_tensor<float>(data.in.w);
  const Tensor dy = device_tensor<float>(data.in.dy);
  const Tensor out = garbage<float>(pass == ConvPass::forward ? y_size(d) : pass == ConvPass::backward_data ? x_size(d)
                                                                                                            : w_size(d));
  const std::size_t bytes = algo().workspace_bytes(d, DType::float32, pass);
  const Tensor ws = empty({static_cast<std::int64_t>(bytes / 4 + 1)}, TensorOptions().device(kernel_device()));
  (void)sim::take_profile();
  switch (pass) {
    case ConvPass::forward:
      algo().forward(d, DType::float32, x.raw_data(), w.raw_data(), nullptr, out.raw_data(), ws.raw_data());
      break;
    case ConvPass::backward_data:
      algo().backward_data(d, DType::float32, dy.raw_data(), w.raw_data(), out.raw_data(), ws.raw_data());
      break;
    case ConvPass::backward_weights:
      algo().backward_weights(d, DType::float32, x.raw_data(), dy.raw_data(), out.raw_data(), nullptr, ws.raw_data());
      break;
  }
  // Versions 1 and 2 are implicit_gemm_tc_*; version 3 runs version 5's
  // kernels (implicit_gemm_v5_*) with their tensor-core Math.
  sim::KernelProfile tiled;
  for (const sim::KernelProfile& k : sim::take_profile())
    if (k.kernel.find("implicit_gemm_tc_") != std::string::npos || k.kernel.find("implicit_gemm_v5_") != std::string::npos)
      tiled += k;
  return tiled;
}

// Every mma is counted as tensor-core work of its precision and none as
// FP32, in every pass of versions 2 and 3 in tf32 and bf16; their fragment
// reads are free of bank conflicts (version 3's with its rows of 8 mod 32
// words in tf32, 4 mod 32 in bf16), and so are version 2's loaders' stores,
// both B layouts included (the head of the .cu gives the bank arithmetic).
// Version 3's rows cost the stores of loaders whose lanes walk k 2-way
// conflicts, and no request more than 2-way. Version 4's stages are
// conflict-free both ways: the swizzled rows of forward and backward-data,
// and backward-weights' k-major rows, which 8 lanes fill with one 128-byte
// run. So are version 5's: its copies fill a 128-byte swizzled row per
// quarter warp, and its output tile is version 4's.
TEST(ConvTensorCore, TheSimProfileCountsMmaAndFragmentReadsAreConflictFree) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  const Conv2dDesc d = make(2, 16, 12, 12, 24, 3, 3, 1);
  for (TensorCorePrecision p : {kTf32, kBf16})
    for (int version : runnable({kTiled, kPipelined, kChannelsLast, kWgmma}))
      for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
        const std::string where = std::string(conv_pass_name(pass)) + " v" + std::to_string(version) + " " +
                                  kernels::precision_name(p);
        const sim::KernelProfile t = profiled(d, pass, version, p);
        EXPECT_GT(p == kTf32 ? t.tf32_fmas : t.bf16_fmas, 0u) << where;
        EXPECT_EQ(p == kTf32 ? t.bf16_fmas : t.tf32_fmas, 0u) << where;
        EXPECT_EQ(t.fmas, 0u) << where;
        EXPECT_GT(t.shared_load.requests, 0u) << where;
        EXPECT_EQ(t.shared_load.conflict_wavefronts, 0u) << where;
        if (version == kTiled || version == kChannelsLast || version == kWgmma) {
          EXPECT_EQ(t.shared_store.conflict_wavefronts, 0u) << where;
        } else {
          EXPECT_LE(t.shared_store.max_ways, 2u) << where;
        }
      }
  // Forward is one product Kg x N*P*Q x Cg*R*S = 24 x 288 x 144: version 1
  // runs 2 x 36 tiles of 16x8 over 18 k-steps of 8, version 2 one 64-row
  // band by 5 column tiles over 5 K-steps of 32. Version 3 takes version 5's
  // 32x64 tile (M = 24, 4 warps of 32x16) over 18 k-steps of 8: the 288
  // columns are 18 warp tiles of 2 x 2 mma tiles, and a warp wholly past the
  // columns issues none.
  EXPECT_EQ(profiled(d, ConvPass::forward, kWarp).tf32_fmas, 2u * 36 * 16 * 8 * 8 * 18);
  EXPECT_EQ(profiled(d, ConvPass::forward, kTiled).tf32_fmas, 1u * 5 * 64 * 64 * 32 * 5);
  EXPECT_EQ(profiled(d, ConvPass::forward, kPipelined).tf32_fmas, 18u * 32 * 16 * 8 * 18);
  // Version 4: the same tiles over the same 144 k (16 channels need no
  // padding), 9 stages of two k-steps.
  EXPECT_EQ(profiled(d, ConvPass::forward, kChannelsLast).tf32_fmas, 18u * 32 * 16 * 8 * 18);
  if (!device_runs_wgmma()) return;  // CONVKIT_DISABLE_WGMMA
  // Version 5: 24 rows take the 64 x 128 tile (one warpgroup), 3 column
  // tiles, 5 stages of 32 k (144 rounded up), four m64n128k8 each.
  EXPECT_EQ(profiled(d, ConvPass::forward, kWgmma).tf32_fmas, 3u * 5 * 4 * 64 * 128 * 8);
  // 70 rows in one column tile: two 64 x 128 blocks of one warpgroup each
  // (one 128 x 128 block would put all 70 rows on one SM).
  const sim::KernelProfile seventy = profiled(make(1, 4, 6, 6, 70, 1, 1, 0), ConvPass::forward, kWgmma);
  EXPECT_EQ(seventy.tf32_fmas, 2u * 1 * 4 * 64 * 128 * 8);
  EXPECT_EQ(seventy.blocks, 2u);
  EXPECT_EQ(seventy.threads, 2u * 128);
  // Its backward-weights: 24 x 144 (columns (r, s, c)) over 288 positions in
  // one slice, 2 column tiles of 128 x 128 whose second warpgroup (rows 64
  // on) issues nothing, 9 stages of 32 positions.
  ASSERT_EQ(kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, d, kWgmma), 1);
  EXPECT_EQ(profiled(d, ConvPass::backward_weights, kWgmma).tf32_fmas, 2u * 1 * 9 * 4 * 64 * 128 * 8);
}

// Version 5's tile rows (forward and backward-data), by the busiest SM's
// rows of 128 columns, its blocks dealt out 132 at a time; resnet18-cifar's
// products at batch 128 (forward: M = K, cols = N*P*Q; backward-data, per
// stride phase: M = C, cols = N times the phase's positions).
TEST(ConvTensorCore, WgmmaTileRowsFollowTheBusiestSm) {
  const auto rows = kernels::conv2d_implicit_gemm_wgmma_tile_rows;
  // At most 64 rows: one warpgroup's tile.
  EXPECT_EQ(rows(24, 288, 1), 64);
  EXPECT_EQ(rows(64, 131072, 1), 64);
  // layer2 forward, 128 x 32768: 256 blocks of 128 x 128 (2 waves of 128
  // rows) against 512 of 64 x 128 (4 waves of 64): a tie, so 128.
  EXPECT_EQ(rows(128, 32768, 1), 128);
  // layer3 forward, 256 x 8192: 128 blocks in one wave, against 256 in two.
  EXPECT_EQ(rows(256, 8192, 1), 128);
  // layer4 forward, 512 x 2048: 64 blocks of 128 x 128 leave 68 SMs idle;
  // 128 of 64 x 128 fill them in one wave of half the rows.
  EXPECT_EQ(rows(512, 2048, 1), 64);
  // layer4.conv1's backward-data, a 4x4 phase: 256 x 2048, 32 blocks or 64.
  EXPECT_EQ(rows(256, 2048, 1), 64);
  // 140 blocks of 128 x 128 need a second wave for 8 of them (256 rows on
  // the busiest SM); 280 of 64 x 128 need three waves of 64 (192).
  EXPECT_EQ(rows(128, 140 * 128, 1), 64);
  EXPECT_EQ(rows(128, 70 * 128, 2), 64);  // groups count as blocks
  // 67 blocks against 134: one wave of 128 rows against two of 64, a tie.
  EXPECT_EQ(rows(128, 67 * 128, 1), 128);
}

// The twin tests' products are small, so they take the 64 x 128 tile.
// These take 128 x 128 (72 blocks, one wave, against 144 of 64 x 128 in
// two): forward with K = 128 rows, backward-data with C = 128, 1x1 filters
// over 4 channels so that the product is one stage deep. Version 5's two
// warpgroups give version 4's bits too, within the float64 bound, and the
// profile counts 72 blocks of 256 threads.
TEST(ConvTensorCore, WgmmaTwoWarpgroupTilesGiveVersion4Bits) {
  if (!device_runs_wgmma()) GTEST_SKIP() << why_no_wgmma();
  const ConvCase forward{"k128_1x1_n9_32x32", make(9, 4, 32, 32, 128, 1, 1, 0)};
  const ConvCase backward_data{"c128_1x1_n9_32x32", make(9, 128, 32, 32, 4, 1, 1, 0)};
  ASSERT_EQ(kernels::conv2d_implicit_gemm_wgmma_tile_rows(128, 9 * 32 * 32, 1), 128);
  const Outputs<float> v5_forward = run_tc(forward.desc, kWgmma), v5_backward = run_tc(backward_data.desc, kWgmma);
  expect_within_bound(forward, v5_forward, forward.name + " v5");
  expect_within_bound(backward_data, v5_backward, backward_data.name + " v5");
#if !defined(__CUDACC__)
  EXPECT_EQ(v5_forward.y, run_tc(forward.desc, kChannelsLast).y);
  EXPECT_EQ(v5_backward.dx, run_tc(backward_data.desc, kChannelsLast).dx);
#endif
  if (!sim::checks_available()) return;
  for (const auto& [c, pass] : {std::pair{forward, ConvPass::forward}, std::pair{backward_data, ConvPass::backward_data}}) {
    const sim::KernelProfile t = profiled(c.desc, pass, kWgmma);
    EXPECT_EQ(t.blocks, 72u) << c.name;
    EXPECT_EQ(t.threads, 72u * 256) << c.name;
    EXPECT_EQ(t.tf32_fmas, 72u * 2 * 4 * 64 * 128 * 8) << c.name;  // one stage of four m64n128k8 per warpgroup
  }
}

#if !defined(__CUDACC__)  // where shared memory starts is sim's to choose
// Version 5's stages aligned by the kernels themselves: with the block's
// dynamic shared memory at shared address 528 (16-aligned, not 1024),
// wgmma_aligned skips 496 bytes, within the 1024 spare ones, and every pass
// gives the bits it gives at 0, memcheck and racecheck clean.
TEST(ConvTensorCore, WgmmaAlignsItsStagesWhereverSharedMemoryStarts) {
  for (const Conv2dDesc& d : {make(2, 16, 12, 12, 24, 3, 3, 1), make(3, 8, 9, 9, 16, 3, 3, 1, 2)}) {
    const Outputs<float> at0 = run_tc(d, kWgmma);
    const sim::ScopedDynamicSharedAddress moved(528);
    const sim::ScopedChecks checks(sim::Checks::parse(sim::checks_available() ? "memcheck,racecheck" : ""));
    const Outputs<float> at528 = run_tc(d, kWgmma);
    EXPECT_EQ(at0.y, at528.y);
    EXPECT_EQ(at0.dx, at528.dx);
    EXPECT_EQ(at0.dw, at528.dw);
  }
}
#endif

// Versions 4 and 5 gather 4 channels per 16-byte copy where version 3
// copies one element: their product kernels ask for at most a third of
// version 3's global-load requests (a quarter, plus the zero-filled padding
// channels' share and the tiles' edges), every one of them 16 bytes (no
// bias here, whose epilogue reads are 4), in all three passes.
TEST(ConvTensorCore, ChannelsLastGathersFourChannelsPerCopy) {
  if (!sim::checks_available()) GTEST_SKIP() << "built with -DCONVKIT_SIM_CHECKS=OFF";
  const Conv2dDesc d = make(2, 16, 12, 12, 24, 3, 3, 1);
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
    const sim::KernelProfile v3 = profiled(d, pass, kPipelined);
    for (int version : runnable({kChannelsLast, kWgmma})) {
      const sim::KernelProfile v = profiled(d, pass, version);
      const std::string where = std::string(conv_pass_name(pass)) + " v" + std::to_string(version);
      EXPECT_GT(v.global_load.requests, 0u) << where;
      // Version 5's backward-weights loads its 4 x 4 blocks into registers
      // over 128-row tiles: more warps meet this product's 24 rows than
      // version 4's 32- and 64-row tiles put there, at half version 3's
      // requests.
      const bool blocks = version == kWgmma && pass == ConvPass::backward_weights;
      EXPECT_LE((blocks ? 2 : 3) * v.global_load.requests, v3.global_load.requests) << where;
      EXPECT_EQ(v.global_load.bytes, 16 * v.global_load.lanes) << where;
    }
  }
}
#endif

// Version 4's workspace is its copies: the image channels-last and the
// filter taps-major, each group's channels padded to a multiple of 4
// (backward-weights: x and dy channels-last, then any split-K partials).
// Where forward's or backward-data's pass workspace_limit it says so, and
// the algorithm runs the strict kernels instead; where backward-weights'
// alone do, that pass runs version 3's.
TEST(ConvTensorCore, ChannelsLastWorkspaceIsItsCopies) {
  const Conv2dDesc d = make(2, 13, 9, 10, 21, 3, 3, 1, 2);  // Cg4 = 16, Kg4 = 24, 5 x 5 outputs
  const auto bytes = [&](ConvPass pass) {
    return kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, d, pass, kChannelsLast);
  };
  EXPECT_EQ(bytes(ConvPass::forward), 4u * (2 * 9 * 10 * 16 + 21 * 9 * 16));
  EXPECT_EQ(bytes(ConvPass::backward_data), 4u * (2 * 5 * 5 * 24 + 13 * 9 * 24));
  ASSERT_EQ(kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, d, kChannelsLast), 1);
  EXPECT_EQ(bytes(ConvPass::backward_weights), 4u * (2 * 9 * 10 * 16 + 2 * 5 * 5 * 24));
  // Version 5 makes the same copies.
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, d, pass, kWgmma), bytes(pass))
        << conv_pass_name(pass);
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, d, kWgmma), 1);
  // 2 groups of Cg4 = Kg4 = 4 in both copies, then 4 slices of dw's 6 x 2 x 3 x 3.
  const ConvCase& split = named("split_k_4_groups");
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, split.desc,
                                                                      ConvPass::backward_weights, kChannelsLast),
            4u * (2 * (2 * 32 * 32 * 2 * 4) + 4 * 6 * 2 * 9));
  Conv2dDesc tight = d;
  tight.workspace_limit = bytes(ConvPass::forward) - 4;
  EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, tight, kChannelsLast)
                .find("workspace_limit"),
            std::string::npos);
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, tight, kPipelined), "");
  // Backward-weights' copies (x and dy) are the largest here: where they
  // alone pass the limit, that pass runs version 3's, and the others stay.
  Conv2dDesc narrow = make(4, 4, 8, 8, 4, 3, 3, 1);  // x and dy copies 1,024 floats each, filters 144
  narrow.workspace_limit = 4 * (1024 + 144);
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, narrow, kChannelsLast), "");
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, narrow,
                                                                      ConvPass::backward_weights, kChannelsLast),
            kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, narrow,
                                                                      ConvPass::backward_weights, kPipelined));
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, narrow, kChannelsLast),
            kernels::conv2d_implicit_gemm_tensor_core_weight_slices(DType::float32, narrow, kPipelined));
  expect_within_bound({"narrow", narrow}, run_tc(narrow, kChannelsLast), "narrow workspace v4");
  // kIndexLimit - 1 channels fit 32-bit indices with their headroom (a
  // K-step's rounding of the depth must not wrap); padded to a multiple of
  // 4 they pass it; one channel past kIndexLimit is refused by every version.
  static_assert((kernels::implicit_gemm::kIndexLimit - 1) % 4 != 0, "the padding must cross the limit");
  Conv2dDesc wide = make(1, kernels::implicit_gemm::kIndexLimit - 1, 1, 1, 1, 1, 1, 0);
  wide.workspace_limit = std::numeric_limits<decltype(wide.workspace_limit)>::max();
  EXPECT_EQ(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, wide, kPipelined), "");
  EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, wide, kChannelsLast)
                .find("32-bit indices"),
            std::string::npos);
  wide.C = kernels::implicit_gemm::kIndexLimit + 1;
  EXPECT_NE(kernels::conv2d_implicit_gemm_tensor_core_cannot_implement(DType::float32, wide, kPipelined)
                .find("64-bit indices"),
            std::string::npos);
}

TEST(ConvTensorCore, ChannelsLastNamesAMissingOrMisalignedWorkspace) {
  const Conv2dDesc d = make(1, 4, 6, 6, 4, 3, 3, 1);
  const Tensor x = device_tensor<float>(std::vector<double>(static_cast<std::size_t>(x_size(d)), 1.0));
  const Tensor w = device_tensor<float>(std::vector<double>(static_cast<std::size_t>(w_size(d)), 1.0));
  const Tensor y = garbage<float>(y_size(d));
  const std::size_t bytes = kernels::conv2d_implicit_gemm_tensor_core_workspace_bytes(DType::float32, d,
                                                                                       ConvPass::forward, kChannelsLast);
  const Tensor ws = empty({static_cast<std::int64_t>(bytes / 4 + 4)}, TensorOptions().device(kernel_device()));
  const auto forward = [&](void* workspace) {
    kernels::launch_conv2d_implicit_gemm_tensor_core_forward(kernels::TensorCorePrecision::tf32, DType::float32, d,
                                                             x.raw_data(), w.raw_data(), nullptr, y.raw_data(),
                                                             workspace, kChannelsLast);
  };
  for (void* bad : {static_cast<void*>(nullptr), static_cast<void*>(static_cast<float*>(ws.raw_data()) + 1)}) {
    try {
      forward(bad);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bad == nullptr ? "workspace is null" : "16-byte aligned"), std::string::npos) << what;
    }
  }
  forward(ws.raw_data());
  for (float v : y.to_vector<float>()) EXPECT_GT(v, 0.0f);
}

}  // namespace
}  // namespace convkit::gpu_testing
