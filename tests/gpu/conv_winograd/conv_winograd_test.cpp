// The GPU Winograd convolution (kernels/conv2d_winograd.cu) under sim (and
// cuda, in the nvcc build): every pass of every version, with the output tile
// chosen per pass and forced to F(2x2) and to F(4x4), on the 3x3 stride-1
// undilated descriptors of tests/cpu/conv and on shapes that cut tiles at the
// plane's edge (odd sizes, padding 0 to 3, batch 1, channel counts that are
// no multiple of a GEMM tile, groups, one cifar10-cnn layer), against the
// float64 reference with the cpu Winograd's tolerance; v2 and v3 against v1;
// v3 against v2 to the bit (its rows in vector accesses, its halo by warp
// shuffles, on rows a multiple of 4 wide, wider than a warp's tiles, and cut
// by chunks); chunked batches; the errors. Below the highest float32 precision: v2's products on
// the tensor cores in tf32 (at high and medium alike), within the same model
// with tf32's operand bound, while v1 and float64 stay strict to the bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "convkit/backend/precision.h"
#include "convkit/sim/schedule.h"
#include "cpu/conv/implementations.h"
#include "gpu/gpu_conv_testing.h"
#include "gpu/tensor_core_tolerance.h"
#include "kernels/conv2d_winograd.cuh"

namespace convkit::gpu_testing {
namespace {

using cpu::testing::ConvCase;

class RegisterWinogradFamily : public ::testing::Environment {
 public:
  void SetUp() override { kernels::conv2d_winograd_version(); }
};
[[maybe_unused]] const ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new RegisterWinogradFamily);

Conv2dDesc make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t pad,
                std::int64_t groups = 1) {
  Conv2dDesc d;
  d.N = N, d.C = C, d.H = H, d.W = W, d.K = K, d.R = 3, d.S = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  d.groups = groups;
  return d;
}

const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> all = [] {
    std::vector<ConvCase> c;
    for (const ConvCase& k : cpu::testing::conv_cases()) {
      const Conv2dDesc& d = k.desc;
      if (d.R == 3 && d.S == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 && d.dilation_w == 1 &&
          k.name.rfind("parallel_", 0) != 0)
        c.push_back(k);
    }
    c.push_back({"odd_7x9_pad0", make(2, 3, 7, 9, 5, 0)});
    c.push_back({"odd_11x5_pad1", make(1, 5, 11, 5, 3, 1)});
    c.push_back({"pad2_batch1", make(1, 2, 6, 7, 3, 2)});
    c.push_back({"f4_edges_13x14", make(2, 7, 13, 14, 9, 1)});  // 13 and 14 leave partial F(4x4) tiles
    c.push_back({"channels_33_to_35", make(1, 33, 5, 6, 35, 1)});
    c.push_back({"groups_3", make(2, 6, 9, 8, 9, 1, 3)});
    c.push_back({"cifar10_cnn_conv3_batch1", make(1, 32, 15, 15, 64, 1)});
    // v3's paths: rows a multiple of 4 wide (16-byte row accesses), tile rows
    // wider than a warp (35 F(4x4) tiles: warps start and end mid-row), and
    // padding 3 (off_w outside 0..2: v1's input transform).
    c.push_back({"aligned_16x16", make(2, 4, 16, 16, 5, 1)});
    c.push_back({"wide_6x140", make(1, 2, 6, 140, 3, 1)});
    c.push_back({"pad3", make(1, 2, 5, 6, 3, 3)});
    return c;
  }();
  return all;
}

const conv::ConvAlgorithm& winograd(int tile) { return kernels::winograd_gpu_conv_algorithm_with(tile); }

template <typename T>
void expect_matches_reference(const ConvCase& c, int version, int tile) {
  ScopedKernelVersion select("conv2d_winograd", version);
  expect_passes_match<T>(winograd(tile), ConvAlgo::winograd, c.desc,
                         c.name + " v" + std::to_string(version) + " tile " + std::to_string(tile));
}

using Param = std::tuple<std::size_t, int, int>;  // case, version, tile (0: per pass)

class WinogradCase : public ::testing::TestWithParam<Param> {};

