#include "cpu_conv_pass.h"

#include <convkit/convkit.h>

#include "convkit/backend/backend.h"

namespace convkit::bench::testing {

PassData run_cpu_pass(const Conv2dDesc& d, ConvAlgo algo, ConvPass pass) {
  Backend& cpu = backend_for(kCPU);
  const Shape xs{d.N, d.C, d.H, d.W}, ws{d.K, d.C_per_group(), d.R, d.S}, ys{d.N, d.K, d.P(), d.Q()};
  const std::size_t ws_bytes = cpu.conv2d_workspace_bytes(algo, d, DType::float32, pass);
  const Tensor workspace = ws_bytes ? empty({static_cast<std::int64_t>(ws_bytes / 4 + 1)}) : Tensor();
  PassData data;
  switch (pass) {
    case ConvPass::forward: {
      const Tensor x = uniform(xs, -1, 1), w = uniform(ws, -1, 1), b = uniform({d.K}, -1, 1), y = empty(ys);
      cpu.conv2d_forward(algo, d, x, w, b, y, workspace);
      data = {x.to_vector<float>(), w.to_vector<float>(), b.to_vector<float>(), {}, y.to_vector<float>(), {}};
      break;
    }
    case ConvPass::backward_data: {
      const Tensor dy = uniform(ys, -1, 1), w = uniform(ws, -1, 1), dx = empty(xs);
      cpu.conv2d_backward_data(algo, d, dy, w, dx, workspace);
      data = {{}, w.to_vector<float>(), {}, dy.to_vector<float>(), dx.to_vector<float>(), {}};
      break;
    }
    case ConvPass::backward_weights: {
      const Tensor x = uniform(xs, -1, 1), dy = uniform(ys, -1, 1), dw = empty(ws), db = empty({d.K});
      cpu.conv2d_backward_weights(algo, d, x, dy, dw, db, workspace);
      data = {x.to_vector<float>(), {}, {}, dy.to_vector<float>(), dw.to_vector<float>(), db.to_vector<float>()};
      break;
    }
  }
  return data;
}

}  // namespace convkit::bench::testing
