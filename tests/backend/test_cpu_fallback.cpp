// Backend's cpu fallback, end to end: with the sim device routed to a backend
// that implements memory alone (host_only_backend.h), a broad sample of ops,
// gradients and optimizer steps must give exactly what cpu gives, since they
// run cpu's kernels on copies of the same bytes. Strided, broadcast and
// transposed inputs and strided outputs (copy_ into a slice) check that a
// view's span and strides survive the round trip.
#include <sstream>

#include "backend/host_only_backend.h"
#include "support/support.h"

namespace convkit {
namespace {

using testing::random_tensor;

class RouteSim : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_TRUE(testing::route_sim_to_host_only_backend())
        << "sim was created before the host-only backend could replace it";
  }
};
const auto* const kRoute = ::testing::AddGlobalTestEnvironment(new RouteSim);

TensorOptions on(Device d, DType dt = DType::float32) { return TensorOptions().dtype(dt).device(d); }

// A case builds the same inputs on `d` (values from a fixed seed) and returns
// every output and gradient worth comparing.
using Case = std::function<std::vector<Tensor>(Device d)>;

void expect_same_as_cpu(const char* name, const Case& f) {
  SCOPED_TRACE(name);
  const std::vector<Tensor> want = f(kCPU), got = f(kSim);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].defined(), want[i].defined()) << "output " << i;
    if (!got[i].defined()) continue;
    EXPECT_EQ(got[i].device(), kSim) << "output " << i;
    EXPECT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_EQ(got[i].to_vector<double>(), want[i].to_vector<double>()) << "output " << i;
  }
}

TEST(CpuFallback, SimIsTheHostOnlyBackendWithEveryOpFallingBack) {
  const std::vector<BackendOp> all = backend_for(kSim).fallbacks();
  EXPECT_EQ(all.size(), kBackendOpCount);
  EXPECT_EQ(all.front(), BackendOp::fill);
  EXPECT_EQ(all.back(), BackendOp::conv2d);
}

TEST(CpuFallback, ElementwiseOverViewsAndIntoSlices) {
  expect_same_as_cpu("elementwise", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed);
    Tensor x = testing::noncontiguous(random_tensor({3, 5}, rng, on(d), 0.2, 2)).detach().requires_grad_();
    Tensor y = random_tensor({5}, rng, on(d)).requires_grad_();
    const Tensor z = exp(x) * y + log(x) - pow(x, 2.5) / (y + 3.0) + maximum(x, y) +
                     where(gt(x, y), sigmoid(x), tanh(y)) + leaky_relu(x - 1.0, 0.2) + elu(y);
    z.sum().backward();
    // Strided outputs: copy_ and fill_ write a slice of a larger tensor and
    // must leave the rest of it alone.
    Tensor big = full({4, 10}, 7.0, on(d));
    big.slice(1, 1, 10, 2).copy_(x.detach().select(0, 1));
    big.select(0, 3).fill_(-1);
    big.slice(1, 0, 10, 3).relu_();
    return {z, x.grad(), y.grad(), big, lt(x, y)};
  });
}

TEST(CpuFallback, ReductionsAndMatmul) {
  expect_same_as_cpu("reduce", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 1);
    Tensor x = random_tensor({2, 3, 4}, rng, on(d, DType::float64)).requires_grad_();
    const Tensor xt = x.transpose(0, 2);
    const Tensor s = sum(xt, {1}) + mean(xt, {0, 2}, true).sum() + var(xt, {1}) + max(xt, 1);  // [4, 2]
    s.sum().backward();
    return {s, x.grad(), argmax(xt, 1), max(x), min(x)};
  });
  expect_same_as_cpu("matmul", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 2);
    Tensor a = random_tensor({5, 3}, rng, on(d)).requires_grad_();
    Tensor b = random_tensor({2, 5, 4}, rng, on(d)).requires_grad_();
    Tensor w = random_tensor({6, 4}, rng, on(d)).requires_grad_();
    Tensor bias = random_tensor({6}, rng, on(d)).requires_grad_();
    const Tensor y = linear(matmul(a.t(), b), w, bias);  // [2, 3, 6]
    y.sum().backward();
    return {y, a.grad(), b.grad(), w.grad(), bias.grad()};
  });
}

