// The implicit-GEMM convolution (kernels/conv2d_implicit_gemm.cu) as the GPU
// im2col_gemm algorithm runs it, under sim (and cuda, in the nvcc build):
// every version of the conv2d_implicit_gemm family (1 the explicit column
// path, 2 simple, 3 tiled, 4 staged, 5 pipelined), every pass, float32 and float64, on
// tests/cpu/conv's descriptors (odd sizes, batch 1, stride, padding,
// dilation, groups) plus tile-straddling and split-K cases and one layer each
// of cifar10-cnn and resnet18-cifar at batch 1; against the float64
// reference, against each other, under other thread orders, bit for bit
// across runs, and through the op's gradcheck.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_conv_testing.h"
#include "kernels/conv2d_implicit_gemm.cuh"
#include "support/support.h"

namespace convkit::gpu_testing {
namespace {

using cpu::testing::ConvCase;

constexpr const char* kFamily = "conv2d_implicit_gemm";

class RegisterFamily : public ::testing::Environment {
 public:
  void SetUp() override { kernels::register_conv2d_implicit_gemm_family(); }
};
[[maybe_unused]] const ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new RegisterFamily);

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

// Small enough for sim; the real layers run at batch 1 and in the *layer* tests only.
const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = [] {
    std::vector<ConvCase> c;
    for (const ConvCase& k : cpu::testing::conv_cases())
      if (k.name.rfind("parallel_", 0) != 0 && k.name.rfind("one_image_parallel", 0) != 0) c.push_back(k);
    // M and columns past one 64x64 tile, depth not a multiple of the 32-deep K-step.
    c.push_back({"tiles_70x19_odd", make(2, 19, 11, 13, 70, 3, 3, 1)});
    c.push_back({"groups2_stride2_dilation2", make(3, 6, 13, 11, 4, 3, 3, 2, 2, 2, 2)});
    // Backward-weights' K = N*P*Q = 1156 and 2048: two and four split-K slices.
    c.push_back({"split_k_2", make(4, 3, 17, 17, 5, 3, 3, 1)});
    c.push_back({"split_k_4_groups", make(2, 4, 32, 32, 6, 3, 3, 1, 1, 2)});
    return c;
  }();
  return all;
}

// Shapes version 4 runs itself (planes and stride phases of 32 positions or
// more): odd sizes, padding, stride 2, dilation 2, groups, batch 1, channels
// and filters that are no multiple of a tile, a 5x5 filter, a 1x1 stride-2
// filter (whose odd phases no tap reaches), and two- and four-slice split-K.
const std::vector<ConvCase>& staged_cases() {
  static const std::vector<ConvCase> all = {
      {"staged_odd_pad", make(2, 5, 13, 11, 7, 3, 3, 1)},
      {"staged_tiles_70x19_odd", make(2, 19, 11, 13, 70, 3, 3, 1)},
      {"staged_stride2_pad", make(2, 6, 13, 15, 20, 3, 3, 1, 2)},
      {"staged_dilation2_groups2_batch1", make(1, 8, 14, 14, 6, 3, 3, 2, 1, 2, 2)},
      {"staged_stride2_dilation2_groups2", make(2, 6, 19, 17, 4, 3, 3, 2, 2, 2, 2)},
      {"staged_5x5_c37_k33", make(1, 37, 12, 12, 33, 5, 5, 2)},
      {"staged_1x1_stride2", make(2, 4, 16, 16, 16, 1, 1, 0, 2)},
      {"staged_split_k_2", make(4, 3, 17, 17, 5, 3, 3, 1)},
      {"staged_split_k_4_groups", make(2, 4, 32, 32, 6, 3, 3, 1, 1, 2)},
  };
  return all;
}

// cifar10-cnn conv4 and resnet18-cifar layer3.conv1 (stride 2), at batch 1.
const std::vector<ConvCase>& layers() {
  static const std::vector<ConvCase> all = {
      {"cifar10_cnn_conv4", make(1, 64, 15, 15, 64, 3, 3, 0)},
      {"resnet18_layer3_conv1", make(1, 128, 16, 16, 256, 3, 3, 1, 2)},
  };
  return all;
}

