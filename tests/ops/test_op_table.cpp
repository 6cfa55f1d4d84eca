// Runs the op table (op_info.h) on every usable device: each entry's samples
// in float32 and float64 against its float64 reference, gradcheck in
// float64, and on the GPU backends every version of each kernel family the
// op declares. One test per (device, op), named device_op.
#include <cctype>
#include <set>

#include "ops/op_info.h"

namespace convkit::testing {
namespace {

using Param = std::tuple<Device, std::size_t>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::get<0>(info.param).str() + "_" + op_table()[std::get<1>(info.param)].name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

// The sample's inputs on `d`, floating ones in `dt`, with the sample's layout.
std::vector<Tensor> place(const Sample& s, Device d, DType dt) {
  std::vector<Tensor> out;
  for (const Tensor& t : s.inputs) {
    Tensor x = is_floating(t.dtype()) ? t.to(dt).to(d) : t.to(d);
    if (s.layout && is_floating(t.dtype())) x = s.layout(x);
    out.push_back(x);
  }
  return out;
}

::testing::AssertionResult matches_reference(const OpInfo& info, const Sample& s, Device d, DType dt) {
  const std::vector<Tensor> in = place(s, d, dt);
  std::vector<Values> values;
  for (const Tensor& t : in) values.push_back(values_of(t));
  const Values want = (s.reference ? s.reference : info.reference)(values);
  const Tensor got = (s.op ? s.op : info.op)(in);
  if (got.device() != d) return ::testing::AssertionFailure() << "output on " << got.device();
  if (got.shape() != want.shape)
    return ::testing::AssertionFailure() << "shape " << got.shape() << ", reference " << want.shape;
  const bool f32 = dt == DType::float32;
  return all_close(got, want.v, f32 ? info.atol32 : info.atol64, f32 ? info.rtol32 : info.rtol64);
}

::testing::AssertionResult passes_gradcheck(const OpInfo& info, const Sample& s, Device d) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : s.inputs) {
    Tensor x = t.to(d);
    if (is_floating(t.dtype())) x.requires_grad_();
    leaves.push_back(x);
  }
  return grad_ok(
      [&](const std::vector<Tensor>& in) {
        std::vector<Tensor> laid = in;
        if (s.layout)
          for (Tensor& x : laid)
            if (is_floating(x.dtype())) x = s.layout(x);
        return (s.op ? s.op : info.op)(laid);
      },
      leaves, info.grad_options);
}

class OpTable : public ::testing::TestWithParam<Param> {
 protected:
  Device device() const { return std::get<0>(GetParam()); }
  const OpInfo& info() const { return op_table()[std::get<1>(GetParam())]; }
  // The entry's samples that run on this device.
  std::vector<Sample> samples() const {
    std::mt19937_64 rng(kSeed + std::get<1>(GetParam()));
    std::vector<Sample> out;
    for (Sample& s : info().samples(rng))
      if (!s.runs_on || s.runs_on(device())) out.push_back(std::move(s));
    return out;
  }
};

TEST_P(OpTable, MatchesFloat64Reference) {
  if (samples().empty()) GTEST_SKIP() << info().name << " does not run on " << device();
  for (const Sample& s : samples())
    for (DType dt : {DType::float32, DType::float64})
      EXPECT_TRUE(matches_reference(info(), s, device(), dt)) << s.name << " " << dt;
}

class OpGradients : public OpTable {};

TEST_P(OpGradients, PassGradcheck) {
  for (const Sample& s : samples()) {
    if (s.gradcheck) {
      EXPECT_TRUE(passes_gradcheck(info(), s, device())) << s.name;
    }
  }
}

// The versions that call a vendor library run on the cuda backend only:
// gemm v9 is cuBLAS (kernels/gemm.cuh), conv2d_fft v3 cuFFT (kernels/conv2d_fft.cuh).
bool version_runs_on(const std::string& family, int version, Device d) {
  const bool vendor = (family == "gemm" && version == 9) || (family == "conv2d_fft" && version == 3);
  return !vendor || d.type == DeviceType::cuda;
}

