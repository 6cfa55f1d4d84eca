// The non-convolution layers of a CNN, forward and backward, at the backend
// kernel level on preallocated tensors: max and average pooling, batch norm
// (training), dropout, dense and fused softmax + cross-entropy. Shapes are
// those of the zoo models at batch 128 (--batch-scale / --max-batch shrink
// them). Names: layers/<layer>/<shape>/<device>/<fwd|bwd>.
//
// Most of these layers are memory-bound, so each benchmark states its byte
// floor: the bytes the pass must read and write at least (every operand
// once; a real kernel may need more, e.g. batch norm reads x twice because
// the statistics must be complete before anything is normalised).
// bytes_per_second is floor_bytes per second: compare it with the memcpy
// bandwidth of bench_core. Dense is compute-bound: gflops (2*N*in*out
// forward, twice that backward). The timed loop cycles through operand
// copies (--rotate-mib) so that the caches start cold; a cuda device is
// timed with CUDA events. sim, when asked for, runs one iteration and its time
// means nothing for a GPU.
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include <cstdio>
#include <functional>
#include <map>
#include <memory>

#include "convkit/backend/backend.h"
#include "layer_sets.h"
#include "suite_support.h"

using namespace convkit;
using namespace convkit::bench;

namespace {

enum class Pass { forward, backward };

// One instance of a layer's operands on a device; rotated by the timed loop.
class LayerInstance {
 public:
  virtual ~LayerInstance() = default;
  virtual void run(Backend& backend, Pass pass) = 0;
};

struct LayerKind {
  std::string name, shape;  // shape of one image (or row), for the benchmark name
  // Floors per pass at batch n.
  std::function<double(std::int64_t n, Pass)> floor_bytes, flops;
  std::function<std::unique_ptr<LayerInstance>(std::int64_t n, Device)> make;
};

TensorOptions on(Device d) { return TensorOptions().device(d); }
TensorOptions on(Device d, DType t) { return TensorOptions().device(d).dtype(t); }
double f32(double elements) { return 4 * elements; }

// ---- pooling
struct PoolInstance : LayerInstance {
  bool max;
  PoolWindow window;
  Tensor x, out, argmax, grad_out, grad_in;
  PoolInstance(bool is_max, PoolWindow w, const Shape& xs, std::int64_t p, std::int64_t q, Device d)
      : max(is_max), window(w) {
    x = uniform(xs, -1, 1, on(d));
    const Shape ys{xs[0], xs[1], p, q};
    out = empty(ys, on(d));
    argmax = zeros(ys, on(d, DType::int64));
    grad_out = uniform(ys, -1, 1, on(d));
    grad_in = empty(xs, on(d));
  }
  void run(Backend& b, Pass pass) override {
    if (pass == Pass::forward) {
      if (max) b.max_pool2d_forward(x, out, argmax, window);
      else b.avg_pool2d_forward(x, out, window);
    } else {
      if (max) b.max_pool2d_backward(grad_out, argmax, grad_in, window);
      else b.avg_pool2d_backward(grad_out, grad_in, window);
    }
  }
};

LayerKind pool(bool max, std::int64_t c, std::int64_t h, std::int64_t k, std::int64_t s) {
  PoolWindow w;
  w.kernel_h = w.kernel_w = k;
  w.stride_h = w.stride_w = s;
  const std::int64_t p = (h - k) / s + 1;
  LayerKind kind;
  kind.name = std::string(max ? "maxpool" : "avgpool") + std::to_string(k) + "x" + std::to_string(k) + "s" +
              std::to_string(s);
  kind.shape = std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(h);
  const double in_per_image = static_cast<double>(c * h * h), out_per_image = static_cast<double>(c * p * p);
  kind.floor_bytes = [=](std::int64_t n, Pass) {
    // max pooling keeps an int64 argmax per output for its backward.
    const double index_bytes = max ? 8 * out_per_image * n : 0;
    return f32((in_per_image + out_per_image) * n) + index_bytes;
  };
  kind.flops = [=](std::int64_t n, Pass pass) {
    return max ? 0.0 : (pass == Pass::forward ? out_per_image * n * k * k : in_per_image * n);
  };
  kind.make = [=](std::int64_t n, Device d) {
    return std::make_unique<PoolInstance>(max, w, Shape{n, c, h, h}, p, p, d);
  };
  return kind;
}

// ---- batch norm, training mode
struct BatchNormInstance : LayerInstance {
  Tensor x, out, mean, var, scale, shift, invstd, weight, grad_out, sum_dy, sum_dy_xmu, grad_in;
  BatchNormInstance(const Shape& xs, Device d) {
    const std::int64_t c = xs[1];
    x = uniform(xs, -1, 1, on(d));
    out = empty(xs, on(d));
    mean = empty({c}, on(d));
    var = empty({c}, on(d));
    scale = uniform({c}, 0.5, 1.5, on(d));
    shift = uniform({c}, -1, 1, on(d));
    invstd = uniform({c}, 0.5, 1.5, on(d));
    weight = uniform({c}, 0.5, 1.5, on(d));
    grad_out = uniform(xs, -1, 1, on(d));
    sum_dy = empty({c}, on(d));
    sum_dy_xmu = empty({c}, on(d));
    grad_in = empty(xs, on(d));
  }
  // The per-channel arithmetic between the kernels ([C] tensors) is left out.
  void run(Backend& b, Pass pass) override {
    if (pass == Pass::forward) {
      b.batch_norm_stats(x, mean, var);
      b.batch_norm_affine(x, scale, shift, /*relu=*/false, out);
    } else {
      b.batch_norm_backward_reduce(grad_out, x, mean, sum_dy, sum_dy_xmu);
      b.batch_norm_backward_input(grad_out, x, mean, invstd, weight, sum_dy, sum_dy_xmu, grad_in);
    }
  }
};

LayerKind batch_norm(std::int64_t c, std::int64_t h) {
  LayerKind kind;
  kind.name = h == 1 ? "batchnorm1d" : "batchnorm2d";
  kind.shape = std::to_string(c) + (h == 1 ? "" : "x" + std::to_string(h) + "x" + std::to_string(h));
  const double per_image = static_cast<double>(c * h * h);
  // forward: read x, write y; backward: read dy and x, write dx.
  kind.floor_bytes = [=](std::int64_t n, Pass pass) { return f32(per_image * n * (pass == Pass::forward ? 2 : 3)); };
  // forward: sum, sum of squares, then one multiply-add; backward: two sums, then ~6 per element.
  kind.flops = [=](std::int64_t n, Pass pass) { return per_image * n * (pass == Pass::forward ? 5 : 10); };
  kind.make = [=](std::int64_t n, Device d) {
    return std::make_unique<BatchNormInstance>(h == 1 ? Shape{n, c} : Shape{n, c, h, h}, d);
  };
  return kind;
}

// ---- dropout: draw the mask and apply it; backward applies the same mask.
struct DropoutInstance : LayerInstance {
  double p;
  Tensor x, mask, out, grad_out, grad_in;
  std::uint64_t offset = 0;
  DropoutInstance(double prob, const Shape& xs, Device d) : p(prob) {
    x = uniform(xs, -1, 1, on(d));
    mask = empty(xs, on(d));
    out = empty(xs, on(d));
    grad_out = uniform(xs, -1, 1, on(d));
    grad_in = empty(xs, on(d));
  }
  void run(Backend& b, Pass pass) override {
    if (pass == Pass::forward) {
      b.dropout_mask(mask, 1234, offset, p);
      offset += static_cast<std::uint64_t>(mask.numel());
      b.binary(BinaryOp::mul, x, mask, out);
    } else {
      b.binary(BinaryOp::mul, grad_out, mask, grad_in);
    }
  }
};

LayerKind dropout(double p, const Shape& per_image) {
  LayerKind kind;
  kind.name = "dropout" + std::to_string(static_cast<int>(p * 100));
  for (std::int64_t s : per_image) {
    if (!kind.shape.empty()) kind.shape += 'x';
    kind.shape += std::to_string(s);
  }
  const double elements = static_cast<double>(per_image.numel());
  // forward: read x, write the mask (kept for backward) and y; backward: read dy and the mask, write dx.
  kind.floor_bytes = [=](std::int64_t n, Pass) { return f32(elements * n * 3); };
  kind.flops = [](std::int64_t, Pass) { return 0.0; };
  kind.make = [=](std::int64_t n, Device d) {
    std::vector<std::int64_t> dims{n};
    dims.insert(dims.end(), per_image.begin(), per_image.end());
    return std::make_unique<DropoutInstance>(p, Shape(dims), d);
  };
  return kind;
}

// ---- dense: y = x w^T + b; backward dx = dy w, dw = dy^T x, db = sum dy.
struct DenseInstance : LayerInstance {
  Tensor x, w, b, mm, y, dy, dx, dw, db;
  DenseInstance(std::int64_t n, std::int64_t in, std::int64_t out, Device d) {
    x = uniform({1, n, in}, -1, 1, on(d));
    w = uniform({out, in}, -1, 1, on(d));
    b = uniform({out}, -1, 1, on(d));
    mm = empty({1, n, out}, on(d));
    y = empty({1, n, out}, on(d));
    dy = uniform({1, n, out}, -1, 1, on(d));
    dx = empty({1, n, in}, on(d));
    dw = empty({1, out, in}, on(d));
    db = empty({1, 1, out}, on(d));
  }
  void run(Backend& be, Pass pass) override {
    if (pass == Pass::forward) {
      be.matmul(x, w.t().unsqueeze(0), mm);
      be.binary(BinaryOp::add, mm, b.view({1, 1, b.size(0)}).expand(mm.shape()), y);
    } else {
      be.matmul(dy, w.unsqueeze(0), dx);
      be.matmul(dy.transpose(1, 2), x, dw);
      be.reduce(ReduceOp::sum, dy, db);
    }
  }
};

LayerKind dense(std::int64_t in, std::int64_t out) {
  LayerKind kind;
  kind.name = "dense";
  kind.shape = std::to_string(in) + "to" + std::to_string(out);
  const double weights = static_cast<double>(in * out);
  kind.floor_bytes = [=](std::int64_t n, Pass pass) {
    const double io = static_cast<double>(n * (in + out));
    return f32(pass == Pass::forward ? io + weights + out : io + static_cast<double>(n * out) + weights + out);
  };
  kind.flops = [=](std::int64_t n, Pass pass) { return 2.0 * n * weights * (pass == Pass::forward ? 1 : 2); };
  kind.make = [=](std::int64_t n, Device d) { return std::make_unique<DenseInstance>(n, in, out, d); };
  return kind;
}

// ---- fused log-softmax + NLL over [N, classes]
struct SoftmaxXentInstance : LayerInstance {
  Tensor logits, targets, loss, lse, grad_loss, grad_logits;
  SoftmaxXentInstance(std::int64_t n, std::int64_t classes, Device d) {
    logits = uniform({n, classes}, -3, 3, on(d));
    std::vector<std::int64_t> t(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::int64_t>(i * 7919) % classes;
    targets = from_vector(t, {n}, on(d, DType::int64));
    loss = empty({n}, on(d));
    lse = empty({n}, on(d));
    grad_loss = full({n}, 1.0 / static_cast<double>(n), on(d));
    grad_logits = empty({n, classes}, on(d));
  }
  void run(Backend& b, Pass pass) override {
    if (pass == Pass::forward) b.cross_entropy_forward(logits, targets, 0.0, loss, lse);
    else b.cross_entropy_backward(logits, targets, lse, grad_loss, 0.0, grad_logits);
  }
};

LayerKind softmax_xent(std::int64_t classes) {
  LayerKind kind;
  kind.name = "softmax-xent";
  kind.shape = std::to_string(classes);
  kind.floor_bytes = [=](std::int64_t n, Pass pass) {
    const double per_row = static_cast<double>(classes);
    // forward: read logits and targets, write loss and lse; backward: also write the gradient.
    return n * (f32(per_row) + 8 + f32(2) + (pass == Pass::backward ? f32(per_row) + f32(1) : 0));
  };
  kind.flops = [](std::int64_t, Pass) { return 0.0; };
  kind.make = [=](std::int64_t n, Device d) { return std::make_unique<SoftmaxXentInstance>(n, classes, d); };
  return kind;
}

// The layers of the zoo models around their convolutions.
std::vector<LayerKind> layer_kinds() {
  return {
      pool(true, 32, 30, 2, 2),    // cifar10-cnn pool 1
      pool(true, 64, 13, 2, 2),    // cifar10-cnn pool 2
      pool(true, 64, 85, 2, 2),    // datamadness-cnn pool 2 (85 -> 42)
      pool(false, 64, 32, 2, 2),
      batch_norm(64, 32),          // resnet18-cifar layer1
      batch_norm(512, 4),          // resnet18-cifar layer4
      batch_norm(1024, 1),         // datamadness-cnn dense head
      dropout(0.25, Shape{32, 15, 15}),  // cifar10-cnn after pool 1
      dropout(0.5, Shape{512}),          // cifar10-cnn dense head
      dense(2304, 512),            // cifar10-cnn
      dense(512, 10),
      softmax_xent(10),
      softmax_xent(1000),
  };
}

void run_layer(benchmark::State& state, const LayerKind& kind, std::int64_t n, Device device, Pass pass,
               std::size_t rotate_bytes) {
  try {
    Backend& backend = backend_for(device);
    const double floor = kind.floor_bytes(n, pass), flops = kind.flops(n, pass);
    const int rotation = timing_meaningful(device) ? rotation_count(static_cast<std::size_t>(floor), rotate_bytes) : 1;
    std::vector<std::unique_ptr<LayerInstance>> copies;
    for (int i = 0; i < rotation; ++i) copies.push_back(kind.make(n, device));
    // Warm-up; the backward of each copy reads what its forward wrote.
    for (auto& c : copies) c->run(backend, Pass::forward);
    for (auto& c : copies) c->run(backend, pass);
    backend.synchronize();
    std::unique_ptr<GpuEventTimer> events;
    if (uses_events(device)) events = std::make_unique<GpuEventTimer>();
    std::size_t i = 0;
    for (auto _ : state) {
      LayerInstance& copy = *copies[i++ % copies.size()];
      if (events) {
        events->start();
        copy.run(backend, pass);
        state.SetIterationTime(events->stop_seconds());
      } else {
        copy.run(backend, pass);
        if (device.type != DeviceType::cpu) backend.synchronize();
      }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(floor * static_cast<double>(state.iterations())));
    state.counters["floor_bytes"] = floor;
    if (flops > 0) {
      state.counters["gflops"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
      state.counters["flop_per_byte"] = flops / floor;
    }
    std::string label = "N=" + std::to_string(n) + " rotation=" + std::to_string(rotation);
    if (!timing_meaningful(device)) label += std::string(" | ") + kSimLabel;
    state.SetLabel(label);
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("error: ") + e.what()).c_str());
  }
}

const std::map<std::string, std::string> kFlags = {
    {"batch-scale", "multiply the batch of 128 by this, rounding, at least 1 (default 1)"},
    {"max-batch", "cap the batch at this (default: no cap)"},
    {"devices", "comma-separated devices: cpu, sim, cuda[:N] (default cpu and every usable cuda)"},
    {"rotate-mib", "operand copies to cycle through, in MiB, so the caches start cold (default 64)"},
};

}  // namespace