const conv::ConvAlgorithm& algo() { return kernels::im2col_gemm_gpu_conv_algorithm(); }

template <typename T>
void expect_matches_reference(const ConvCase& c, int version) {
  ScopedKernelVersion select(kFamily, version);
  expect_passes_match<T>(algo(), ConvAlgo::im2col_gemm, c.desc, c.name + " v" + std::to_string(version));
}

using Param = std::tuple<std::size_t, int>;
std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  return cases()[std::get<0>(info.param)].name + "_v" + std::to_string(std::get<1>(info.param));
}

class ImplicitGemmCase : public ::testing::TestWithParam<Param> {};

TEST_P(ImplicitGemmCase, EveryPassMatchesTheFloat64Reference) {
  const auto [index, version] = GetParam();
  expect_matches_reference<float>(cases()[index], version);
  expect_matches_reference<double>(cases()[index], version);
}

// The implicit versions against the explicit path (v1) in float32.
class ImplicitGemmVersusV1 : public ::testing::TestWithParam<Param> {};

TEST_P(ImplicitGemmVersusV1, AgreesWithTheExplicitPath) {
  const auto [index, version] = GetParam();
  expect_agrees_with_v1(algo(), ConvAlgo::im2col_gemm, kFamily, version, cases()[index].desc,
                        cases()[index].name + " v" + std::to_string(version));
}

INSTANTIATE_TEST_SUITE_P(Cases, ImplicitGemmCase,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(1, 2, 3, 4, 5)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Cases, ImplicitGemmVersusV1,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(2, 3, 4, 5)),
                         case_name);

// The simple and the tiled version against each other, in float32.
TEST(ImplicitGemm, TiledAgreesWithSimple) {
  using cpu::testing::tolerances;
  for (const ConvCase& c : cases()) {
    const CaseData& data = case_data(c.desc);
    Outputs<float> simple, tiled;
    {
      ScopedKernelVersion select(kFamily, kernels::kImplicitGemmSimpleVersion);
      simple = run_passes<float>(algo(), c.desc, data.in);
    }
    {
      ScopedKernelVersion select(kFamily, kernels::kImplicitGemmTiledVersion);
      tiled = run_passes<float>(algo(), c.desc, data.in);
    }
    EXPECT_TRUE(agree(tiled.y, simple.y, tolerances<float>(ConvAlgo::im2col_gemm, data.y))) << "forward " << c.name;
    EXPECT_TRUE(agree(tiled.dx, simple.dx, tolerances<float>(ConvAlgo::im2col_gemm, data.dx))) << "bwd-data " << c.name;
    EXPECT_TRUE(agree(tiled.dw, simple.dw, tolerances<float>(ConvAlgo::im2col_gemm, data.dw))) << "bwd-weights " << c.name;
  }
}

// Real layer sizes, float32 only (the float64 reference is the slow part).
TEST(ImplicitGemmLayer, RealLayersMatchTheReferenceInEveryImplicitVersion) {
  for (const ConvCase& c : layers())
    for (int version : {kernels::kImplicitGemmSimpleVersion, kernels::kImplicitGemmTiledVersion,
                        kernels::kImplicitGemmStagedVersion, kernels::kImplicitGemmPipelinedVersion})
      expect_matches_reference<float>(c, version);
}

// ---- Version 4 (staged) on the shapes it runs itself.

Outputs<float> run_version(const ConvCase& c, int version) {
  ScopedKernelVersion select(kFamily, version);
  return run_passes<float>(algo(), c.desc, case_data(c.desc).in);
}

class StagedCase : public ::testing::TestWithParam<std::size_t> {};