TEST(CpuFallback, LayerKernels) {
  expect_same_as_cpu("pooling", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 3);
    Tensor x = random_tensor({1, 2, 7, 6}, rng, on(d)).requires_grad_();
    const Tensor m = max_pool2d(x, Pool2dParams(3).stride(2).padding(1));
    const Tensor a = avg_pool2d(x, Pool2dParams(2, 3).padding(1).count_include_pad(false));
    (m.sum() + (a * a).sum()).backward();
    return {m, a, x.grad()};
  });
  expect_same_as_cpu("batch_norm", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 4);
    Tensor x = random_tensor({3, 4, 2, 3}, rng, on(d)).requires_grad_();
    Tensor w = random_tensor({4}, rng, on(d)).requires_grad_();
    Tensor b = random_tensor({4}, rng, on(d)).requires_grad_();
    Tensor r = random_tensor({3, 4, 2, 3}, rng, on(d)).requires_grad_();
    Tensor rm = zeros({4}, on(d)), rv = ones({4}, on(d));
    const Tensor y = batch_norm(x, rm, rv, w, b, true);
    const Tensor yr = batch_norm_relu(x, rm, rv, w, b, true);
    const Tensor yar = batch_norm_add_relu(x, r, rm, rv, w, b, true);
    (y * y + yr + yar * yar).sum().backward();
    const Tensor eval = batch_norm(x.detach(), rm, rv, w.detach(), b.detach(), false);
    return {y, yr, yar, x.grad(), r.grad(), w.grad(), b.grad(), rm, rv, eval};
  });
  expect_same_as_cpu("softmax and cross-entropy", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 5);
    Tensor x = random_tensor({4, 7}, rng, on(d), -3, 3).requires_grad_();
    const Tensor targets = from_vector(std::vector<std::int64_t>{6, 0, 3, 3}, {4}, on(d, DType::int64));
    const Tensor sm = softmax(x, 0), lsm = log_softmax(x.t(), 0);
    const Tensor ce = cross_entropy(x, targets, 0.1);
    ((sm * sm).sum() + lsm.sum() + ce).backward();
    return {sm, lsm, ce, x.grad()};
  });
  expect_same_as_cpu("dropout and random factories", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 6);
    Tensor x = random_tensor({5, 9}, rng, on(d)).requires_grad_();
    manual_seed(7);
    const Tensor y = dropout(x, 0.3, true);
    y.sum().backward();
    return {y, x.grad(), rand({3, 4}, on(d)), randn({7}, on(d, DType::float64)),
            arange(2, 11, 1.5, on(d))};
  });
}

TEST(CpuFallback, ConvolutionEveryCpuAlgorithmForwardAndBackward) {
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    if (!info.cpu) continue;
    expect_same_as_cpu(std::string(info.name).c_str(), [&](Device d) -> std::vector<Tensor> {
      std::mt19937_64 rng(testing::kSeed + 7);
      Tensor x = random_tensor({2, 3, 7, 6}, rng, on(d)).requires_grad_();
      Tensor w = random_tensor({4, 3, 3, 3}, rng, on(d)).requires_grad_();
      Tensor b = random_tensor({4}, rng, on(d)).requires_grad_();
      const Tensor y = conv2d(x, w, b, Conv2dParams().padding(1).algo(info.algo));
      (y * y).sum().backward();
      return {y, x.grad(), w.grad(), b.grad()};
    });
  }
}

TEST(CpuFallback, FusedOptimizerSteps) {
  expect_same_as_cpu("sgd and adam", [](Device d) -> std::vector<Tensor> {
    std::mt19937_64 rng(testing::kSeed + 8);
    Tensor p = random_tensor({3, 5}, rng, on(d)).requires_grad_();
    Tensor q = random_tensor({4}, rng, on(d, DType::float64)).requires_grad_();
    optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(0.9).nesterov().weight_decay(0.01));
    optim::Adam adam({q}, optim::AdamOptions(0.05).weight_decay(0.1));
    for (int step = 0; step < 3; ++step) {
      sgd.zero_grad();
      adam.zero_grad();
      (p * p).sum().backward();
      (q * q * q).sum().backward();
      sgd.step();
      adam.step();
    }
    return {p, q};
  });
}

// The warning names the device and the op, once per backend and op.
TEST(CpuFallback, WarnsOncePerBackendAndOp) {
  testing::HostOnlyBackend backend;  // a fresh one: no warning printed yet
  // Its memory is host memory, so cpu tensors can stand in for its own.
  const Tensor x = from_vector(std::vector<float>{-1, 2, -3}, {3});
  const Tensor out = empty({3});
  ::testing::internal::CaptureStderr();
  backend.unary(UnaryOp::relu, x, out);
  backend.unary(UnaryOp::neg, x, out);
  backend.fill(out, 5);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{5, 5, 5}));
  const std::string unary_warning = "convkit: sim has no unary kernel; running it on cpu";
  const std::size_t first = printed.find(unary_warning);
  ASSERT_NE(first, std::string::npos) << printed;
  EXPECT_EQ(printed.find(unary_warning, first + 1), std::string::npos) << printed;
  EXPECT_NE(printed.find("convkit: sim has no fill kernel"), std::string::npos) << printed;
}

// supports() is a promise: an op it claims but the backend does not override
// is an error, not a quiet fallback.
TEST(CpuFallback, ClaimingAnOpWithoutImplementingItIsAnError) {
  struct ClaimsUnary : testing::HostOnlyBackend {
    bool supports(BackendOp op) const override { return op == BackendOp::unary; }
  } backend;
  EXPECT_EQ(backend.fallbacks().size(), kBackendOpCount - 1);
  const Tensor x = zeros({2});
  EXPECT_TRUE(testing::throws_with([&] { backend.unary(UnaryOp::neg, x, x); },
                                   {"sim backend declares unary", "does not implement it"}));
}

}  // namespace
}  // namespace convkit
