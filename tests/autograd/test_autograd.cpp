#include "support/support.h"

namespace convkit {
namespace {

TensorOptions grad64() { return TensorOptions().dtype(DType::float64).requires_grad(); }

TEST(Autograd, ChainRuleAndAccumulationIntoLeaves) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3}, {3}, grad64());
  // y = sum(x * x + 3x) -> dy/dx = 2x + 3; used twice, so gradients add.
  Tensor y = sum(x * x + x * 3.0);
  y.backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{5, 7, 9}));
  sum(x).backward();  // accumulates
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6, 8, 10}));
  x.grad().zero_();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

// Leaves may keep the incoming gradient's buffer instead of a copy, but
// only where nothing else shares it: add passes one gradient tensor to both
// of its inputs, and the caller keeps the one it passes to backward.
TEST(Autograd, LeafGradientsNeverShareABuffer) {
  Tensor a = from_vector(std::vector<double>{1, 2}, {2}, grad64());
  Tensor b = from_vector(std::vector<double>{3, 4}, {2}, grad64());
  Tensor seed = from_vector(std::vector<double>{1, 10}, {2}, DType::float64);
  (a + b).backward(seed);
  a.grad().add_(100.0);
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1, 10}));
  EXPECT_EQ(seed.to_vector<double>(), (std::vector<double>{1, 10}));
  Tensor c = from_vector(std::vector<double>{5, 6}, {2}, grad64());
  Tensor y = c * 1.0;
  y.backward(seed);
  c.grad().add_(1.0);
  EXPECT_EQ(seed.to_vector<double>(), (std::vector<double>{1, 10}));
  // A fresh product kept as the grad still accumulates the next backward.
  Tensor w = from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2}, grad64());
  Tensor x = from_vector(std::vector<double>{1, 1}, {1, 2}, DType::float64);
  sum(matmul(x, w)).backward();
  sum(matmul(x, w)).backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{2, 2, 2, 2}));
}

// relu and dropout overwrite a gradient in place only when nothing else
// sees it: here add hands one tensor to both branches, and sum's gradient
// is an expanded view of one value.
TEST(Autograd, InPlaceBackwardsLeaveSharedGradientsAlone) {
  Tensor x = from_vector(std::vector<double>{-1, 2, -3, 4}, {4}, grad64());
  Tensor a = x * 1.0;
  (sum((relu(a) + a) * 2.0)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 4, 2, 4}));
  Tensor z = from_vector(std::vector<double>{-1, 2}, {2}, grad64());
  sum(relu(z * 1.0)).backward();
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{0, 1}));
  Tensor d = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {8}, grad64());
  Tensor kept = dropout(d * 1.0, 0.5, true);
  (sum((kept + d) * 3.0)).backward();
  const std::vector<double> kv = kept.detach().to_vector<double>(), dg = d.grad().to_vector<double>();
  for (std::size_t i = 0; i < kv.size(); ++i) EXPECT_EQ(dg[i], kv[i] != 0 ? 3.0 * 2.0 + 3.0 : 3.0) << i;
}

TEST(Autograd, DiamondGraphsAndViewsRouteGradientsCorrectly) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}, grad64());
  Tensor a = x.t();                   // [3, 2]
  Tensor b = x.slice(1, 0, 2);        // [2, 2]
  Tensor y = sum(matmul(b, a.slice(0, 1, 3)) ) + sum(x.reshape({6}).narrow(0, 4, 2));
  y.backward();
  EXPECT_TRUE(testing::grad_ok([](const auto& in) {
    return sum(matmul(in[0].slice(1, 0, 2), in[0].t().slice(0, 1, 3))) + sum(in[0].reshape({6}).narrow(0, 4, 2));
  }, {x}));
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Tensor x = ones({2}, grad64());
  Tensor y = x * 2.0;
  EXPECT_THROW(y.backward(), Error);
  y.backward(from_vector(std::vector<double>{1, 10}, {2}, DType::float64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 20}));
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = from_vector(std::vector<double>{2}, {1}, grad64());
  Tensor y = sum(x * x);
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(x.grad().item(), 8.0);
  try {
    y.backward();
    FAIL() << "expected an error on a third backward through freed buffers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos) << e.what();
  }
}

TEST(Autograd, InPlaceWriteToASavedTensorIsCaught) {
  Tensor x = from_vector(std::vector<double>{1, 2}, {2}, grad64());
  Tensor h = x * 1.0;
  Tensor y = sum(h * h);  // saves h
  h.add_(1.0);            // version bump
  try {
    y.backward();
    FAIL() << "expected a version-counter error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in-place"), std::string::npos) << e.what();
  }
}

TEST(Autograd, InPlaceOpsOnIntermediatesAreDifferentiable) {
  EXPECT_TRUE(testing::grad_ok([](const auto& in) {
    // Ops that save their result (relu_, div_) come last on their tensor:
    // writing to it again would invalidate what they saved.
    Tensor h = in[0] * 2.0;
    h.add_(in[1], 0.5);
    h.mul_(3.0);
    h.sub_(in[0]);
    h.add_(0.25);
    h.mul_(in[1]);
    h.div_(in[1] + 3.0);
    Tensor r = in[0] * 1.0;
    r.relu_();
    return h + r;
  }, {from_vector(std::vector<double>{0.3, -0.8, 1.2}, {3}, grad64()),
      from_vector(std::vector<double>{0.7, 0.1, -0.4}, {3}, grad64())}));
}

TEST(Autograd, InPlaceOnALeafThatRequiresGradIsRefused) {
  Tensor w = ones({2}, grad64());
  EXPECT_THROW(w.add_(1.0), Error);
  EXPECT_THROW(w.fill_(0), Error);
  {
    NoGradGuard no_grad;  // the optimizer's way
    w.add_(1.0);
  }
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(Autograd, NoGradAndDetachCutTheGraph) {
  Tensor x = ones({2}, grad64());
  {
    NoGradGuard no_grad;
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
  const Tensor d = (x * 2.0).detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_THROW(sum(d).backward(), Error);
}

TEST(Autograd, UnusedBranchesDoNotBlockOtherGradients) {
  Tensor x = ones({2}, grad64());
  Tensor z = ones({2}, grad64());
  Tensor unused = z * 3.0;           // part of no path to y
  Tensor m = max(x * unused, 0);     // gradient reaches unused only at the argmax
  Tensor y = m + sum(x);
  y.backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 1}));
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{3, 0}));
}

TEST(Autograd, GradcheckCatchesAWrongGradient) {
  // A deliberately wrong backward must fail gradcheck: the checker can fail.
  auto wrong_square = [](const std::vector<Tensor>& in) {
    Tensor out = in[0].detach() * in[0].detach();
    return autograd::record(out, "WrongSquareBackward", {in[0]},
                            [](const Tensor& g) { return std::vector<Tensor>{g * 3.0}; });
  };
  const auto r = autograd::gradcheck(wrong_square, {from_vector(std::vector<double>{0.5, 1.5}, {2}, grad64())});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("analytic"), std::string::npos);
}

TEST(Autograd, IntegerTensorsCannotRequireGrad) {
  EXPECT_THROW(arange(3, DType::int64).requires_grad_(), Error);
}

}  // namespace
}  // namespace convkit