// Each case must really run version 4, not fall back to version 3.
TEST_P(StagedCase, RunsVersion4AndMatchesTheFloat64Reference) {
  const ConvCase& c = staged_cases()[GetParam()];
  for (DType dtype : {DType::float32, DType::float64})
    ASSERT_EQ(kernels::conv2d_implicit_gemm_cannot_implement(dtype, c.desc, kernels::kImplicitGemmStagedVersion), "")
        << c.name << " " << dtype;
  expect_matches_reference<float>(c, kernels::kImplicitGemmStagedVersion);
  expect_matches_reference<double>(c, kernels::kImplicitGemmStagedVersion);
}

TEST_P(StagedCase, AgreesWithTheTiledVersion) {
  using cpu::testing::tolerances;
  const ConvCase& c = staged_cases()[GetParam()];
  const CaseData& data = case_data(c.desc);
  const Outputs<float> v3 = run_version(c, kernels::kImplicitGemmTiledVersion);
  const Outputs<float> v4 = run_version(c, kernels::kImplicitGemmStagedVersion);
  EXPECT_TRUE(agree(v4.y, v3.y, tolerances<float>(ConvAlgo::im2col_gemm, data.y))) << "forward " << c.name;
  EXPECT_TRUE(agree(v4.dx, v3.dx, tolerances<float>(ConvAlgo::im2col_gemm, data.dx))) << "bwd-data " << c.name;
  EXPECT_TRUE(agree(v4.dw, v3.dw, tolerances<float>(ConvAlgo::im2col_gemm, data.dw))) << "bwd-weights " << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, StagedCase, ::testing::Range<std::size_t>(0, staged_cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return staged_cases()[info.param].name;
                         });

TEST(ImplicitGemmLayer, Version4RunsTheRealLayersItself) {
  for (const ConvCase& c : layers())
    EXPECT_EQ(kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, c.desc,
                                                             kernels::kImplicitGemmStagedVersion),
              "")
        << c.name;
}

// A plane under 32 positions is version 3's: version 4 says why, and the
// algorithm, asked for version 4, runs version 3 and stays right.
TEST(ImplicitGemm, Version4HandsSmallPlanesToVersion3) {
  const Conv2dDesc d = make(2, 4, 6, 6, 5, 3, 3, 1);  // 6x6 = 36 outputs, but stride 2 below
  Conv2dDesc small = d;
  small.stride_h = small.stride_w = 2;  // 3x3 = 9 outputs
  EXPECT_EQ(kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, d, kernels::kImplicitGemmStagedVersion),
            "");
  const std::string why =
      kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, small, kernels::kImplicitGemmStagedVersion);
  EXPECT_NE(why.find("9 positions"), std::string::npos) << why;
  ScopedKernelVersion select(kFamily, kernels::kImplicitGemmStagedVersion);
  expect_passes_match<float>(algo(), ConvAlgo::im2col_gemm, small, "small plane, v4 selected");
  EXPECT_EQ(algo().workspace_bytes(small, DType::float32, ConvPass::backward_data),
            kernels::conv2d_implicit_gemm_workspace_bytes(DType::float32, small, ConvPass::backward_data,
                                                          kernels::kImplicitGemmTiledVersion));
}

