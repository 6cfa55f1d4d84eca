#pragma once
// The op test table (in the spirit of PyTorch's OpInfo): each op is declared
// once, with its sample inputs, a float64 reference written as plain loops,
// whether gradcheck applies and the GPU kernel families whose every version
// must give the same answer. test_op_table.cpp runs every entry on every
// usable device (cpu; sim under CONVKIT_TEST_SIM=1; cuda when present).
//
// Adding an op: one entry in the table file of its kind (op_table_*.cpp).
#include <functional>
#include <string>
#include <vector>

#include "support/support.h"

namespace convkit::testing {

// A tensor's logical values, row-major, in float64: what references read and write.
struct Values {
  Shape shape;
  std::vector<double> v;
  double at(const std::vector<std::int64_t>& idx) const;  // row-major multi-index
};
Values values_of(const Tensor& t);

struct Sample {
  std::string name;            // "odd", "broadcast [3,1] x [5]", "batch 1", ...
  std::vector<Tensor> inputs;  // float64 (or int64) values, contiguous, on cpu
  // Applied on the device to every floating input before the op, and inside
  // gradcheck's function, so it must be differentiable: strided(),
  // transposed(), an expand(). Empty: the input as it is.
  std::function<Tensor(const Tensor&)> layout;
  bool gradcheck = true;
  // For ops whose arguments vary by sample (conv's stride and padding): the
  // call and reference for this sample (empty: the entry's), and the devices
  // it runs on (empty: every one), e.g. an algorithm a backend lacks.
  std::function<Tensor(const std::vector<Tensor>&)> op = {};
  std::function<Values(const std::vector<Values>&)> reference = {};
  std::function<bool(Device)> runs_on = {};
};

struct OpInfo {
  std::string name;
  std::function<Tensor(const std::vector<Tensor>&)> op;
  std::function<Values(const std::vector<Values>&)> reference;
  std::function<std::vector<Sample>(std::mt19937_64&)> samples;
  bool gradcheck = true;
  // GPU kernel families (convkit/backend/kernel_versions.h) this op runs:
  // on sim and cuda every version of each is compared with the reference.
  std::vector<std::string> kernel_families;
  double atol32 = 1e-5, rtol32 = 1e-5;  // float32 against the reference
  double atol64 = 1e-11, rtol64 = 1e-11;
  // At most 16 elements of each input by central differences (evenly
  // spaced): every one costs two forward runs, which on sim add up.
  autograd::GradcheckOptions grad_options = {.max_elements = 16};
  // The backend kernel ops (UnaryOp / BinaryOp names) this entry reaches
  // besides its own name, for the coverage check (e.g. abs's gradient: sign).
  std::vector<std::string> also_covers;
};

// The table, one function per file.
std::vector<OpInfo> elementwise_op_infos();  // op_table_elementwise.cpp
std::vector<OpInfo> layer_op_infos();        // op_table_layers.cpp
std::vector<OpInfo> conv_op_infos();         // op_table_conv.cpp
const std::vector<OpInfo>& op_table();

// ---- sample building
// Random values in [lo, hi) kept at least `gap` away from each kink (where a
// central difference straddles a corner and means nothing).
Tensor values_in(const Shape& shape, std::mt19937_64& rng, double lo, double hi,
                 std::vector<double> kinks = {}, double gap = 0.05);
// A differentiable non-contiguous view with t's values (every dim strided).
Tensor strided(const Tensor& t);
// The same values stored column-major in the last two dims (a transposed view).
Tensor transposed(const Tensor& t);

// The shapes every unary elementwise op is checked on (odd sizes, rank 0,
// batch 1, a length past the vector width, strided, transposed and broadcast
// (stride 0) views), each a Sample over values in [lo, hi).
std::vector<Sample> unary_samples(std::mt19937_64& rng, double lo, double hi, std::vector<double> kinks = {});
// Pairs of shapes that broadcast like NumPy, plus strided and transposed layouts.
std::vector<Sample> binary_samples(std::mt19937_64& rng, double lo, double hi, std::vector<double> kinks = {});

// Elementwise references from a formula in double.
std::function<Values(const std::vector<Values>&)> unary_reference(std::function<double(double)> f);
std::function<Values(const std::vector<Values>&)> binary_reference(std::function<double(double, double)> f);

}  // namespace convkit::testing
