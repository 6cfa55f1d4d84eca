// `convkit bench train MODEL`: training throughput of a zoo model on
// synthetic data — forward, backward and an Adam step per iteration, timed
// after warm-up steps (which also let automatic algorithm selection settle),
// --repeat times, reported as the median with its range.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "cli/arg_parser.h"
#include "cli/bench_allreduce.h"
#include "cli/cli_common.h"
#include "cli/build_commit.h"
#include "cli/commands.h"
#include "convkit/backend/backend.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/core/error.h"
#include "convkit/core/host_info.h"
#include "convkit/models/zoo.h"
#include "convkit/nn/module.h"
#include "convkit/ops/conv_algo.h"
#include "convkit/ops/factory.h"
#include "convkit/optim/optimizer.h"
#include "convkit/train/loss.h"
#include "convkit/train/profiler.h"
#include "convkit/version.h"

namespace convkit::cli {

namespace {

// The device's line in `convkit devices` (for cpu: the kernel path chosen at
// run time), so that a record says what ran, not only what was compiled.
std::string device_detail(const Device& device) {
  for (const BackendInfo& info : list_backends())
    if (info.name == device.str()) return info.detail;
  return "";
}

// The middle value (the mean of the middle two for an even count).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string json_array(const std::vector<double>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + json_number(values[i]);
  return out + "]";
}

int bench_train(const Args& args) {
  const ParsedArgs p(args, "bench train",
                     {{"device", true}, {"batch", true}, {"steps", true}, {"warmup", true},
                      {"algo", true}, {"float32-precision", true}, {"optimizer", true}, {"seed", true},
                      {"json", false}, {"profile", false},
                      {"repeat", true}});
  p.expect_positional(1, 1, "MODEL");
  const std::string model_name = p.positional()[0];
  const models::ModelInfo& info = models::info(model_name);
  const Device device = parse_device_arg(p.value_or("device", "cpu"));
  const std::string algo = p.value_or("algo", "automatic");
  apply_algo_arg(algo);
  const std::string precision = apply_float32_precision_arg(p.value("float32-precision"));
  const std::int64_t batch = p.int_or("batch", 64, 1);
  const std::int64_t steps = p.int_or("steps", 20, 1);
  const std::int64_t warmup = p.int_or("warmup", 2, 0);
  const std::int64_t repeat = p.int_or("repeat", 1, 1);
  const std::string optimizer_name = p.value_or("optimizer", "adam");
  const double lr = default_learning_rate(optimizer_name);
  const auto seed = static_cast<std::uint64_t>(p.int_or("seed", 1, 0));

  manual_seed(seed);
  std::shared_ptr<nn::Module> model = models::create(model_name);
  model->to(device);
  model->train();
  auto optimizer = make_optimizer(optimizer_name, model->parameters(), lr);

  // Images in [0, 1) as after rescaling; labels uniform over the classes.
  const Shape in = info.input_shape;
  const Tensor images = rand({batch, in[0], in[1], in[2]}, TensorOptions().device(device));
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> label_values(static_cast<std::size_t>(batch));
  for (auto& v : label_values) v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(info.num_classes));
  const Tensor labels = from_vector(label_values, {batch}, TensorOptions(DType::int64).device(device));