// A tensor that is not 16-byte aligned takes the 4-byte copies: offset every
// operand by one float and the passes stay right.
TEST(ImplicitGemm, Version4RunsOnOperandsOffTheSixteenByteGrid) {
  using cpu::testing::all_within;
  using cpu::testing::tolerances;
  const ConvCase& c = staged_cases()[2];  // stride 2, padding
  const Conv2dDesc& d = c.desc;
  const CaseData& data = case_data(d);
  const auto shifted = [](const std::vector<double>& v) {
    std::vector<double> s(v.size() + 1, 0.0);
    std::copy(v.begin(), v.end(), s.begin() + 1);
    return device_tensor<float>(s);
  };
  const Tensor x = shifted(data.in.x), w = shifted(data.in.w), b = shifted(data.in.b), dy = shifted(data.in.dy);
  const auto at1 = [](const Tensor& t) { return static_cast<float*>(t.raw_data()) + 1; };
  const int v = kernels::kImplicitGemmStagedVersion;
  const Tensor y = garbage<float>(static_cast<std::int64_t>(data.y.value.size()) + 1);
  kernels::launch_conv2d_implicit_gemm_forward(DType::float32, d, at1(x), at1(w), at1(b), at1(y), v);
  std::vector<float> got = y.to_vector<float>();
  got.erase(got.begin());
  EXPECT_TRUE(all_within(got, data.y.value, tolerances<float>(ConvAlgo::im2col_gemm, data.y))) << "forward";
  const std::size_t bytes = kernels::conv2d_implicit_gemm_workspace_bytes(DType::float32, d, ConvPass::backward_data, v);
  const Tensor ws = empty({static_cast<std::int64_t>(bytes / 4 + 2)}, TensorOptions().device(kernel_device()));
  const Tensor dx = garbage<float>(static_cast<std::int64_t>(data.dx.value.size()) + 1);
  kernels::launch_conv2d_implicit_gemm_backward_data(DType::float32, d, at1(dy), at1(w), at1(dx), at1(ws), v);
  got = dx.to_vector<float>();
  got.erase(got.begin());
  EXPECT_TRUE(all_within(got, data.dx.value, tolerances<float>(ConvAlgo::im2col_gemm, data.dx))) << "bwd-data";
}

// A missing barrier can hide under one thread order.
#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(ImplicitGemm, TiledVersionIsRightUnderOtherThreadOrders) {
  for (const char* order : {"reverse", "random:11"}) {
    sim::ScopedSchedule schedule(sim::Schedule::parse(order));
    for (const char* name : {"tiles_70x19_odd", "groups2_stride2_dilation2", "split_k_2", "stride_dilation_groups"})
      for (const ConvCase& c : cases())
        if (c.name == name) expect_matches_reference<float>(c, kernels::kImplicitGemmTiledVersion);
    for (const ConvCase& c : staged_cases()) {
      expect_matches_reference<float>(c, kernels::kImplicitGemmStagedVersion);
      expect_matches_reference<float>(c, kernels::kImplicitGemmPipelinedVersion);
    }
  }
}
#endif

// Strided backward-data runs one product per stride phase; launched directly
// here too, on every strided case (phases that no tap reaches included: 1x1
// at stride 2, dilation 2 at stride 2), so the launcher's phase loop is
// checked without the algorithm around it.
TEST(ImplicitGemm, StridedBackwardDataKernelsMatchTheReference) {
  using cpu::testing::all_within;
  using cpu::testing::tolerances;
  std::vector<ConvCase> all = cases();
  all.insert(all.end(), staged_cases().begin(), staged_cases().end());
  for (const ConvCase& c : all) {
    const Conv2dDesc& d = c.desc;
    if (d.stride_h == 1 && d.stride_w == 1) continue;
    const CaseData& data = case_data(d);
    for (int version : {kernels::kImplicitGemmSimpleVersion, kernels::kImplicitGemmTiledVersion,
                        kernels::kImplicitGemmStagedVersion, kernels::kImplicitGemmPipelinedVersion}) {
      if (version >= kernels::kImplicitGemmStagedVersion &&
          !kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, d, version).empty())
        continue;
      const std::size_t bytes =
          kernels::conv2d_implicit_gemm_workspace_bytes(DType::float32, d, ConvPass::backward_data, version);
      // Workspace full of NaN: a kernel must not let stale workspace reach dx
      // (version 4 once multiplied the NaN past a stride phase's filter slice
      // by B's zeros, and failed only when reused memory happened to be NaN).
      const Tensor ws = bytes > 0 ? full(Shape{static_cast<std::int64_t>((bytes + 3) / 4)},
                                         std::numeric_limits<double>::quiet_NaN(),
                                         TensorOptions().device(kernel_device()))
                                  : Tensor();
      const Tensor dy = device_tensor<float>(data.in.dy), w = device_tensor<float>(data.in.w);
      const Tensor dx = garbage<float>(x_size(d));
      kernels::launch_conv2d_implicit_gemm_backward_data(DType::float32, d, dy.raw_data(), w.raw_data(),
                                                         dx.raw_data(), ws.defined() ? ws.raw_data() : nullptr,
                                                         version);
      EXPECT_TRUE(all_within(dx.to_vector<float>(), data.dx.value, tolerances<float>(ConvAlgo::im2col_gemm, data.dx)))
          << c.name << " v" << version;
    }
  }
}

