// The op table's conv2d entries: one per algorithm of the conv-algorithm
// table, each over the same descriptors (odd sizes, stride, asymmetric and
// 'same' padding, groups, dilation, 1x1, no bias, batch 1), against the
// float64 reference of tests/cpu/conv/conv_reference.h, which enumerates
// every product of the convolution sum. A sample runs where the device
// supports the algorithm for its descriptor.
#include "cpu/conv/conv_reference.h"
#include "ops/op_info.h"

namespace convkit::testing {

namespace {

struct ConvCase {
  Shape x, w;
  Conv2dParams p;
  bool bias;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{1, 1, 5, 5}, {1, 1, 3, 3}, Conv2dParams(), true},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, Conv2dParams().padding(1), true},
      {{1, 2, 9, 7}, {3, 2, 3, 2}, Conv2dParams().stride(2).padding(1, 0), false},
      {{2, 4, 6, 6}, {6, 2, 3, 3}, Conv2dParams().groups(2).padding_same(), true},
      {{1, 3, 8, 9}, {2, 3, 5, 5}, Conv2dParams().padding_same(), true},
      {{3, 2, 6, 5}, {5, 2, 1, 1}, Conv2dParams(), true},
      {{1, 2, 9, 9}, {2, 2, 3, 3}, Conv2dParams().dilation(2).padding(0, 1, 2, 0), true},
      {{2, 5, 4, 11}, {1, 5, 2, 4}, Conv2dParams().stride(1, 2).padding(1, 2), true},
  };
}

std::vector<std::string> families_of(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::direct: return {"conv2d_direct"};
    // Its versions include v1, the explicit im2col + gemm path.
    case ConvAlgo::im2col_gemm: return {"conv2d_implicit_gemm"};
    case ConvAlgo::fft: return {"conv2d_fft"};
    case ConvAlgo::winograd: return {"conv2d_winograd"};
    default: return {};
  }
}

OpInfo conv_info(ConvAlgo algo) {
  OpInfo info;
  info.name = "conv2d " + std::string(conv_algo_name(algo));
  info.samples = [algo](std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const ConvCase& c : conv_cases()) {
      const Conv2dParams p = Conv2dParams(c.p).algo(algo);
      const Conv2dDesc desc = make_conv2d_desc(c.x, c.w, p);
      Sample s;
      std::ostringstream name;
      name << desc;
      s.name = name.str();
      s.inputs = {values_in(c.x, rng, -1, 1), values_in(c.w, rng, -1, 1)};
      if (c.bias) s.inputs.push_back(values_in({c.w[0]}, rng, -1, 1));
      s.op = [p](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), p); };
      s.reference = [desc](const std::vector<Values>& in) {
        const std::vector<double> bias = in.size() > 2 ? in[2].v : std::vector<double>();
        return Values{{desc.N, desc.K, desc.P(), desc.Q()}, cpu::testing::reference_forward(desc, in[0].v, in[1].v, bias).value};
      };
      s.runs_on = [algo, desc](Device d) { return backend_for(d).conv2d_supports(algo, desc).ok; };
      s.gradcheck = out.size() < 3;  // the first three (stride 2, no bias among them): each costs ~50 passes
      out.push_back(std::move(s));
    }
    Sample strided_input = out[1];
    strided_input.name = "strided " + strided_input.name;
    strided_input.layout = strided;
    out.push_back(std::move(strided_input));
    return out;
  };
  info.kernel_families = families_of(algo);
  // FFT rounds through transforms of size ~16-32: a few ulps times log2(size) more.
  if (algo == ConvAlgo::fft) info.atol32 = info.rtol32 = 2e-4;
  else info.atol32 = info.rtol32 = 2e-5;
  info.atol64 = info.rtol64 = 1e-10;
  return info;
}

}  // namespace

std::vector<OpInfo> conv_op_infos() {
  std::vector<OpInfo> out;
  for (const ConvAlgoInfo& a : kConvAlgorithms) out.push_back(conv_info(a.algo));
  return out;
}

}  // namespace convkit::testing