// Runs the enclosed code with `family` at `version`, then restores the default.
struct KernelVersionGuard {
  std::string family;
  KernelVersionGuard(std::string f, int v) : family(std::move(f)) { set_kernel_version(family, v); }
  ~KernelVersionGuard() { set_kernel_version(family, 0); }
};

class OpKernelVersions : public OpTable {};

TEST_P(OpKernelVersions, EveryVersionMatchesReference) {
  const std::vector<Sample> all = samples();
  if (all.empty()) GTEST_SKIP() << info().name << " does not run on " << device();
  ASSERT_TRUE(matches_reference(info(), all[0], device(), DType::float32));  // registers the families
  for (const std::string& family : info().kernel_families) {
    int versions = 0;
    for (const KernelFamilyInfo& f : kernel_families())
      if (f.family == family) versions = f.versions;
    ASSERT_GT(versions, 0) << info().name << " declares kernel family " << family << ", which its run never registered";
    for (int v = 1; v <= versions; ++v) {
      if (!version_runs_on(family, v, device())) continue;
      const KernelVersionGuard guard(family, v);
      for (const Sample& s : all)
        EXPECT_TRUE(matches_reference(info(), s, device(), DType::float32)) << family << " v" << v << " " << s.name;
      // The backward kernels too, on the first sample gradcheck takes.
      for (const Sample& s : all) {
        if (!info().gradcheck || !s.gradcheck) continue;
        EXPECT_TRUE(passes_gradcheck(info(), s, device())) << family << " v" << v << " " << s.name;
        break;
      }
    }
  }
}

std::vector<std::size_t> ops_where(const std::function<bool(const OpInfo&)>& keep) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < op_table().size(); ++i)
    if (keep(op_table()[i])) out.push_back(i);
  return out;
}

// Kernel versions belong to the GPU backends: sim and cuda only.
std::vector<Device> gpu_test_devices() {
  std::vector<Device> out;
  for (Device d : test_devices())
    if (d.type != DeviceType::cpu) out.push_back(d);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTable,
                         ::testing::Combine(::testing::ValuesIn(test_devices()),
                                            ::testing::ValuesIn(ops_where([](const OpInfo&) { return true; }))),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Ops, OpGradients,
                         ::testing::Combine(::testing::ValuesIn(test_devices()),
                                            ::testing::ValuesIn(ops_where([](const OpInfo& i) { return i.gradcheck; }))),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Ops, OpKernelVersions,
                         ::testing::Combine(::testing::ValuesIn(gpu_test_devices()),
                                            ::testing::ValuesIn(ops_where([](const OpInfo& i) {
                                              return !i.kernel_families.empty();
                                            }))),
                         param_name);
// On a cpu-only run (no CONVKIT_TEST_SIM, no cuda) there are no GPU devices.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpKernelVersions);

// Every elementwise kernel op of kernel_params.h has an entry (its name) or is
// reached through one (also_covers): a new op without a line here fails.
TEST(OpTableCoverage, EveryUnaryAndBinaryKernelOpHasAnEntry) {
  std::set<std::string> covered;
  for (const OpInfo& info : op_table()) {
    covered.insert(info.name);
    covered.insert(info.also_covers.begin(), info.also_covers.end());
  }
#define CK_EXPECT_COVERED(name) EXPECT_TRUE(covered.count(#name)) << #name " has no entry in the op table";
  CONVKIT_UNARY_OPS(CK_EXPECT_COVERED)
  CONVKIT_BINARY_OPS(CK_EXPECT_COVERED)
#undef CK_EXPECT_COVERED
}

TEST(OpTableCoverage, NamesAreUnique) {
  std::set<std::string> seen;
  for (const OpInfo& info : op_table()) EXPECT_TRUE(seen.insert(info.name).second) << info.name;
}

}  // namespace
}  // namespace convkit::testing