TEST_P(WinogradCase, EveryPassMatchesTheFloat64Reference) {
  const auto [index, version, tile] = GetParam();
  ASSERT_TRUE(winograd(tile).supports(cases()[index].desc)) << winograd(tile).supports(cases()[index].desc).reason;
  expect_matches_reference<float>(cases()[index], version, tile);
  expect_matches_reference<double>(cases()[index], version, tile);
}

class WinogradVersusV1 : public ::testing::TestWithParam<Param> {};

TEST_P(WinogradVersusV1, AgreesWithVersion1) {
  const auto [index, version, tile] = GetParam();
  expect_agrees_with_v1(winograd(tile), ConvAlgo::winograd, "conv2d_winograd", version, cases()[index].desc,
                        cases()[index].name + " v" + std::to_string(version) + " tile " + std::to_string(tile));
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  return cases()[std::get<0>(info.param)].name + "_v" + std::to_string(std::get<1>(info.param)) + "_Tile" +
         std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Cases, WinogradCase,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(1, 2, 3),
                                            ::testing::Values(0, 2, 4)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Cases, WinogradVersusV1,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(2, 3),
                                            ::testing::Values(2, 4)),
                         case_name);

// The strict model's form (conv_tolerance.h: kWinogradErrorFactor times the
// bound of one sum of products, against the tensor's largest magnitude) with
// the bound of tf32 operands (tensor_core_tolerance.h) in place of float32's.
std::vector<double> tf32_tolerances(const cpu::testing::Reference& ref) {
  const double largest = ref.magnitude.empty() ? 0.0 : *std::max_element(ref.magnitude.begin(), ref.magnitude.end());
  return std::vector<double>(ref.value.size(),
                             cpu::testing::kWinogradErrorFactor *
                                 convkit::testing::rounded_operand_bound(largest, ref.max_terms,
                                                                         convkit::testing::kTf32Unit));
}

// Every pass of `out` within tf32_tolerances of `d`'s reference; the bias
// gradient is a plain sum, as everywhere.
void expect_within_tf32_bound(const Outputs<float>& out, const Conv2dDesc& d, const std::string& where) {
  using cpu::testing::all_within;
  const CaseData& data = case_data(d);
  EXPECT_TRUE(all_within(out.y, data.y.value, tf32_tolerances(data.y))) << "forward " << where;
  EXPECT_TRUE(all_within(out.dx, data.dx.value, tf32_tolerances(data.dx))) << "backward_data " << where;
  EXPECT_TRUE(all_within(out.dw, data.dw.value, tf32_tolerances(data.dw))) << "backward_weights " << where;
  EXPECT_TRUE(all_within(out.db, data.db.value, cpu::testing::tolerances<float>(ConvAlgo::direct, data.db)))
      << "bias " << where;
}

template <typename T>
Outputs<T> run_at(Float32Precision precision, const Conv2dDesc& d, int version, int tile) {
  const ScopedFloat32Precision level(precision);
  ScopedKernelVersion select("conv2d_winograd", version);
  return run_passes<T>(winograd(tile), d, case_data(d).in);
}

template <typename T>
void expect_same_bits(const Outputs<T>& a, const Outputs<T>& b, const std::string& where) {
  EXPECT_EQ(a.y, b.y) << "forward " << where;
  EXPECT_EQ(a.dx, b.dx) << "backward_data " << where;
  EXPECT_EQ(a.dw, b.dw) << "backward_weights " << where;
  EXPECT_EQ(a.db, b.db) << "bias " << where;
}

using CaseTile = std::tuple<std::size_t, int>;  // case, tile

class WinogradTf32Products : public ::testing::TestWithParam<CaseTile> {};

TEST_P(WinogradTf32Products, EveryPassIsWithinTheTf32BoundAtHighAndMedium) {
  const auto [index, tile] = GetParam();
  const ConvCase& c = cases()[index];
  const Outputs<float> high = run_at<float>(Float32Precision::high, c.desc, 2, tile);
  const std::string where = c.name + " tile " + std::to_string(tile) + " tf32";
  expect_within_tf32_bound(high, c.desc, where);
  // medium rounds winograd's products to tf32 too, never bf16.
  expect_same_bits(run_at<float>(Float32Precision::medium, c.desc, 2, tile), high, where + " medium against high");
}

