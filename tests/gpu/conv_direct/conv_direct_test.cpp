// The GPU direct convolution (kernels/conv2d_direct.cu) under sim (and cuda, in the nvcc build): every
// version, every pass, float32 and float64, on tests/cpu/conv's descriptors
// (odd sizes, batch 1, stride, asymmetric padding, dilation, groups, C or K = 1,
// 1x1 to 11x11 filters) plus a few that give v2 and v3 several channel chunks,
// channel blocks and tiles, and two real layers; against the float64 reference
// and against v1.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_conv_testing.h"
#include "kernels/conv2d_direct.cuh"
#include "kernels/conv2d_direct_register_tiled.cuh"

namespace convkit::gpu_testing {
namespace {

using cpu::testing::ConvCase;

// The family must be registered before a test selects one of its versions.
class RegisterDirectFamily : public ::testing::Environment {
 public:
  void SetUp() override { kernels::conv2d_direct_version(); }
};
[[maybe_unused]] const ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new RegisterDirectFamily);

Conv2dDesc make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t R,
                std::int64_t S, std::int64_t pad, std::int64_t stride = 1, std::int64_t groups = 1) {
  Conv2dDesc d;
  d.N = N, d.C = C, d.H = H, d.W = W, d.K = K, d.R = R, d.S = S;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  d.stride_h = d.stride_w = stride;
  d.groups = groups;
  return d;
}

// tests/cpu/conv's cases, and cases whose channel counts exceed v2's chunks
// and blocks (8 channels) and whose outputs span several 8x16 tiles.
const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = [] {
    std::vector<ConvCase> c;
    // The "parallel_" cases are sized to cross the CPU's threading threshold;
    // the GPU's several-blocks cases are the ones below.
    for (const ConvCase& k : cpu::testing::conv_cases())
      if (k.name.rfind("parallel_", 0) != 0) c.push_back(k);
    c.push_back({"many_channels_3x3", make(1, 19, 11, 37, 17, 3, 3, 1)});
    c.push_back({"many_channels_groups_5x5_stride2", make(2, 18, 13, 21, 20, 5, 5, 2, 2, 2)});
    c.push_back({"many_channels_1x1", make(2, 33, 5, 9, 40, 1, 1, 0)});
    c.push_back({"large_image_7x7", make(1, 3, 23, 41, 10, 7, 7, 3)});
    // v3: output channels over three blocks of 32 (the last partial), and
    // channel counts off multiples of 8 with dilation 2 and groups.
    c.push_back({"many_channels_over_32", make(1, 40, 7, 9, 70, 3, 3, 1)});
    Conv2dDesc dilated = make(2, 12, 9, 13, 20, 3, 3, 2, 1, 2);
    dilated.dilation_h = dilated.dilation_w = 2;
    c.push_back({"many_channels_dilation2_groups", dilated});
    // v4: few filters over many pixel tiles, so backward-weights splits the
    // pixels into slices (GpuConvDirect.Version4SplitsSmallFilterBanks).
    c.push_back({"split_pixels_3x3", make(6, 3, 20, 30, 8, 3, 3, 1)});
    c.push_back({"split_pixels_5x5_stride2_groups", make(5, 4, 33, 29, 6, 5, 5, 2, 2, 2)});
    return c;
  }();
  return all;
}

// Real layers at batch 1 (benchmarks/layer_sets.txt): cifar10-cnn conv4 and
// resnet18-cifar layer2 (a 16x16 plane: v3's 128-pixel tile spans 8 rows).
const std::vector<ConvCase>& real_layers() {
  static const std::vector<ConvCase> all = [] {
    std::vector<ConvCase> c;
    c.push_back({"cifar10_cnn_conv4", make(1, 64, 15, 15, 64, 3, 3, 0)});
    c.push_back({"resnet18_cifar_layer2", make(1, 128, 16, 16, 128, 3, 3, 1)});
    // cifar10-cnn conv1 (3 to 32, 32 x 32), whose backward-weights is one
    // block in v3, at batch 4: v4 splits it into 8 slices.
    c.push_back({"cifar10_cnn_conv1_n4", make(4, 3, 32, 32, 32, 3, 3, 1)});
    return c;
  }();
  return all;
}