// The split of backward-weights is fixed by the descriptor: two runs (and a
// run under another thread order) give the same bits.
TEST(ImplicitGemm, SplitKBackwardWeightsIsDeterministic) {
  const ConvCase* split = nullptr;
  for (const ConvCase& c : cases())
    if (c.name == "split_k_4_groups") split = &c;
  ASSERT_NE(split, nullptr);
  ASSERT_EQ(kernels::conv2d_implicit_gemm_weight_slices(DType::float32, split->desc, kernels::kImplicitGemmTiledVersion), 4);
  ScopedKernelVersion select(kFamily, kernels::kImplicitGemmTiledVersion);
  const Outputs<float> first = run_passes<float>(algo(), split->desc, case_data(split->desc).in);
  const Outputs<float> second = run_passes<float>(algo(), split->desc, case_data(split->desc).in);
  EXPECT_EQ(first.dw, second.dw);
#if !defined(__CUDACC__)
  sim::ScopedSchedule schedule(sim::Schedule::parse("random:5"));
  EXPECT_EQ(run_passes<float>(algo(), split->desc, case_data(split->desc).in).dw, first.dw);
#endif
}

TEST(ImplicitGemm, Version4SplitKBackwardWeightsIsDeterministic) {
  const ConvCase& split = staged_cases().back();
  ASSERT_EQ(split.name, "staged_split_k_4_groups");
  ASSERT_EQ(kernels::conv2d_implicit_gemm_weight_slices(DType::float32, split.desc,
                                                        kernels::kImplicitGemmStagedVersion),
            4);
  const Outputs<float> first = run_version(split, kernels::kImplicitGemmStagedVersion);
  EXPECT_EQ(run_version(split, kernels::kImplicitGemmStagedVersion).dw, first.dw);
#if !defined(__CUDACC__)
  sim::ScopedSchedule schedule(sim::Schedule::parse("random:5"));
  EXPECT_EQ(run_version(split, kernels::kImplicitGemmStagedVersion).dw, first.dw);
#endif
}

// No column matrix: forward needs nothing, backward-data the transposed
// filter, backward-weights its split-K partials; a tight limit drops both
// and the passes stay right.
TEST(ImplicitGemm, WorkspaceIsOnlyTheFilterOrTheSplitKPartials) {
  ScopedKernelVersion select(kFamily, kernels::kImplicitGemmTiledVersion);
  Conv2dDesc d = make(2, 4, 32, 32, 6, 3, 3, 1, 1, 2);
  const std::size_t filter = static_cast<std::size_t>(6 * 2 * 3 * 3) * sizeof(float);
  EXPECT_EQ(algo().workspace_bytes(d, DType::float32, ConvPass::forward), 0u);
  EXPECT_EQ(algo().workspace_bytes(d, DType::float32, ConvPass::backward_data), filter);
  EXPECT_EQ(algo().workspace_bytes(d, DType::float32, ConvPass::backward_weights), 4 * filter);
  d.workspace_limit = filter - 1;
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    EXPECT_EQ(algo().workspace_bytes(d, DType::float32, pass), 0u) << conv_pass_name(pass);
  expect_passes_match<float>(algo(), ConvAlgo::im2col_gemm, d, "no workspace");
  d.workspace_limit = 2 * filter;  // two slices fit, four do not
  EXPECT_EQ(kernels::conv2d_implicit_gemm_weight_slices(DType::float32, d, kernels::kImplicitGemmTiledVersion), 2);
  expect_passes_match<float>(algo(), ConvAlgo::im2col_gemm, d, "two slices");
}

