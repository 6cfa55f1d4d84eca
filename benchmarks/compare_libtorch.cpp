// convkit against libtorch (with its oneDNN) on the CPU, side by side: the
// same networks, built once in each library, trained on the same random
// batches with forward + cross-entropy + backward + SGD step (momentum 0.9),
// alternately (A B A B ...) in one process, on the same threads. Alternating
// rounds spreads any drift of the machine (frequency, a neighbour's load)
// over both libraries, so the ratio is trustworthy even when the absolute
// figures are noisy.
//
// Run it through benchmarks/compare_libtorch.sh, which tunes libtorch the way
// the anchor measured it: libtcmalloc_minimal preloaded (glibc's
// malloc page-faults its large activations every step) and
// OPENBLAS_NUM_THREADS=1 (OpenBLAS threads fight the OpenMP ones).
//
// usage: compare_libtorch [--models a,b] [--batches 32,128] [--rounds R]
//                         [--steps S] [--threads T] [--json FILE]
//                         [--conv-algo NAME]  (automatic or a name of convkit/conv/algorithms.h)
// --conv-algo sets every convkit convolution's algorithm (default automatic,
// the heuristic); where an algorithm cannot run a layer, training fails with
// the reason.
#include <omp.h>
#include <torch/torch.h>

#include <convkit/convkit.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "convkit/models/zoo.h"
#include "convkit/train/loss.h"