const conv::ConvAlgorithm& direct() { return kernels::direct_gpu_conv_algorithm(); }

template <typename T>
void expect_matches_reference(const ConvCase& c, int version) {
  ScopedKernelVersion select("conv2d_direct", version);
  expect_passes_match<T>(direct(), ConvAlgo::direct, c.desc, c.name + " v" + std::to_string(version));
}

class DirectCase : public ::testing::TestWithParam<std::tuple<std::size_t, int>> {};

TEST_P(DirectCase, EveryPassMatchesTheFloat64Reference) {
  const auto [index, version] = GetParam();
  expect_matches_reference<float>(cases()[index], version);
  expect_matches_reference<double>(cases()[index], version);
}

// Later versions against v1 in float32, where different summation orders show.
class DirectVersusV1 : public ::testing::TestWithParam<std::tuple<std::size_t, int>> {};

TEST_P(DirectVersusV1, AgreesWithVersion1) {
  const auto [index, version] = GetParam();
  expect_agrees_with_v1(direct(), ConvAlgo::direct, "conv2d_direct", version, cases()[index].desc,
                        cases()[index].name + " v" + std::to_string(version));
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<std::size_t, int>>& info) {
  return cases()[std::get<0>(info.param)].name + "_v" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Cases, DirectCase,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()),
                                            ::testing::Values(1, 2, 3, 4, 5)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Cases, DirectVersusV1,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(2, 3, 4, 5)),
                         case_name);

// v3 against the float64 reference and against v1, in float32.
class DirectRealLayer : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DirectRealLayer, Versions3To5MatchTheReferenceAndVersion1) {
  const ConvCase& c = real_layers()[GetParam()];
  for (int version : {3, 4, 5}) {
    expect_matches_reference<float>(c, version);
    expect_agrees_with_v1(direct(), ConvAlgo::direct, "conv2d_direct", version, c.desc,
                          c.name + " v" + std::to_string(version));
  }
}

INSTANTIATE_TEST_SUITE_P(RealLayers, DirectRealLayer, ::testing::Range<std::size_t>(0, real_layers().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) { return real_layers()[info.param].name; });

// The cases above test v3's own kernels, not v2's under its number: the
// forward and backward-weights of every case and backward-data at stride 1
// run v3's kernels.
TEST(GpuConvDirect, Version3RunsItsOwnKernelWhereItShould) {
  for (const ConvCase& c : cases()) {
    const kernels::ConvGeometry g = kernels::conv_geometry(c.desc);
    EXPECT_EQ(kernels::direct_register_tiled_forward_cannot(g, DType::float32), "") << c.name;
    EXPECT_EQ(kernels::direct_register_tiled_forward_cannot(g, DType::float64), "") << c.name;
    EXPECT_EQ(kernels::direct_register_tiled_backward_weights_cannot(g, DType::float32), "") << c.name;
    EXPECT_EQ(kernels::direct_register_tiled_backward_weights_cannot(g, DType::float64), "") << c.name;
    const std::string why = kernels::direct_register_tiled_backward_data_cannot(g, DType::float64);
    if (c.desc.stride_h == 1 && c.desc.stride_w == 1) {
      EXPECT_EQ(why, "") << c.name;
    } else {
      EXPECT_NE(why.find("stride"), std::string::npos) << c.name << ": " << why;
    }
  }
}