// What the implicit kernels cannot index runs the explicit path.
TEST(ImplicitGemm, DescriptorsPast32BitIndicesRunTheExplicitPath) {
  Conv2dDesc d = make(1 << 16, 64, 32, 32, 64, 3, 3, 1);  // x has 2^32 elements
  const std::string why =
      kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, d, kernels::kImplicitGemmTiledVersion);
  EXPECT_NE(why.find("32 bits"), std::string::npos) << why;
  std::size_t explicit_bytes = 0;
  {
    ScopedKernelVersion select(kFamily, kernels::kImplicitGemmExplicitVersion);
    explicit_bytes = algo().workspace_bytes(d, DType::float32, ConvPass::forward);
  }
  EXPECT_GT(explicit_bytes, 0u);
  EXPECT_EQ(algo().workspace_bytes(d, DType::float32, ConvPass::forward), explicit_bytes);
}

TEST(ImplicitGemm, BadArgumentsNameTheProblem) {
  const Conv2dDesc d = make(1, 2, 5, 5, 2, 3, 3, 0);
  EXPECT_NE(kernels::conv2d_implicit_gemm_cannot_implement(DType::int64, d, 3).find("int64"), std::string::npos);
  EXPECT_NE(kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, d, 1).find("not an implicit"),
            std::string::npos);
  try {
    kernels::launch_conv2d_implicit_gemm_forward(DType::float32, d, nullptr, nullptr, nullptr, nullptr, 3);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("null"), std::string::npos) << e.what();
  }
}

// Through the op and autograd: conv2d's gradients of input, weight and bias
// under every version pass gradcheck (float64) on the kernel device.
TEST(ImplicitGemm, GradientsPassGradcheckThroughTheOp) {
  std::mt19937_64 rng(convkit::testing::kSeed + 1800);
  const TensorOptions o = TensorOptions().dtype(DType::float64).device(kernel_device()).requires_grad();
  const Tensor x = convkit::testing::random_tensor({1, 4, 7, 6}, rng, o);
  const Tensor w = convkit::testing::random_tensor({6, 2, 3, 3}, rng, o);
  const Tensor b = convkit::testing::random_tensor({6}, rng, o);
  const Conv2dParams p = Conv2dParams().groups(2).stride(2).padding(1).dilation(2).algo(ConvAlgo::im2col_gemm);
  for (int version : {1, 2, 3, 4}) {
    ScopedKernelVersion select(kFamily, version);
    EXPECT_TRUE(convkit::testing::grad_ok(
        [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], p); }, {x, w, b}))
        << "v" << version;
  }
}

// The shape above is version 3's (a 2x2 output plane); this one version 4 runs.
TEST(ImplicitGemm, GradientsPassGradcheckThroughTheOpInVersion4) {
  std::mt19937_64 rng(convkit::testing::kSeed + 1801);
  const TensorOptions o = TensorOptions().dtype(DType::float64).device(kernel_device()).requires_grad();
  const Tensor x = convkit::testing::random_tensor({1, 4, 9, 8}, rng, o);
  const Tensor w = convkit::testing::random_tensor({6, 2, 3, 3}, rng, o);
  const Tensor b = convkit::testing::random_tensor({6}, rng, o);
  const Conv2dParams p = Conv2dParams().groups(2).stride(1).padding(1).algo(ConvAlgo::im2col_gemm);
  ASSERT_EQ(kernels::conv2d_implicit_gemm_cannot_implement(DType::float64, make(1, 4, 9, 8, 6, 3, 3, 1, 1, 2),
                                                           kernels::kImplicitGemmStagedVersion),
            "");
  ScopedKernelVersion select(kFamily, kernels::kImplicitGemmStagedVersion);
  EXPECT_TRUE(convkit::testing::grad_ok(
      [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], p); }, {x, w, b}));
}

// ---- Version 5 (pipelined).

