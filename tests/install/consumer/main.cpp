#include <convkit/convkit.h>

#include <cstdio>
#include <string>

int main() {
  using namespace convkit;
  Tensor x = full({2, 3}, 2.0, TensorOptions().requires_grad());
  Tensor y = sum(x * x * x);  // dy/dx = 3x^2 = 12
  y.backward();
  std::printf("consumer ok: grad = %g (convkit %s)\n", x.grad().to_vector<double>()[0], CONVKIT_VERSION_STRING);
  // The backends registered themselves, also from the static archive.
  std::string line;
  for (const BackendInfo& info : list_backends())
    line += (line.empty() ? "" : ", ") + info.name + (info.usable ? " usable" : " not usable");
  std::printf("backends: %s\n", line.c_str());
  return 0;
}