int main(int argc, char** argv) {
  Flags::print_help_if_requested(argc, argv, kFlags,
                                 "pooling, batch norm, dropout, dense, softmax-xent: forward and backward");
  benchmark::Initialize(&argc, argv);
  try {
    const Flags flags(argc, argv, kFlags);
    const BatchScaling batch{flags.get_double("batch-scale", 1.0), flags.get_int("max-batch", 0)};
    const std::int64_t n = batch.apply(128);
    const double rotate_mib = flags.get_double("rotate-mib", 64);
    CK_CHECK(rotate_mib >= 0, "--rotate-mib must be >= 0, got ", rotate_mib);
    add_machine_context();
    benchmark::AddCustomContext("batch", std::to_string(n));
    const std::vector<Device> devices = usable_devices(flags.get_list("devices", {}));
    for (const LayerKind& kind : layer_kinds())
      for (const Device& device : devices)
        for (Pass pass : {Pass::forward, Pass::backward}) {
          const std::string name = "layers/" + kind.name + "/" + kind.shape + "/" + device.str() + "/" +
                                   (pass == Pass::forward ? "fwd" : "bwd");
          auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
            run_layer(s, kind, n, device, pass, static_cast<std::size_t>(rotate_mib * (1 << 20)));
          });
          b->Unit(benchmark::kMicrosecond);
          if (uses_events(device)) b->UseManualTime();
          else b->UseRealTime();
          if (!timing_meaningful(device)) b->Iterations(1);
        }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_layers: %s\n", e.what());
    return 2;
  }
  return run_benchmarks();
}
