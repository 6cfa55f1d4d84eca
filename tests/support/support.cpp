#include "support/support.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace convkit::testing {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && *v != '0';
}

}  // namespace

void exit_unless_cuda_when_required() {
  if (!env_flag("CONVKIT_TEST_REQUIRE_CUDA")) return;
  std::string why = "no cuda entry";
  for (const BackendInfo& info : list_backends()) {
    if (Device::parse(info.name).type != DeviceType::cuda) continue;
    if (info.usable) return;
    why = info.detail;
  }
  // On a GPU machine (scripts/gpu-check.sh) a suite without its cuda
  // instances would pass while testing nothing there: refuse to start.
  std::fprintf(stderr, "CONVKIT_TEST_REQUIRE_CUDA is set but cuda is not usable: %s\n", why.c_str());
  std::exit(1);
}

std::vector<Device> test_devices() {
  exit_unless_cuda_when_required();
  const bool with_sim = env_flag("CONVKIT_TEST_SIM");
  std::vector<Device> out;
  std::vector<BackendInfo> backends;
  try {
    backends = list_backends();
  } catch (const Error& e) {
    // Called while the tests register, before main: an exception here would
    // end the process in std::terminate, which ctest reports as a crash.
    // A CONVKIT_CPU_ISA this CPU cannot run (convkit_add_isa_runs) is the
    // expected case, and ctest skips on its message.
    std::fprintf(stderr, "test_devices: %s\n", e.what());
    std::exit(1);
  }
  for (const BackendInfo& info : backends) {
    const Device d = Device::parse(info.name);
    if (info.usable && (d.type != DeviceType::sim || with_sim)) out.push_back(d);
  }
  return out;
}

std::string device_name(const ::testing::TestParamInfo<Device>& info) {
  const Device d = info.param;
  return d.type == DeviceType::cuda ? "cuda" + std::to_string(d.index) : d.str();
}

Tensor random_tensor(const Shape& shape, std::mt19937_64& rng, TensorOptions opts, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) x = dist(rng);
  const bool grad = opts.requires_grad_;
  Tensor t = from_vector(v, shape, opts.requires_grad(false));
  if (grad) t.requires_grad_(true);
  return t;
}

Tensor noncontiguous(const Tensor& t) {
  NoGradGuard no_grad;
  if (t.dim() == 0) return t;
  Shape wide = t.shape();
  wide[wide.size() - 1] *= 2;
  Tensor big = zeros(wide, TensorOptions().dtype(t.dtype()).device(t.device()));
  Tensor view = big.slice(-1, 0, wide[wide.size() - 1], 2);
  view.copy_(t);
  return view;
}

Shape random_shape(std::mt19937_64& rng, int rank, std::int64_t max_size) {
  std::uniform_int_distribution<std::int64_t> dist(1, max_size);
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (auto& d : dims) d = dist(rng);
  return Shape(dims);
}

std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

std::int64_t broadcast_index(const std::vector<std::int64_t>& idx, const Shape& shape) {
  const std::size_t lead = idx.size() - shape.size();
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + (shape[d] == 1 ? 0 : idx[d + lead]);
  return flat;
}

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want,
                                     double atol, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs expected " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (!both_nan && !(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected "
                                           << want[i] << " (atol " << atol << ", rtol " << rtol << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const Tensor& got, const std::vector<double>& want, double atol,
                                     double rtol) {
  return all_close(got.to_vector<double>(), want, atol, rtol);
}

::testing::AssertionResult grad_ok(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& inputs, autograd::GradcheckOptions opts) {
  const auto r = autograd::gradcheck(fn, inputs, opts);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message;
}

}  // namespace convkit::testing