std::string case_tile_name(const ::testing::TestParamInfo<CaseTile>& info) {
  return cases()[std::get<0>(info.param)].name + "_Tile" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Cases, WinogradTf32Products,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(2, 4)),
                         case_tile_name);

// v3 moves the transforms' data differently and computes the same values in
// the same order: every pass gives v2's bits, strict and with tf32 products,
// in float32 and float64.
class WinogradVersion3 : public ::testing::TestWithParam<CaseTile> {};

TEST_P(WinogradVersion3, GivesVersion2sBits) {
  const auto [index, tile] = GetParam();
  const Conv2dDesc& d = cases()[index].desc;
  const std::string where = cases()[index].name + " tile " + std::to_string(tile);
  expect_same_bits(run_at<float>(Float32Precision::highest, d, 3, tile),
                   run_at<float>(Float32Precision::highest, d, 2, tile), where);
  expect_same_bits(run_at<double>(Float32Precision::highest, d, 3, tile),
                   run_at<double>(Float32Precision::highest, d, 2, tile), where + " float64");
  expect_same_bits(run_at<float>(Float32Precision::high, d, 3, tile), run_at<float>(Float32Precision::high, d, 2, tile),
                   where + " tf32");
}

INSTANTIATE_TEST_SUITE_P(Cases, WinogradVersion3,
                         ::testing::Combine(::testing::Range<std::size_t>(0, cases().size()), ::testing::Values(2, 4)),
                         case_tile_name);

// The rounding shows where the tensor cores run (tf32 keeps 10 of float32's
// 23 mantissa bits, so 35 channels of random values cannot all land on the
// strict result), and nowhere else: v1 and float64 ignore the precision.
TEST(GpuConvWinograd, ReducedPrecisionRoundsVersion2sFloat32ProductsOnly) {
  const Conv2dDesc d = make(1, 33, 5, 6, 35, 1);
  for (int tile : {2, 4}) {
    const std::string where = "tile " + std::to_string(tile);
    const Outputs<float> strict = run_at<float>(Float32Precision::highest, d, 2, tile);
    const Outputs<float> reduced = run_at<float>(Float32Precision::high, d, 2, tile);
    EXPECT_NE(strict.y, reduced.y) << "forward " << where;
    EXPECT_NE(strict.dx, reduced.dx) << "backward_data " << where;
    EXPECT_NE(strict.dw, reduced.dw) << "backward_weights " << where;
    expect_same_bits(run_at<float>(Float32Precision::high, d, 1, tile),
                     run_at<float>(Float32Precision::highest, d, 1, tile), where + " v1");
    expect_same_bits(run_at<double>(Float32Precision::high, d, 2, tile),
                     run_at<double>(Float32Precision::highest, d, 2, tile), where + " float64");
  }
}

TEST(GpuConvWinograd, ProductsPrecisionIsTf32BelowHighestForVersion2sFloat32) {
  using kernels::winograd_products_precision;
  using kernels::TensorCorePrecision;
  EXPECT_EQ(winograd_products_precision(2, DType::float32, Float32Precision::high), TensorCorePrecision::tf32);
  EXPECT_EQ(winograd_products_precision(2, DType::float32, Float32Precision::medium), TensorCorePrecision::tf32);
  EXPECT_EQ(winograd_products_precision(3, DType::float32, Float32Precision::high), TensorCorePrecision::tf32);
  EXPECT_EQ(winograd_products_precision(2, DType::float32, Float32Precision::highest), std::nullopt);
  EXPECT_EQ(winograd_products_precision(2, DType::float64, Float32Precision::high), std::nullopt);
  EXPECT_EQ(winograd_products_precision(1, DType::float32, Float32Precision::high), std::nullopt);
}

#if !defined(__CUDACC__)  // thread orders are sim's to choose
TEST(GpuConvWinograd, ResultsHoldUnderEveryThreadOrder) {
  for (const char* order : {"reverse", "random:5"}) {
    sim::ScopedSchedule schedule(sim::Schedule::parse(order));
    for (int version : {1, 2, 3})
      for (const char* name : {"groups_3", "f4_edges_13x14", "wide_6x140"})
        for (const ConvCase& c : cases())
          if (c.name == name) expect_matches_reference<float>(c, version, 0);
  }
}
#endif