  auto step = [&] {
    const Tensor logits = (*model)(images);
    const Tensor loss = train::compute_loss(train::LossKind::automatic, logits, labels);
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  };
  Backend& backend = backend_for(device);
  for (std::int64_t i = 0; i < warmup; ++i) step();
  backend.synchronize();
  std::vector<double> run_seconds, run_ips;
  for (std::int64_t r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < steps; ++i) step();
    backend.synchronize();
    run_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    run_ips.push_back(static_cast<double>(batch * steps) / run_seconds.back());
  }
  const double seconds = median(run_seconds);
  const double ips = median(run_ips);
  const double ms_per_step = 1e3 * seconds / static_cast<double>(steps);
  const auto [ips_min, ips_max] = std::minmax_element(run_ips.begin(), run_ips.end());

  std::printf("bench train %s on %s, conv algorithm %s, batch %lld: %lld steps in %.2f s, "
              "%.1f ms/step, %.1f images/s",
              model_name.c_str(), device.str().c_str(), algo.c_str(), static_cast<long long>(batch),
              static_cast<long long>(steps), seconds, ms_per_step, ips);
  if (repeat > 1)
    std::printf(" (median of %lld runs; min %.1f, max %.1f)", static_cast<long long>(repeat), *ips_min, *ips_max);
  std::printf("\n");
  // After the timed runs, so that the profile's synchronisations cost them nothing.
  if (p.flag("profile")) {
    train::LayerProfiler profiler(*model, device);
    for (std::int64_t i = 0; i < steps; ++i) {
      const Tensor logits = profiler.forward(images);
      const Tensor loss = profiler.loss([&] { return train::compute_loss(train::LossKind::automatic, logits, labels); });
      profiler.optimizer([&] { optimizer->zero_grad(); });
      profiler.backward(loss);
      profiler.optimizer([&] { optimizer->step(); });
      profiler.end_step(batch);
    }
    std::printf("%s", profiler.report().table().c_str());
  }
  if (p.flag("json")) {
    // The kernel families pinned to a version (API or CONVKIT_KERNEL_<FAMILY>),
    // as "family=version" joined by commas: what else the run depended on.
    std::string pinned;
    for (const KernelFamilyInfo& f : kernel_families())
      if (kernel_version_pinned(f.family))
        pinned += (pinned.empty() ? "" : ",") + f.family + "=" + std::to_string(kernel_version(f.family));
    JsonLine line;
    line.add("command", "bench train")
        .add("model", model_name)
        .add("device", device.str())
        .add("algo", algo)
        .add("float32_precision", precision)
        .add("pinned_kernels", pinned)
        .add("conv_benchmark", conv_benchmark_mode())
        .add("optimizer", optimizer_name)
        .add("batch", batch)
        .add("steps", steps)
        .add("warmup", warmup)
        .add("seconds", seconds)
        .add("ms_per_step", ms_per_step)
        .add("images_per_sec", ips)
        .add("repeat", repeat)
        .add("images_per_sec_min", *ips_min)
        .add("images_per_sec_max", *ips_max)
        .add_raw("runs_images_per_sec", json_array(run_ips))
        .add("host", cpu_model())
        .add("threads", omp_get_max_threads())
        .add("compiled_isa", compiled_isa())
        .add("device_detail", device_detail(device))
        .add("compiler", compiler_version())
        .add("commit", CONVKIT_COMMIT)
        .add("version", CONVKIT_VERSION_STRING);
    std::printf("%s\n", line.str().c_str());
  }
  return 0;
}

}  // namespace

constexpr const char* kBenchUsage =
    "usage: convkit bench train MODEL [options]\n"
    "       [mpirun -np N] convkit bench allreduce [--min-bytes B] [--max-bytes B] [--json]\n"
    "bench train: training throughput (forward, backward, optimizer step) on synthetic data.\n"
    "  --device D        cpu (default), sim, cuda, cuda:N\n"
    "  --batch B         batch size (64)\n"
    "  --steps N         timed steps (20), after --warmup W steps (2)\n"
    "  --repeat N        time the steps N times (1); prints the median images/s with min and max\n"
    "  --algo A          convolution algorithm (default automatic): {algos}\n"
    "  --float32-precision P  highest (default: strict float32), high (tf32) or medium (bf16)\n"
    "                    tensor-core products on a GPU backend; the cpu ignores it\n"
    "  --optimizer O     adam (default), adamw, sgd, rmsprop\n"
    "  --json            end with one line of JSON (with host, isa, threads, commit and version)\n"
    "  --profile         then --steps more steps, profiled layer by layer (docs/training.md):\n"
    "                    the table comes after the throughput line, before the JSON\n"
    "bench allreduce: time per all-reduce of the job's process group (float32 sums), from\n"
    "--min-bytes (8) to --max-bytes (64 MiB) by factors of 4, the slowest rank's; --json adds a\n"
    "line per size. Its latency and bandwidth are the inputs of docs/distributed-scaling.md.\n";

int run_bench(const Args& args) {
  if (help_requested(args)) {
    std::fputs(with_algo_names(kBenchUsage).c_str(), stdout);
    return 0;
  }
  CK_CHECK(!args.empty(), "missing what to benchmark (expected 'bench train MODEL ...' or 'bench allreduce')");
  if (args[0] == "train") return bench_train(Args(args.begin() + 1, args.end()));
  if (args[0] == "allreduce") return bench_allreduce(Args(args.begin() + 1, args.end()));
  CK_FAIL("unknown benchmark '", args[0], "' (expected train or allreduce)");
}

}  // namespace convkit::cli
