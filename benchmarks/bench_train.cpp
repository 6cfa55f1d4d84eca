// The training side around the kernels: how fast the input pipeline can
// feed a model, and where a training step's time goes, layer by layer.
// (Whole-step throughput per model, device and batch is `convkit bench
// train`, which benchmarks/report.sh runs.)
//
//   pipeline/<model>/workers<W>/loader   one epoch of a DataLoader with the
//       augmentation `convkit train --augment` uses for small images (width
//       and height shifts of 0.1, horizontal flip), rescaling, and W worker
//       threads, over --pipeline-batches in-memory batches of synthetic
//       images shaped like the model's input: the input pipeline alone, to
//       set against the model's training images/s.
//   profile/<model>/<device>/batch<B>    --steps training steps (SGD with
//       momentum, synthetic data on the device, after --warmup steps) under
//       train::LayerProfiler; with --profile-out=FILE the forward and
//       backward seconds of every layer are written there as JSON.
//
// A GPU is synchronized at every profiler timestamp. sim runs one step,
// labelled: its time means nothing for a GPU.
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "convkit/backend/backend.h"
#include "convkit/data/data_loader.h"
#include "convkit/models/zoo.h"
#include "convkit/train/loss.h"
#include "convkit/train/profiler.h"
#include "suite_support.h"

using namespace convkit;
using namespace convkit::bench;

namespace {

struct Options {
  std::int64_t warmup = 1, steps = 3, pipeline_batches = 8;
  std::string profile_out;
};

// A model with its optimizer and one synthetic batch on a device.
struct Trainer {
  std::shared_ptr<nn::Module> model;
  std::unique_ptr<optim::SGD> optimizer;
  Tensor images, labels;
  Device device;

  Trainer(const std::string& name, Device d, std::int64_t batch) : device(d) {
    const models::ModelInfo& info = models::info(name);
    model = models::create(name);
    model->to(device);
    model->train();
    optimizer = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
    std::vector<std::int64_t> shape{batch};
    for (std::int64_t s : info.input_shape) shape.push_back(s);
    images = uniform(Shape(shape), 0, 1, TensorOptions().device(device));
    std::vector<std::int64_t> y(static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int64_t>(i % 2);  // valid for 2+ classes
    labels = from_vector(y, {batch}, TensorOptions().device(device).dtype(DType::int64));
  }

  void step(const Tensor& x, const Tensor& y) {
    optimizer->zero_grad();
    train::compute_loss(train::LossKind::automatic, model->forward(x), y).backward();
    optimizer->step();
  }
  void sync() { backend_for(device).synchronize(); }
};

void label_device(benchmark::State& state, Device device, std::string label) {
  if (!timing_meaningful(device)) label += std::string(" | ") + kSimLabel;
  state.SetLabel(label);
}

// Random 0..255 images shaped like the model's input, in memory.
std::shared_ptr<data::Dataset> synthetic_dataset(const models::ModelInfo& info, std::int64_t count) {
  std::vector<std::int64_t> shape{count};
  for (std::int64_t s : info.input_shape) shape.push_back(s);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i) % info.num_classes;
  return std::make_shared<data::TensorDataset>(uniform(Shape(shape), 0, 255).contiguous(),
                                               from_vector(labels, {count}, TensorOptions().dtype(DType::int64)),
                                               info.num_classes);
}

void bench_pipeline(benchmark::State& state, const std::string& model, int workers, std::int64_t batch,
                    const Options& opt) {
  try {
    const models::ModelInfo& info = models::info(model);
    data::DataLoaderOptions lo;
    lo.batch_size = batch;
    lo.workers = workers;
    lo.seed = 7;
    lo.drop_last = true;
    lo.preprocessing = data::Preprocessing::identity().rescale(1.0 / 255);
    lo.augmentation.width_shift_range = 0.1;
    lo.augmentation.height_shift_range = 0.1;
    lo.augmentation.horizontal_flip = true;
    data::DataLoader loader(synthetic_dataset(info, batch * opt.pipeline_batches), lo);
    std::uint64_t epoch = 0;
    std::int64_t images = 0;
    for (auto _ : state) {
      for (data::Batch& b : loader.epoch_range(epoch++)) images += b.images.size(0);
    }
    state.counters["images_per_sec"] = benchmark::Counter(static_cast<double>(images), benchmark::Counter::kIsRate);
    state.SetLabel("batch=" + std::to_string(batch) + " workers=" + std::to_string(workers) +
                   " augment=shift0.1,hflip");
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("error: ") + e.what()).c_str());
  }
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