namespace {

namespace tnn = torch::nn;

struct Options {
  std::vector<std::string> models{"cifar10-cnn", "cifar10-cnn-bn", "fmnist-cnn"};
  std::vector<std::int64_t> batches{32, 128};
  int rounds = 5, steps = 5, threads = 2, warmup = 2;
  std::string json;
  convkit::ConvAlgo conv_algo = convkit::ConvAlgo::automatic;
};

// The network descriptions, one per library. Every layer is the same: the
// convkit side is the zoo model (or its spec text), the torch side is written
// out layer by layer from models.md.
struct Network {
  std::string name;
  std::vector<std::int64_t> input;  // C, H, W
  std::int64_t classes;
  std::string convkit_spec;         // empty: models::create(name)
};

const std::vector<Network>& networks() {
  static const std::vector<Network> all = {
      {"fmnist-cnn", {1, 28, 28}, 10, ""},
      {"cifar10-cnn", {3, 32, 32}, 10, ""},
      // Keras' cifar10_cnn with BatchNorm between each conv (and the hidden
      // dense layer) and its ReLU; no zoo entry, so it is given as spec text.
      {"cifar10-cnn-bn", {3, 32, 32}, 10,
       "Sequential(Conv2d(3, 32, 3, padding=same, init=keras), BatchNorm2d(32), ReLU(),"
       " Conv2d(32, 32, 3, init=keras), BatchNorm2d(32), ReLU(), MaxPool2d(2), Dropout(0.25),"
       " Conv2d(32, 64, 3, padding=same, init=keras), BatchNorm2d(64), ReLU(),"
       " Conv2d(64, 64, 3, init=keras), BatchNorm2d(64), ReLU(), MaxPool2d(2), Dropout(0.25),"
       " Flatten(), Linear(2304, 512, init=keras), BatchNorm1d(512), ReLU(), Dropout(0.5),"
       " Linear(512, 10, init=keras))"},
  };
  return all;
}

tnn::Conv2d torch_conv(std::int64_t in, std::int64_t out, bool same) {
  return tnn::Conv2d(tnn::Conv2dOptions(in, out, 3).padding(same ? 1 : 0));
}

tnn::Sequential torch_network(const std::string& name) {
  tnn::Sequential s;
  if (name == "fmnist-cnn") {
    s->push_back(torch_conv(1, 32, true)), s->push_back(tnn::ReLU()), s->push_back(tnn::MaxPool2d(2));
    s->push_back(torch_conv(32, 64, true)), s->push_back(tnn::ReLU()), s->push_back(tnn::MaxPool2d(2));
    s->push_back(tnn::Flatten()), s->push_back(tnn::Linear(3136, 128)), s->push_back(tnn::ReLU());
    s->push_back(tnn::Dropout(0.25)), s->push_back(tnn::Linear(128, 10));
    return s;
  }
  const bool bn = name == "cifar10-cnn-bn";
  auto conv = [&](std::int64_t in, std::int64_t out, bool same) {
    s->push_back(torch_conv(in, out, same));
    if (bn) s->push_back(tnn::BatchNorm2d(out));
    s->push_back(tnn::ReLU());
  };
  conv(3, 32, true), conv(32, 32, false);
  s->push_back(tnn::MaxPool2d(2)), s->push_back(tnn::Dropout(0.25));
  conv(32, 64, true), conv(64, 64, false);
  s->push_back(tnn::MaxPool2d(2)), s->push_back(tnn::Dropout(0.25));
  s->push_back(tnn::Flatten()), s->push_back(tnn::Linear(2304, 512));
  if (bn) s->push_back(tnn::BatchNorm1d(512));
  s->push_back(tnn::ReLU()), s->push_back(tnn::Dropout(0.5)), s->push_back(tnn::Linear(512, 10));
  return s;
}

std::int64_t torch_parameter_count(const tnn::Sequential& s) {
  std::int64_t n = 0;
  for (const auto& p : s->parameters()) n += p.numel();
  return n;
}

// One side of the comparison: runs `steps` training steps and reports the
// seconds they took.
class Side {
 public:
  virtual ~Side() = default;
  virtual double run(int steps) = 0;
  virtual std::int64_t parameters() const = 0;
};

class TorchSide : public Side {
 public:
  TorchSide(const Network& n, std::int64_t batch)
      : net_(torch_network(n.name)),
        opt_(net_->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)) {
    std::vector<std::int64_t> shape{batch};
    shape.insert(shape.end(), n.input.begin(), n.input.end());
    x_ = torch::rand(shape);
    y_ = torch::randint(n.classes, {batch}, torch::kLong);
    net_->train();
  }
  double run(int steps) override {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      opt_.zero_grad();
      torch::nn::functional::cross_entropy(net_->forward(x_), y_).backward();
      opt_.step();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::int64_t parameters() const override { return torch_parameter_count(net_); }

 private:
  tnn::Sequential net_;
  torch::optim::SGD opt_;
  torch::Tensor x_, y_;
};

class ConvkitSide : public Side {
 public:
  ConvkitSide(const Network& n, std::int64_t batch, convkit::ConvAlgo algo)
      : net_(n.convkit_spec.empty() ? convkit::models::create(n.name)
                                    : convkit::nn::build_module(n.convkit_spec)),
        opt_(net_->parameters(), convkit::optim::SGDOptions(0.01).momentum(0.9)) {
    convkit::nn::set_conv_algo(*net_, algo);
    std::vector<std::int64_t> shape{batch};
    shape.insert(shape.end(), n.input.begin(), n.input.end());
    x_ = convkit::uniform(convkit::Shape(shape), 0, 1);
    std::vector<std::int64_t> labels(static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
    y_ = convkit::from_vector(labels, {batch}, convkit::TensorOptions().dtype(convkit::DType::int64));
    net_->train();
  }
  double run(int steps) override {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      opt_.zero_grad();
      convkit::train::compute_loss(convkit::train::LossKind::cross_entropy, net_->forward(x_), y_)
          .backward();
      opt_.step();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::int64_t parameters() const override {
    std::int64_t n = 0;
    for (const auto& p : net_->parameters()) n += p.numel();
    return n;
  }

 private:
  std::shared_ptr<convkit::nn::Module> net_;
  convkit::optim::SGD opt_;
  convkit::Tensor x_, y_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Row {
  std::string model;
  std::int64_t batch, params;
  double torch_ips, convkit_ips;
  std::vector<double> torch_rounds, convkit_rounds;
};

Row compare(const Network& n, std::int64_t batch, const Options& o) {
  TorchSide torch_side(n, batch);
  ConvkitSide convkit_side(n, batch, o.conv_algo);
  if (torch_side.parameters() != convkit_side.parameters()) {
    std::ostringstream msg;
    msg << n.name << ": the two networks differ: libtorch has " << torch_side.parameters()
        << " trainable parameters, convkit " << convkit_side.parameters();
    throw std::runtime_error(msg.str());
  }
  torch_side.run(o.warmup);
  convkit_side.run(o.warmup);
  Row r{n.name, batch, convkit_side.parameters(), 0, 0, {}, {}};
  const double images = static_cast<double>(batch) * o.steps;
  for (int i = 0; i < o.rounds; ++i) {
    r.torch_rounds.push_back(images / torch_side.run(o.steps));
    r.convkit_rounds.push_back(images / convkit_side.run(o.steps));
  }
  r.torch_ips = median(r.torch_rounds);
  r.convkit_ips = median(r.convkit_rounds);
  return r;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    auto positive = [&](const std::string& v) {
      const int n = std::stoi(v);
      if (n < 1) throw std::runtime_error(a + " must be >= 1, got " + v);
      return n;
    };
    if (a == "--models") {
      o.models = split(value());
    } else if (a == "--batches") {
      o.batches.clear();
      for (const auto& b : split(value())) o.batches.push_back(positive(b));
    } else if (a == "--rounds") {
      o.rounds = positive(value());
    } else if (a == "--steps") {
      o.steps = positive(value());
    } else if (a == "--threads") {
      o.threads = positive(value());
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--conv-algo") {
      o.conv_algo = convkit::parse_conv_algo(value());
    } else {
      throw std::runtime_error("unknown argument '" + a + "' (see the comment at the top of compare_libtorch.cpp)");
    }
  }
  for (const auto& m : o.models) {
    const bool known = std::any_of(networks().begin(), networks().end(),
                                   [&](const Network& n) { return n.name == m; });
    if (!known) throw std::runtime_error("unknown model '" + m + "' (fmnist-cnn, cifar10-cnn, cifar10-cnn-bn)");
  }
  return o;
}

std::string json_array(const std::vector<double>& v) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "]";
}

void write_json_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  // One OpenMP runtime (libgomp) serves both libraries; torch's setting also
  // sizes its intra-op pool.
  torch::set_num_threads(o.threads);
  omp_set_num_threads(o.threads);
  const char* preload = std::getenv("LD_PRELOAD");
  const char* openblas = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("libtorch %s (threads %d, LD_PRELOAD=%s, OPENBLAS_NUM_THREADS=%s) vs convkit %s (threads %d, conv algo %s)\n",
              TORCH_VERSION, torch::get_num_threads(), preload ? preload : "", openblas ? openblas : "",
              CONVKIT_VERSION_STRING, o.threads, std::string(convkit::conv_algo_name(o.conv_algo)).c_str());
  std::printf("%d alternating rounds of %d steps each (after %d warm-up steps); median images/s\n\n", o.rounds,
              o.steps, o.warmup);
  std::printf("%-16s %6s %10s %14s %14s %8s\n", "model", "batch", "params", "libtorch im/s", "convkit im/s",
              "ratio");
  std::vector<Row> rows;
  for (const auto& name : o.models)
    for (std::int64_t b : o.batches) {
      const Network& n = *std::find_if(networks().begin(), networks().end(),
                                       [&](const Network& x) { return x.name == name; });
      rows.push_back(compare(n, b, o));
      const Row& r = rows.back();
      std::printf("%-16s %6lld %10lld %14.0f %14.0f %7.2fx\n", r.model.c_str(), static_cast<long long>(r.batch),
                  static_cast<long long>(r.params), r.torch_ips, r.convkit_ips, r.convkit_ips / r.torch_ips);
      std::fflush(stdout);
    }
  std::ostringstream js;
  js << "{\"libtorch\": \"" << TORCH_VERSION << "\", \"threads\": " << o.threads << ", \"rounds\": " << o.rounds
     << ", \"steps\": " << o.steps << ", \"conv_algo\": \"" << convkit::conv_algo_name(o.conv_algo)
     << "\", \"tcmalloc\": " << (preload && std::string(preload).find("tcmalloc") != std::string::npos ? "true" : "false")
     << ", \"results\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    js << (i ? ", " : "") << "{\"model\": \"" << r.model << "\", \"batch\": " << r.batch
       << ", \"params\": " << r.params << ", \"libtorch_images_per_sec\": " << r.torch_ips
       << ", \"convkit_images_per_sec\": " << r.convkit_ips << ", \"ratio\": " << r.convkit_ips / r.torch_ips
       << ", \"libtorch_rounds\": " << json_array(r.torch_rounds)
       << ", \"convkit_rounds\": " << json_array(r.convkit_rounds) << "}";
  }
  js << "]}\n";
  std::printf("\n%s", js.str().c_str());
  if (!o.json.empty()) write_json_atomically(o.json, js.str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "compare_libtorch: %s\n", e.what());
  return 1;
}
