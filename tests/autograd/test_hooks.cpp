// Post-accumulate-grad hooks and end-of-backward callbacks: what
// DistributedDataParallel builds its gradient buckets on.
#include <string>
#include <vector>

#include "support/support.h"

namespace convkit {
namespace {

TensorOptions grad64() { return TensorOptions().dtype(DType::float64).requires_grad(); }

TEST(AutogradHooks, PostAccumulateHookSeesTheAccumulatedGradient) {
  Tensor w = from_vector(std::vector<double>{1, 2}, {2}, grad64());
  std::vector<std::vector<double>> seen;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) {
    EXPECT_TRUE(leaf.same(w));  // a handle on the leaf itself
    seen.push_back(leaf.grad().to_vector<double>());
  });
  // Two uses in one pass: the engine sums them first, so the hook runs once.
  sum(w * 3.0 + w).backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{4, 4}));
  // The AccumulateGrad node of the first graph is gone; the hook is not.
  sum(w * 2.0).backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<double>{6, 6}));  // after accumulation
}

TEST(AutogradHooks, HooksRunInRegistrationOrderAndCanBeRemoved) {
  Tensor w = ones({3}, grad64());
  std::string order;
  const auto a = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "a"; });
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "b"; });
  sum(w).backward();
  EXPECT_EQ(order, "ab");
  autograd::remove_post_accumulate_grad_hook(w, a);
  autograd::remove_post_accumulate_grad_hook(w, a);  // twice is harmless
  sum(w).backward();
  EXPECT_EQ(order, "abb");
}

TEST(AutogradHooks, NoHookWhenTheLeafGetsNoGradient) {
  Tensor used = ones({2}, grad64());
  Tensor unused = ones({2}, grad64());
  int calls = 0;
  autograd::register_post_accumulate_grad_hook(unused, [&](const Tensor&) { ++calls; });
  sum(used * 2.0).backward();
  EXPECT_EQ(calls, 0);
}

TEST(AutogradHooks, RefusedOnTensorsThatAccumulateNothing) {
  const auto noop = [](const Tensor&) {};
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(ones({2}), noop), Error);
  Tensor w = ones({2}, grad64());
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(w * 2.0, noop), Error);
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(w, nullptr), Error);
}

TEST(AutogradHooks, QueuedCallbackRunsAfterEveryNode) {
  Tensor a = ones({2}, grad64());
  Tensor b = ones({2}, grad64());
  std::vector<std::string> events;
  bool queued = false;
  // Queued by whichever leaf is accumulated first; the other's gradient
  // arrives later in the same pass, and the callback must still see it.
  const auto hook = [&](const std::string& name) {
    return [&, name](const Tensor&) {
      events.push_back(name);
      if (queued) return;
      queued = true;
      autograd::queue_callback([&] {
        events.push_back("end");
        EXPECT_TRUE(a.grad().defined());
        EXPECT_TRUE(b.grad().defined());
        // A callback may queue another; it runs in the same pass.
        autograd::queue_callback([&] { events.push_back("end2"); });
      });
    };
  };
  autograd::register_post_accumulate_grad_hook(a, hook("a"));
  autograd::register_post_accumulate_grad_hook(b, hook("b"));
  Tensor hb = b * 2.0;
  sum(a * 3.0 + hb * hb).backward();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(events.begin() + 2, events.end()), (std::vector<std::string>{"end", "end2"}));
  // The queue belongs to one pass: the next pass runs no old callback.
  events.clear();
  sum(b).backward();
  EXPECT_EQ(events, (std::vector<std::string>{"b"}));
}

TEST(AutogradHooks, QueueCallbackOutsideBackwardIsAnError) {
  try {
    autograd::queue_callback([] {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no backward pass is running"), std::string::npos);
  }
}

TEST(AutogradHooks, AFailedPassDropsItsCallbacks) {
  Tensor w = ones({2}, grad64());
  int ran = 0;
  const auto h = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    autograd::queue_callback([&] { ++ran; });
    throw Error("hook failed");
  });
  EXPECT_THROW(sum(w).backward(), Error);
  EXPECT_EQ(ran, 0);
  autograd::remove_post_accumulate_grad_hook(w, h);
  // And the thread is no longer inside a backward.
  EXPECT_THROW(autograd::queue_callback([] {}), Error);
}

}  // namespace
}  // namespace convkit
