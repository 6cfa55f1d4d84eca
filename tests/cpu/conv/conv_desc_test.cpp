// Conv2dDesc: algorithm names, validation messages, printing.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "convkit/backend/conv_desc.h"
#include "convkit/core/error.h"

namespace convkit {
namespace {

std::string error_of(const Conv2dDesc& d) {
  try {
    d.validate("conv2d test");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ConvDesc, AlgorithmNamesRoundTrip) {
  for (ConvAlgo a : {ConvAlgo::automatic, ConvAlgo::direct, ConvAlgo::im2col_gemm, ConvAlgo::fft, ConvAlgo::winograd})
    EXPECT_EQ(parse_conv_algo(conv_algo_name(a)), a) << conv_algo_name(a);
  EXPECT_EQ(conv_algo_name(ConvAlgo::im2col_gemm), "im2col_gemm");
}

TEST(ConvDesc, UnknownAlgorithmNameListsTheValidOnes) {
  try {
    parse_conv_algo("gemm");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "'gemm'")) << msg;
    for (const char* name : {"automatic", "direct", "im2col_gemm", "fft", "winograd"})
      EXPECT_TRUE(contains(msg, name)) << msg;
  }
}

TEST(ConvDesc, ValidDescriptorPasses) {
  Conv2dDesc d;
  d.N = 2, d.C = 4, d.H = 5, d.W = 5, d.K = 6, d.R = 3, d.S = 3, d.groups = 2;
  EXPECT_NO_THROW(d.validate("conv2d"));
  EXPECT_EQ(error_of(d), "");
}

TEST(ConvDesc, EveryInconsistentFieldIsNamedInOneMessage) {
  Conv2dDesc d;
  d.C = 6, d.K = 5, d.groups = 4, d.stride_w = 0, d.pad_left = -1;
  const std::string msg = error_of(d);
  EXPECT_TRUE(contains(msg, "conv2d test")) << msg;
  EXPECT_TRUE(contains(msg, "input channels C (6) is not divisible by groups (4)")) << msg;
  EXPECT_TRUE(contains(msg, "output channels K (5) is not divisible by groups (4)")) << msg;
  EXPECT_TRUE(contains(msg, "stride_w must be >= 1 (got 0)")) << msg;
  EXPECT_TRUE(contains(msg, "pad_left must be >= 0 (got -1)")) << msg;
  EXPECT_TRUE(contains(msg, d.str())) << msg;
}

TEST(ConvDesc, NonPositiveOutputSizeIsAnError) {
  // 4 rows, no padding, a 3-tap filter dilated by 2 spans 5 rows: no output.
  Conv2dDesc d;
  d.H = 4, d.W = 8, d.R = 3, d.S = 3, d.dilation_h = 2, d.stride_h = 2;
  const std::string msg = error_of(d);
  EXPECT_TRUE(contains(msg, "output height is not positive")) << msg;
  EXPECT_TRUE(contains(msg, "= 4")) << msg;
  EXPECT_TRUE(contains(msg, "= 5")) << msg;
  EXPECT_FALSE(contains(msg, "output width")) << msg;
  d.pad_top = 1;  // 5 padded rows: one output row
  EXPECT_EQ(error_of(d), "");
  EXPECT_EQ(d.P(), 1);
}

TEST(ConvDesc, StrNamesEveryField) {
  Conv2dDesc d;
  d.N = 8, d.C = 3, d.H = 32, d.W = 30, d.K = 16, d.R = 5, d.S = 3, d.stride_h = 2, d.pad_top = 2, d.pad_bottom = 1,
  d.pad_left = 1, d.pad_right = 0, d.dilation_w = 2, d.groups = 1;
  const std::string s = d.str();
  EXPECT_EQ(s,
            "Conv2dDesc{N=8 C=3 H=32 W=30 K=16 R=5 S=3 stride=2x1 pad(t,b,l,r)=2,1,1,0 dilation=1x2 groups=1 "
            "-> P=16 Q=27}");
  std::ostringstream os;
  os << d;
  EXPECT_EQ(os.str(), s);
}

}  // namespace
}  // namespace convkit