// Its three tiles: a 17-image 32x32 batch gives forward 272 tiles of 64x64
// (the wide tile, at 264 or more), backward-data (M = 3) 32x64 tiles;
// tiles_70x19_odd above runs 64x32. Against the reference and version 3,
// in both dtypes.
TEST(ImplicitGemmPipelined, EveryTileMatchesTheReferenceAndVersion3) {
  using cpu::testing::tolerances;
  const ConvCase c{"pipelined_wide_17_images", make(17, 3, 32, 32, 64, 3, 3, 1)};
  expect_matches_reference<float>(c, kernels::kImplicitGemmPipelinedVersion);
  expect_matches_reference<double>(c, kernels::kImplicitGemmPipelinedVersion);
  const CaseData& data = case_data(c.desc);
  const Outputs<float> v3 = run_version(c, kernels::kImplicitGemmTiledVersion);
  const Outputs<float> v5 = run_version(c, kernels::kImplicitGemmPipelinedVersion);
  EXPECT_TRUE(agree(v5.y, v3.y, tolerances<float>(ConvAlgo::im2col_gemm, data.y))) << "forward";
  EXPECT_TRUE(agree(v5.dx, v3.dx, tolerances<float>(ConvAlgo::im2col_gemm, data.dx))) << "bwd-data";
  EXPECT_TRUE(agree(v5.dw, v3.dw, tolerances<float>(ConvAlgo::im2col_gemm, data.dw))) << "bwd-weights";
}

// Split-K slices are fixed by the descriptor: the same bits on every run.
TEST(ImplicitGemmPipelined, SplitKBackwardWeightsIsDeterministic) {
  const ConvCase& split = staged_cases().back();
  ASSERT_EQ(kernels::conv2d_implicit_gemm_weight_slices(DType::float32, split.desc,
                                                        kernels::kImplicitGemmPipelinedVersion),
            4);
  const Outputs<float> first = run_version(split, kernels::kImplicitGemmPipelinedVersion);
  EXPECT_EQ(run_version(split, kernels::kImplicitGemmPipelinedVersion).dw, first.dw);
#if !defined(__CUDACC__)
  sim::ScopedSchedule schedule(sim::Schedule::parse("random:5"));
  EXPECT_EQ(run_version(split, kernels::kImplicitGemmPipelinedVersion).dw, first.dw);
#endif
}

// A first layer's small filter gradient over a long K: version 5 cuts it
// into more slices than version 3's 32 (here 64), and stays right.
TEST(ImplicitGemmPipelined, CutsASmallFilterGradientIntoManySlices) {
  const ConvCase c{"pipelined_64_slices", make(2, 3, 128, 128, 4, 3, 3, 1)};
  EXPECT_EQ(kernels::conv2d_implicit_gemm_weight_slices(DType::float32, c.desc, kernels::kImplicitGemmTiledVersion),
            32);
  EXPECT_EQ(
      kernels::conv2d_implicit_gemm_weight_slices(DType::float32, c.desc, kernels::kImplicitGemmPipelinedVersion),
      64);
  expect_matches_reference<float>(c, kernels::kImplicitGemmPipelinedVersion);
}

// Without room for backward-data's transposed filter version 5 says why, and
// the algorithm, asked for it, runs version 3 and stays right.
TEST(ImplicitGemmPipelined, HandsATightWorkspaceToVersion3) {
  Conv2dDesc d = make(2, 6, 13, 15, 20, 3, 3, 1, 2);
  d.workspace_limit = 64;  // bytes: the filter is 20*6*9 floats
  const std::string why =
      kernels::conv2d_implicit_gemm_cannot_implement(DType::float32, d, kernels::kImplicitGemmPipelinedVersion);
  EXPECT_NE(why.find("transposed filter"), std::string::npos) << why;
  ScopedKernelVersion select(kFamily, kernels::kImplicitGemmPipelinedVersion);
  expect_passes_match<float>(algo(), ConvAlgo::im2col_gemm, d, "tight workspace, v5 selected");
}

}  // namespace
}  // namespace convkit::gpu_testing
