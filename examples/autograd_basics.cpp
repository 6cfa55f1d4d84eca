// A first tour of convkit: tensors, broadcasting, autograd and a hand-written
// training loop that fits a line by gradient descent.
//
// Build and run:  cmake --build --preset release && build/release/examples/autograd_basics
#include <convkit/convkit.h>

#include <cstdio>
#include <iostream>

using namespace convkit;

int main() {
  // 1. Tensors print like PyTorch's and broadcast like NumPy's.
  const Tensor a = arange(6).reshape({2, 3});
  const Tensor b = from_vector(std::vector<float>{10, 20, 30}, {3});
  std::cout << "a =\n" << a << "\na + b =\n" << a + b << "\n\n";

  // 2. Autograd: mark leaves with requires_grad, build an expression, call backward().
  Tensor x = full({3}, 2.0, TensorOptions().requires_grad());
  Tensor y = sum(x * x + pow(x, 3.0));
  y.backward();
  std::cout << "d/dx sum(x^2 + x^3) at x = 2: " << x.grad() << "  (expected 2x + 3x^2 = 16)\n\n";

  // 3. Fit y = 3x - 1 from noisy samples with plain gradient descent.
  manual_seed(0);
  const Tensor inputs = rand({256, 1}) * 4.0 - 2.0;
  const Tensor targets = inputs * 3.0 - 1.0 + randn({256, 1}) * 0.1;
  Tensor w = zeros({1, 1}, TensorOptions().requires_grad());
  Tensor bias = zeros({1}, TensorOptions().requires_grad());
  for (int step = 0; step <= 200; ++step) {
    const Tensor pred = matmul(inputs, w) + bias;
    Tensor loss = mean(square(pred - targets));
    loss.backward();
    {
      NoGradGuard no_grad;  // the update itself is not part of the graph
      w.sub_(w.grad() * 0.1);
      bias.sub_(bias.grad() * 0.1);
    }
    w.grad().zero_();
    bias.grad().zero_();
    if (step % 50 == 0) std::printf("step %3d  loss %.5f\n", step, loss.item());
  }
  std::printf("learned w = %.3f, b = %.3f (true: 3, -1)\n", w.item(), bias.item());
  return 0;
}