void write_profile(const std::string& path, const std::string& model, Device device, std::int64_t batch,
                   const train::ProfileReport& r) {
  std::ostringstream os;
  os.precision(9);
  os << "{\"model\": " << json_string(model) << ", \"device\": " << json_string(device.str())
     << ", \"batch\": " << batch << ", \"steps\": " << r.steps << ", \"layers\": [";
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const train::LayerTiming& l = r.layers[i];
    os << (i ? ", " : "") << "{\"name\": " << json_string(l.name) << ", \"type\": " << json_string(l.type)
       << ", \"forward_seconds\": " << l.forward_seconds << ", \"backward_seconds\": " << l.backward_seconds << "}";
  }
  os << "], \"loss_seconds\": " << r.loss.total_seconds() << ", \"optimizer_seconds\": " << r.optimizer_seconds
     << ", \"data_seconds\": " << r.data_seconds << ", \"engine_seconds\": " << r.engine_seconds
     << ", \"total_seconds\": " << r.total_seconds << "}\n";
  std::ofstream out(path);
  CK_CHECK(out && (out << os.str()), "bench_train: cannot write the profile to '", path, "'");
}

void bench_profile(benchmark::State& state, const std::string& model, Device device, std::int64_t batch,
                   const Options& opt) {
  try {
    Trainer t(model, device, batch);
    for (std::int64_t i = 0; i < opt.warmup; ++i) t.step(t.images, t.labels);
    train::LayerProfiler profiler(*t.model, device);
    for (auto _ : state) {
      const Tensor logits = profiler.forward(t.images);
      const Tensor loss =
          profiler.loss([&] { return train::compute_loss(train::LossKind::automatic, logits, t.labels); });
      profiler.backward(loss);
      profiler.optimizer([&] {
        t.optimizer->step();
        t.optimizer->zero_grad();
      });
      profiler.end_step(batch);
    }
    state.counters["images_per_sec"] =
        benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
    label_device(state, device, "batch=" + std::to_string(batch));
    if (!opt.profile_out.empty()) write_profile(opt.profile_out, model, device, batch, profiler.report());
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("error: ") + e.what()).c_str());
  }
}

const std::map<std::string, std::string> kFlags = {
    {"devices", "comma-separated devices of profile/: cpu, sim, cuda[:N] (default cpu and every usable cuda)"},
    {"pipeline-model", "model whose input shape pipeline/ feeds (default fmnist-cnn; 'none' skips pipeline/)"},
    {"workers", "comma-separated data-loader worker counts of pipeline/ (default 1,2,4)"},
    {"pipeline-batch", "batch of pipeline/ (default 128)"},
    {"pipeline-batches", "batches per pipeline epoch (default 20)"},
    {"profile-model", "model of profile/ (default cifar10-cnn; 'none' skips profile/)"},
    {"profile-batch", "batch of profile/ (default 128)"},
    {"warmup", "untimed training steps before profiling (default 1)"},
    {"steps", "profiled training steps (default 3)"},
    {"profile-out", "write the per-layer profile of profile/ to this JSON file"},
};

std::vector<std::int64_t> ints(const std::vector<std::string>& texts, const char* flag) {
  std::vector<std::int64_t> out;
  for (const std::string& t : texts) {
    char* end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    CK_CHECK(!t.empty() && *end == '\0' && v >= 0, "--", flag, " needs non-negative integers, got '", t, "'");
    out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Flags::print_help_if_requested(argc, argv, kFlags,
                                 "the input pipeline against worker threads, and a per-layer training profile");
  benchmark::Initialize(&argc, argv);
  try {
    const Flags flags(argc, argv, kFlags);
    Options opt;
    opt.warmup = flags.get_int("warmup", 1);
    opt.steps = flags.get_int("steps", 3);
    opt.pipeline_batches = flags.get_int("pipeline-batches", 20);
    opt.profile_out = flags.get("profile-out", "");
    CK_CHECK(opt.warmup >= 0 && opt.steps >= 1 && opt.pipeline_batches >= 1,
             "--warmup must be >= 0, --steps and --pipeline-batches >= 1");
    const std::vector<std::int64_t> workers = ints(flags.get_list("workers", {"1", "2", "4"}), "workers");
    const std::string pipeline_model = flags.get("pipeline-model", "fmnist-cnn");
    const std::int64_t pipeline_batch = flags.get_int("pipeline-batch", 128);
    const std::string profile_model = flags.get("profile-model", "cifar10-cnn");
    const std::int64_t profile_batch = flags.get_int("profile-batch", 128);
    CK_CHECK(pipeline_batch >= 1 && profile_batch >= 1, "--pipeline-batch and --profile-batch must be >= 1");

    add_machine_context();
    if (pipeline_model != "none") {
      models::info(pipeline_model);  // an unknown name fails here, listing the zoo
      for (std::int64_t w : workers) {
        const std::string name = "pipeline/" + pipeline_model + "/workers" + std::to_string(w) + "/loader";
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          bench_pipeline(s, pipeline_model, static_cast<int>(w), pipeline_batch, opt);
        })->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
      }
    }
    if (profile_model != "none") {
      models::info(profile_model);
      for (const Device& d : usable_devices(flags.get_list("devices", {}))) {
        const std::string name = "profile/" + profile_model + "/" + d.str() + "/batch" + std::to_string(profile_batch);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          bench_profile(s, profile_model, d, profile_batch, opt);
        })->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(timing_meaningful(d) ? opt.steps : 1);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 2;
  }
  return run_benchmarks();
}