// Version 5's backward-data kernel runs the narrow cases (at most 4 input
// channels per group, any stride, dilation and padding) and computes v1's
// sum in v1's order: its dx is v1's to the bit, in float32 and float64. The
// other passes, and backward-data of wider groups, are version 4's to the bit.
TEST(GpuConvDirect, Version5sNarrowBackwardDataIsVersion1sToTheBit) {
  int narrow = 0;
  for (const ConvCase& c : cases()) {
    const kernels::ConvGeometry g = kernels::conv_geometry(c.desc);
    const std::string why = kernels::direct_narrow_backward_data_cannot(g, DType::float64);
    if (c.desc.C_per_group() > 4) {
      EXPECT_NE(why.find("input channels"), std::string::npos) << c.name << ": " << why;
      continue;
    }
    EXPECT_EQ(why, "") << c.name;
    ASSERT_TRUE(kernels::conv2d_direct_can_implement(5, g, DType::float64, nullptr)) << c.name;  // else v1 runs
    ++narrow;
    const Inputs& in = case_data(c.desc).in;
    auto run = [&]<typename T>(int version, T) {
      ScopedKernelVersion select("conv2d_direct", version);
      return run_passes<T>(direct(), c.desc, in);
    };
    EXPECT_EQ(run(5, 0.0f).dx, run(1, 0.0f).dx) << c.name;
    EXPECT_EQ(run(5, 0.0).dx, run(1, 0.0).dx) << c.name;
  }
  EXPECT_GE(narrow, 10);  // the sweep's narrow cases, with stride, dilation, groups and padding
}

TEST(GpuConvDirect, Version5IsVersion4OutsideNarrowBackwardData) {
  int found = 0;
  for (const char* name : {"many_channels_3x3", "many_channels_groups_5x5_stride2", "split_pixels_3x3"})
    for (const ConvCase& c : cases()) {
      if (c.name != name) continue;
      ++found;
      const Inputs& in = case_data(c.desc).in;
      auto run = [&](int version) {
        ScopedKernelVersion select("conv2d_direct", version);
        return run_passes<float>(direct(), c.desc, in);
      };
      const Outputs<float> v4 = run(4), v5 = run(5);
      EXPECT_EQ(v5.y, v4.y) << c.name;
      EXPECT_EQ(v5.dw, v4.dw) << c.name;
      if (c.desc.C_per_group() > 4) {
        EXPECT_EQ(v5.dx, v4.dx) << c.name;
      }
    }
  EXPECT_EQ(found, 3);
}

// The first layers of the benchmark sets (3 input channels) at batch 2, and
// a group of 4 channels with dilation, stride 2 and 5x5 taps.
TEST(GpuConvDirect, Version5sNarrowBackwardDataMatchesTheReferenceOnFirstLayers) {
  Conv2dDesc strided = make(2, 8, 17, 15, 6, 5, 5, 2, 2, 2);
  strided.dilation_h = 2;
  for (const ConvCase& c : {ConvCase{"resnet18_cifar_conv1_n2", make(2, 3, 32, 32, 64, 3, 3, 1)},
                            ConvCase{"cifar10_cnn_conv1_n2", make(2, 3, 32, 32, 32, 3, 3, 1)},
                            ConvCase{"groups_of_4_dilated_stride2", strided}}) {
    ASSERT_EQ(kernels::direct_narrow_backward_data_cannot(kernels::conv_geometry(c.desc), DType::float32), "")
        << c.name;
    expect_matches_reference<float>(c, 5);
    expect_matches_reference<double>(c, 5);
  }
}

TEST(GpuConvDirect, Version5NamesWhyItsNarrowKernelCannotRun) {
  Conv2dDesc big = make(1, 3, 8, 8, 2000, 3, 3, 1);  // 2000 filters of 9 taps: 288 KB of staged taps
  EXPECT_NE(kernels::direct_narrow_backward_data_cannot(kernels::conv_geometry(big), DType::float32)
                .find("shared memory"),
            std::string::npos);
  expect_matches_reference<float>(ConvCase{"narrow_but_many_filters", big}, 5);  // v4's backward-data
}

