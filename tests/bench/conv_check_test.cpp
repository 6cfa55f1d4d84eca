// The check bench_conv runs before timing: it accepts every CPU algorithm's
// real result, and rejects a result with one wrong element.
#include <gtest/gtest.h>

#include <convkit/convkit.h>

#include <limits>

#include "conv_check.h"
#include "cpu_conv_pass.h"

namespace convkit::bench {
namespace {

struct Case {
  const char* name;
  Conv2dDesc desc;
};

Conv2dDesc make(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k, std::int64_t r,
                std::int64_t s, std::int64_t stride, std::int64_t pad) {
  Conv2dDesc d;
  d.N = n; d.C = c; d.H = h; d.W = w; d.K = k; d.R = r; d.S = s;
  d.stride_h = d.stride_w = stride;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  return d;
}

using testing::run_cpu_pass;

const std::vector<Case> kCases = {
    {"odd", make(2, 3, 7, 5, 4, 3, 2, 1, 1)},
    {"strided", make(3, 2, 9, 9, 5, 3, 3, 2, 0)},
    {"big_sample", make(4, 8, 16, 16, 8, 5, 5, 1, 2)},  // more elements than the sample
};

TEST(ConvCheck, AcceptsEveryCpuAlgorithmAndPass) {
  for (const Case& c : kCases)
    for (const ConvAlgoInfo& info : kConvAlgorithms)
      for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
        const ConvAlgo algo = info.algo;
        if (!backend_for(kCPU).conv2d_supports(algo, c.desc)) continue;
        const CheckResult r = check_conv_pass(c.desc, algo, pass, run_cpu_pass(c.desc, algo, pass));
        EXPECT_TRUE(r.ok()) << c.name << " " << conv_algo_name(algo) << " " << conv_pass_name(pass) << ": "
                            << r.worst;
        EXPECT_GT(r.checked, 0u);
        EXPECT_LT(r.max_rel_error, 1e-5);
      }
}

TEST(ConvCheck, RejectsOneWrongElement) {
  for (const Case& c : kCases)
    for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
      PassData data = run_cpu_pass(c.desc, ConvAlgo::direct, pass);
      // The last element is always in the sample.
      data.out.back() += 1.0f;
      const CheckResult r = check_conv_pass(c.desc, ConvAlgo::direct, pass, data);
      EXPECT_FALSE(r.ok()) << c.name << " " << conv_pass_name(pass);
      EXPECT_EQ(r.failures, 1u);
      EXPECT_NE(r.worst.find("]"), std::string::npos) << r.worst;
      EXPECT_GT(r.max_rel_error, 1e-3);
    }
}

TEST(ConvCheck, RejectsAWrongBiasGradientAndNaN) {
  const Conv2dDesc d = kCases[0].desc;
  PassData data = run_cpu_pass(d, ConvAlgo::direct, ConvPass::backward_weights);
  data.db[0] += 1.0f;
  EXPECT_FALSE(check_conv_pass(d, ConvAlgo::direct, ConvPass::backward_weights, data).ok());
  data = run_cpu_pass(d, ConvAlgo::fft, ConvPass::forward);
  data.out[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(check_conv_pass(d, ConvAlgo::fft, ConvPass::forward, data).ok());
}

// A tf32 pass may be off by 2u + u^2 of the magnitude (u = 2^-11): an
// element off by 1.5u of its magnitude fails the strict check and passes
// with operand_unit = 2^-11; one off by 3u fails both.
TEST(ConvCheck, OperandUnitWidensTheToleranceByTheRoundedProducts) {
  const Conv2dDesc d = make(1, 1, 1, 1, 1, 1, 1, 1, 0);  // y = x * w: one product
  PassData data;
  data.x = {1.0f};
  data.w = {1.0f};
  data.out = {1.0f + 1.5f * 0x1p-11f};
  EXPECT_FALSE(check_conv_pass(d, ConvAlgo::im2col_gemm, ConvPass::forward, data).ok());
  EXPECT_TRUE(check_conv_pass(d, ConvAlgo::im2col_gemm, ConvPass::forward, data, 0x1p-11).ok());
  data.out = {1.0f + 3.0f * 0x1p-11f};
  EXPECT_FALSE(check_conv_pass(d, ConvAlgo::im2col_gemm, ConvPass::forward, data, 0x1p-11).ok());
}

TEST(ConvCheck, OperandOfTheWrongSizeIsAnError) {
  const Conv2dDesc d = kCases[0].desc;
  PassData data = run_cpu_pass(d, ConvAlgo::direct, ConvPass::forward);
  data.x.pop_back();
  EXPECT_THROW(check_conv_pass(d, ConvAlgo::direct, ConvPass::forward, data), Error);
}

}  // namespace
}  // namespace convkit::bench