// A workspace_limit below the whole batch's tiles: every pass runs in
// chunks, so backward-weights accumulates its point products across them.
TEST(GpuConvWinograd, BatchesSplitIntoChunksGiveTheSameResult) {
  Conv2dDesc d = make(3, 3, 12, 10, 4, 1);
  const std::vector<ConvPass> passes = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};
  std::size_t whole_batch = std::numeric_limits<std::size_t>::max();
  for (ConvPass pass : passes)
    whole_batch = std::min(whole_batch, winograd(0).workspace_bytes(d, DType::float64, pass));
  d.workspace_limit = whole_batch / 3;
  for (ConvPass pass : passes) EXPECT_LE(winograd(0).workspace_bytes(d, DType::float64, pass), d.workspace_limit);
  for (int version : {1, 2, 3})
    for (int tile : {2, 4}) expect_matches_reference<double>(ConvCase{"chunked", d}, version, tile);
  // Chunks start and end mid-row: v3's halo comes from memory there.
  for (int tile : {2, 4})
    expect_same_bits(run_at<double>(Float32Precision::highest, d, 3, tile),
                     run_at<double>(Float32Precision::highest, d, 2, tile), "chunked v3 tile " + std::to_string(tile));
  // In tf32 too: backward-weights accumulates the tensor-core products of
  // each chunk onto the last (beta = 1, B transposed).
  for (int tile : {2, 4})
    expect_within_tf32_bound(run_at<float>(Float32Precision::high, d, 2, tile), d,
                             "chunked tf32 tile " + std::to_string(tile));
}

TEST(GpuConvWinograd, WorkspaceIsAPureFunctionOfTheDescriptor) {
  const Conv2dDesc d = make(2, 7, 13, 14, 9, 1);
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
    const std::size_t first = winograd(0).workspace_bytes(d, DType::float32, pass);
    {
      ScopedKernelVersion select("conv2d_winograd", 1);
      EXPECT_EQ(winograd(0).workspace_bytes(d, DType::float32, pass), first);
    }
    EXPECT_EQ(winograd(0).workspace_bytes(d, DType::float32, pass), first);
  }
}

TEST(GpuConvWinograd, WorkspaceLimitBelowOneTileNamesTheSizes) {
  Conv2dDesc d = make(1, 3, 12, 10, 4, 1);
  d.workspace_limit = 100;
  try {
    winograd(0).workspace_bytes(d, DType::float32, ConvPass::forward);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workspace_limit"), std::string::npos) << e.what();
  }
}

TEST(GpuConvWinograd, UnsupportedDescriptorsSayWhy) {
  Conv2dDesc strided = make(1, 2, 9, 9, 2, 1);
  strided.stride_w = 2;
  EXPECT_NE(winograd(0).supports(strided).reason.find("stride 1 only"), std::string::npos);
  Conv2dDesc five = make(1, 2, 9, 9, 2, 1);
  five.R = five.S = 5;
  EXPECT_NE(winograd(0).supports(five).reason.find("3x3 filters only"), std::string::npos);
  Conv2dDesc dilated = make(1, 2, 9, 9, 2, 1);
  dilated.dilation_h = 2;
  EXPECT_NE(winograd(0).supports(dilated).reason.find("dilation 1 only"), std::string::npos);
  EXPECT_THROW(winograd(0).workspace_bytes(strided, DType::float32, ConvPass::forward), Error);
  EXPECT_THROW(kernels::winograd_gpu_conv_algorithm_with(3), Error);
}

#if !defined(__CUDACC__)  // the cpu algorithms are internal to the library the sim build links
// The cpu and the GPU support the same descriptors.
TEST(GpuConvWinograd, SupportsWhatTheCpuSupports) {
  const conv::ConvAlgorithm& cpu_algo = cpu::winograd_conv_algorithm();
  for (const ConvCase& c : cpu::testing::conv_cases())
    EXPECT_EQ(winograd(0).supports(c.desc).ok, cpu_algo.supports(c.desc).ok) << c.name;
}
#endif

}  // namespace
}  // namespace convkit::gpu_testing