// A plane too wide for v3's whole-row patch: version 3 runs v2's kernels.
// (A filter of more than 256 taps does so for backward-weights.)
TEST(GpuConvDirect, Version3FallsBackToVersion2OnAWideImage) {
  const Conv2dDesc d = make(1, 2, 3, 4000, 3, 3, 3, 1);
  const kernels::ConvGeometry g = kernels::conv_geometry(d);
  const std::string why = kernels::direct_register_tiled_forward_cannot(g, DType::float32);
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  EXPECT_NE(kernels::direct_register_tiled_backward_data_cannot(g, DType::float32).find("shared memory"),
            std::string::npos);
  EXPECT_NE(kernels::direct_register_tiled_backward_weights_cannot(g, DType::float32).find("shared memory"),
            std::string::npos);
  EXPECT_TRUE(kernels::conv2d_direct_can_implement(3, g, DType::float32, nullptr));
  const TensorOptions on_device = TensorOptions().device(kernel_device());
  const Tensor x = ones({x_size(d)}, on_device), w = ones({w_size(d)}, on_device);
  const Tensor y = empty({y_size(d)}, on_device);
  try {
    kernels::launch_direct_register_tiled_forward(DType::float32, g, x.raw_data(), w.raw_data(), nullptr,
                                                  y.raw_data());
    ADD_FAILURE() << "v3's kernel launched a descriptor it cannot implement";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }
  expect_matches_reference<float>(ConvCase{"wide_image", d}, 3);  // runs v2
}

// v4 splits backward-weights where the filters are few and the pixels many:
// the split cases and the first real layer at batch 4 take several slices,
// and their workspace is the slices' partial dw; where the blocks already
// fill the GPU (resnet18-cifar layer2's 128 x 128 filters) there is one.
TEST(GpuConvDirect, Version4SplitsSmallFilterBanks) {
  ScopedKernelVersion select("conv2d_direct", 4);
  std::vector<ConvCase> split = real_layers();
  for (const ConvCase& c : cases())
    if (c.name.rfind("split_pixels", 0) == 0) split.push_back(c);
  for (const ConvCase& c : split) {
    const kernels::ConvGeometry g = kernels::conv_geometry(c.desc);
    for (DType dtype : {DType::float32, DType::float64}) {
      const kernels::DirectWeightSplit s = kernels::direct_weight_split(g, dtype, c.desc.workspace_limit);
      const std::size_t bytes = direct().workspace_bytes(c.desc, dtype, ConvPass::backward_weights);
      if (c.name == "resnet18_cifar_layer2" || c.name == "cifar10_cnn_conv4") {
        EXPECT_EQ(s.slices, 1) << c.name;
        EXPECT_EQ(bytes, 0u) << c.name;
        continue;
      }
      EXPECT_GT(s.slices, 1) << c.name;
      EXPECT_EQ(bytes, static_cast<std::size_t>(s.slices) * w_size(c.desc) * dtype_size(dtype)) << c.name;
      EXPECT_GE(s.units_per_slice, 4) << c.name;
    }
  }
}

// The split changes only the order of dw's sums: with no workspace allowed
// v4 is v3 bit for bit, with a workspace it is the same bits on every run and
// under every thread order, and a workspace_limit caps the slices.
TEST(GpuConvDirect, Version4IsDeterministicAndVersion3WithoutWorkspace) {
  Conv2dDesc d = make(6, 3, 20, 30, 8, 3, 3, 1);  // split_pixels_3x3
  const CaseData& data = case_data(d);
  auto dw_of = [&](int version, const Conv2dDesc& desc) {
    ScopedKernelVersion select("conv2d_direct", version);
    return run_passes<float>(direct(), desc, data.in).dw;
  };
  Conv2dDesc no_workspace = d;
  no_workspace.workspace_limit = 0;
  EXPECT_EQ(direct().workspace_bytes(no_workspace, DType::float32, ConvPass::backward_weights), 0u);
  EXPECT_EQ(dw_of(4, no_workspace), dw_of(3, d));
  const std::vector<float> split = dw_of(4, d);
  EXPECT_NE(split, dw_of(3, d)) << "the split should change the summation order";
  EXPECT_EQ(dw_of(4, d), split);
#if !defined(__CUDACC__)  // thread orders are sim's to choose
  for (const char* order : {"reverse", "random:3"}) {
    sim::ScopedSchedule schedule(sim::Schedule::parse(order));
    EXPECT_EQ(dw_of(4, d), split) << order;
  }
#endif
  const std::size_t per_slice = static_cast<std::size_t>(w_size(d)) * sizeof(float);
  Conv2dDesc capped = d;
  capped.workspace_limit = 3 * per_slice + per_slice / 2;
  const kernels::DirectWeightSplit s = kernels::direct_weight_split(kernels::conv_geometry(capped), DType::float32,
                                                                    capped.workspace_limit);
  EXPECT_GT(s.slices, 1);
  EXPECT_LE(s.slices, 3);
  EXPECT_LE(direct().workspace_bytes(capped, DType::float32, ConvPass::backward_weights), capped.workspace_limit);
  expect_matches_reference<float>(ConvCase{"split_pixels_capped", capped}, 4);
}

// A missing barrier can hide under one thread order; v2's and v3's tiles must
// be right under every order the emulator offers.
#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(GpuConvDirect, TiledVersionsAreRightUnderEveryThreadOrder) {
  for (const char* order : {"reverse", "random:11"}) {
    sim::ScopedSchedule schedule(sim::Schedule::parse(order));
    for (const char* name : {"many_channels_groups_5x5_stride2", "stride_dilation_groups", "kernel7x7",
                             "many_channels_dilation2_groups", "split_pixels_5x5_stride2_groups"}) {
      for (const ConvCase& c : cases())
        if (c.name == name) {
          expect_matches_reference<float>(c, 2);
          expect_matches_reference<float>(c, 3);
          expect_matches_reference<float>(c, 4);
        }
    }
  }
}
#endif

TEST(GpuConvDirect, EveryValidDescriptorIsSupportedWithoutWorkspaceUpToVersion3) {
  ScopedKernelVersion select("conv2d_direct", 3);
  for (const ConvCase& c : cases()) {
    EXPECT_TRUE(direct().supports(c.desc)) << c.name;
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
      EXPECT_EQ(direct().workspace_bytes(c.desc, DType::float32, pass), 0u) << c.name;
  }
  Conv2dDesc bad = make(1, 3, 5, 5, 2, 7, 7, 0);  // filter larger than the image
  const Support s = direct().supports(bad);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("conv2d"), std::string::npos) << s.reason;
}

// Where v2's tiles cannot fit in shared memory its launcher says so, and the
// algorithm runs v1 instead, so direct still supports the descriptor.
TEST(GpuConvDirect, HugeDilationFallsBackToVersion1) {
  Conv2dDesc d = make(1, 2, 260, 250, 2, 3, 3, 0);
  d.dilation_h = d.dilation_w = 120;  // a 248 x 256 input patch per channel
  const kernels::ConvGeometry g = kernels::conv_geometry(d);
  std::string why;
  EXPECT_FALSE(kernels::conv2d_direct_can_implement(2, g, DType::float32, &why));
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  const TensorOptions on_device = TensorOptions().device(kernel_device());
  const Tensor x = ones({x_size(d)}, on_device), w = ones({w_size(d)}, on_device);
  const Tensor y = empty({y_size(d)}, on_device);
  try {
    kernels::launch_conv2d_direct_forward(2, DType::float32, g, x.raw_data(), w.raw_data(), nullptr, y.raw_data());
    ADD_FAILURE() << "v2 launched a descriptor it cannot implement";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }
  expect_matches_reference<float>(ConvCase{"huge_dilation", d}, 2);  // runs v1
}

TEST(GpuConvDirect, NonFloatingDtypeIsRejectedByName) {
  const kernels::ConvGeometry g = kernels::conv_geometry(make(1, 1, 3, 3, 1, 1, 1, 0));
  std::string why;
  EXPECT_FALSE(kernels::conv2d_direct_can_implement(1, g, DType::int64, &why));
  EXPECT_NE(why.find("int64"), std::string::npos) << why;
  EXPECT_FALSE(kernels::conv2d_direct_can_implement(6, g, DType::float32, &why));
  EXPECT_NE(why.find("version 6"), std::string::npos) << why;
}

}  // namespace
}  // namespace convkit::gpu_testing
