// Convolution algorithms x devices x passes x layers, from the layer sets in
// benchmarks/layer_sets.txt. One benchmark per combination, named
//   conv/<set>/<layer>/<device>/<algo>/<fwd|bwd-data|bwd-weights>
// so that --benchmark_filter picks any slice (a layer, a device, a pass).
//
// Each benchmark, before it is timed:
//   - skips itself with the backend's supports() reason when the algorithm
//     cannot run the layer (or its workspace exceeds the limit);
//   - runs the pass once and checks the result against float64 sums at a
//     sample of elements (conv_check.h); a wrong result skips the benchmark
//     with the worst element, so a fast wrong algorithm never gets a figure;
//   - the checked run doubles as the warm-up (the FFT's plans, the GPU's
//     caching allocator); every operand copy is written once (first-touch
//     page faults).
// The timed loop cycles through enough operand copies that the caches start
// cold each iteration (--rotate-mib); on a cuda device it is timed with CUDA
// events (manual time), elsewhere a GPU is synchronized after every pass.
//
// Counters: gflops (2*N*K*(C/groups)*R*S*P*Q per pass, per second),
// max_rel_error (conv_check.h), workspace_bytes, floor_bytes (the bytes the
// pass must read and write at least: its operands once each), flop_per_byte
// (arithmetic intensity against that floor: far above the machine's
// FLOP/byte ratio means compute-bound), heuristic (1 when this is the
// algorithm `automatic` would pick). The label holds the algorithm and the
// layer's geometry for the report.
//
// sim runs the CUDA kernels on the CPU emulator: it is here as a correctness
// smoke (one iteration, labelled so) and its time means nothing for a GPU.
// --sim-profile=GPU times nothing: it runs each pass once on sim under the
// performance model (convkit/sim/profile.h), for every version of the kernel
// families its algorithm uses, and prints the exact counters with a roofline
// estimate for that GPU; --families=a,b keeps only those families.
// --kernel-versions=a,b (or all) times every version of those families
// instead of only the defaults: one row per version, named
//   conv/<set>/<layer>/<device>/<algo>@<family>.v<N>/<pass>
// with counters kernel_version and default_version, each checked like any
// other row (kernel_version_pin.h says how a version is pinned).
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <type_traits>

#include "suite_support.h"
#include "conv_check.h"
#include "cudnn_baseline.h"
#include "onednn_baseline.h"
#include "convkit/backend/backend.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/backend/precision.h"
#include "convkit/sim/profile.h"
#include "kernel_version_pin.h"
#include "layer_sets.h"

using namespace convkit;
using namespace convkit::bench;

namespace {

struct ConvCase {
  std::string set, layer;
  Conv2dDesc desc;  // batch already scaled
  std::int64_t count = 1;
  Device device;
  ConvAlgo algo = ConvAlgo::direct;
  ConvPass pass = ConvPass::forward;
  std::size_t rotate_bytes = 0;
  bool check = true;
  std::string baseline;  // "cudnn", "onednn" or "onednn-blocked": that library instead of `algo`
  std::string family;    // with --kernel-versions: `algo` with this kernel family pinned at `version`
  int version = 0;
  int profile_passes = 0;  // --profile-passes
  // Whether the row's profiled passes ran: Google Benchmark calls a row's
  // function once per iteration estimate, the passes belong to the first.
  std::shared_ptr<bool> profiled;
};

const char* pass_short_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return "fwd";
    case ConvPass::backward_data: return "bwd-data";
    case ConvPass::backward_weights: return "bwd-weights";
  }
  return "?";
}

ConvPass parse_pass(const std::string& name) {
  for (ConvPass p : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    if (name == pass_short_name(p)) return p;
  CK_FAIL("unknown pass '", name, "'; the passes are fwd, bwd-data, bwd-weights");
}

// The geometry the report reads back, as key=value words.
std::string geometry(const Conv2dDesc& d, std::int64_t count) {
  std::ostringstream os;
  os << "N=" << d.N << " C=" << d.C << " H=" << d.H << " W=" << d.W << " K=" << d.K << " R=" << d.R
     << " S=" << d.S << " stride=" << d.stride_h << "x" << d.stride_w << " pad=" << d.pad_top << ","
     << d.pad_bottom << "," << d.pad_left << "," << d.pad_right << " P=" << d.P() << " Q=" << d.Q()
     << " count=" << count;
  return os.str();
}

// One copy of a pass's operands on the device. Inputs are uniform in [-1, 1).
struct Operands {
  Tensor x, w, b, dy;  // inputs (those the pass reads)
  Tensor out, db;      // y, dx or dw; db with bias

  Operands(const Conv2dDesc& d, ConvPass pass, Device device) {
    const TensorOptions opts = TensorOptions().device(device);
    const Shape xs{d.N, d.C, d.H, d.W}, ws{d.K, d.C_per_group(), d.R, d.S}, ys{d.N, d.K, d.P(), d.Q()};
    switch (pass) {
      case ConvPass::forward:
        x = uniform(xs, -1, 1, opts);
        w = uniform(ws, -1, 1, opts);
        b = uniform({d.K}, -1, 1, opts);
        out = empty(ys, opts);
        break;
      case ConvPass::backward_data:
        dy = uniform(ys, -1, 1, opts);
        w = uniform(ws, -1, 1, opts);
        out = empty(xs, opts);
        break;
      case ConvPass::backward_weights:
        x = uniform(xs, -1, 1, opts);
        dy = uniform(ys, -1, 1, opts);
        out = empty(ws, opts);
        db = empty({d.K}, opts);
        break;
    }
  }

  std::size_t bytes() const {
    std::size_t total = 0;
    for (const Tensor* t : {&x, &w, &b, &dy, &out, &db})
      if (t->defined()) total += static_cast<std::size_t>(t->numel()) * 4;
    return total;
  }

  PassData to_host() const {
    auto host = [](const Tensor& t) { return t.defined() ? t.to_vector<float>() : std::vector<float>{}; };
    return PassData{host(x), host(w), host(b), host(dy), host(out), host(db)};
  }
};

// One way to run the pass: one of our algorithms, or a vendor baseline.
struct Runner {
  std::string name;              // first word of the label
  std::string detail;            // more label words, e.g. the layouts a baseline works in
  std::size_t workspace_bytes = 0;
  ConvAlgo check_as = ConvAlgo::direct;  // which error bound the check applies (conv_check.h)
  bool heuristic = false;
  std::function<void(const Operands&, const Tensor& workspace)> run;
  // Untimed, for a runner with its own copies of the operands (oneDNN's
  // blocked layouts): `stage` makes them for an operand copy before any
  // pass, `export_output` writes a pass's result back into op.out for the check.
  std::function<void(const Operands&)> stage, export_output;
};

Runner our_algorithm(Backend& backend, const ConvCase& c) {
  Runner r;
  r.name = std::string(conv_algo_name(c.algo));
  r.workspace_bytes = backend.conv2d_workspace_bytes(c.algo, c.desc, DType::float32, c.pass);
  r.check_as = c.algo;
  r.heuristic = backend.conv2d_heuristic(c.desc, DType::float32) == c.algo;
  r.run = [&backend, c](const Operands& op, const Tensor& ws) {
    switch (c.pass) {
      case ConvPass::forward: backend.conv2d_forward(c.algo, c.desc, op.x, op.w, op.b, op.out, ws); break;
      case ConvPass::backward_data: backend.conv2d_backward_data(c.algo, c.desc, op.dy, op.w, op.out, ws); break;
      case ConvPass::backward_weights:
        backend.conv2d_backward_weights(c.algo, c.desc, op.x, op.dy, op.out, op.db, ws);
        break;
    }
  };
  return r;
}

// A vendor library's convolution (CudnnConv or OnednnConv) as a runner.
template <typename Library>
Runner baseline_runner(const ConvCase& c, std::shared_ptr<const Library> conv) {
  Runner r;
  r.name = c.baseline + ":" + conv->algo_name();
  r.workspace_bytes = conv->workspace_bytes();
  if constexpr (std::is_same_v<Library, OnednnConv>) {
    r.detail = "layouts=" + conv->layouts();
    r.stage = [conv, c](const Operands& op) {
      const Tensor& a = c.pass == ConvPass::backward_data ? op.dy : op.x;
      const Tensor& b = c.pass == ConvPass::backward_weights ? op.dy : op.w;
      conv->stage(a.raw_data(), b.raw_data(), op.out.raw_data());
    };
    r.export_output = [conv](const Operands& op) { conv->export_output(op.out.raw_data()); };
  }
  r.check_as = ConvAlgo::fft;  // the library may pick an FFT or Winograd algorithm: the norm-wise bound
  auto raw = [](const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; };
  r.run = [conv, c, raw](const Operands& op, const Tensor& ws) {
    switch (c.pass) {
      case ConvPass::forward: conv->run(raw(op.x), raw(op.w), raw(op.b), raw(op.out), nullptr, raw(ws)); break;
      case ConvPass::backward_data: conv->run(raw(op.dy), raw(op.w), nullptr, raw(op.out), nullptr, raw(ws)); break;
      case ConvPass::backward_weights:
        conv->run(raw(op.x), raw(op.dy), nullptr, raw(op.out), raw(op.db), raw(ws));
        break;
    }
  };
  return r;
}

// Checks, warms up and times one runner on one case.
// The unit roundoff of the operands a pass multiplies, for its check: where
// the float32 precision sends products to the tensor cores (a GPU backend),
// tf32's at high and bf16's at medium; else 0 (strict).
double operand_unit(const ConvCase& c) {
  return c.device.type == DeviceType::cpu ? 0.0 : operand_unit_roundoff(float32_precision());
}

void time_pass(benchmark::State& state, const ConvCase& c, Backend& backend, const Runner& runner) {
  const Tensor workspace =
      runner.workspace_bytes == 0
          ? Tensor()
          : empty({static_cast<std::int64_t>((runner.workspace_bytes + 3) / 4)}, TensorOptions().device(c.device));
  std::vector<std::unique_ptr<Operands>> copies;
  copies.push_back(std::make_unique<Operands>(c.desc, c.pass, c.device));
  const int rotation = timing_meaningful(c.device) ? rotation_count(copies[0]->bytes(), c.rotate_bytes) : 1;
  while (static_cast<int>(copies.size()) < rotation)
    copies.push_back(std::make_unique<Operands>(c.desc, c.pass, c.device));
  if (runner.stage)
    for (const auto& copy : copies) runner.stage(*copy);

  double max_rel_error = -1;  // -1: not checked
  if (c.check) {
    runner.run(*copies[0], workspace);
    backend.synchronize();
    if (runner.export_output) runner.export_output(*copies[0]);
    const CheckResult check =
        check_conv_pass(c.desc, runner.check_as, c.pass, copies[0]->to_host(), operand_unit(c));
    if (!check.ok()) {
      std::ostringstream os;
      os << "wrong result: " << check.failures << " of " << check.checked
         << " sampled elements out of tolerance, worst " << check.worst;
      state.SkipWithError(os.str().c_str());
      return;
    }
    max_rel_error = check.max_rel_error;
  }
  // Warm-up: the checked pass was one untimed pass (plans, allocator caches);
  // without a check run one. Every copy's outputs are written once so that no
  // timed iteration pays for first-touch page faults.
  if (!c.check) runner.run(*copies[0], workspace);
  for (const auto& copy : copies) {
    copy->out.fill_(0);
    if (copy->db.defined()) copy->db.fill_(0);
  }
  backend.synchronize();
  // --profile-passes: that many passes inside a profiler range, apart from
  // the timed loop and once per row, so that `ncu --profile-from-start off`
  // sees exactly these (gpu-check's kernel_times step divides by them).
  if (c.profile_passes > 0 && !*c.profiled) {
    *c.profiled = true;
    const CudaProfilerRange range(c.device);
    for (int k = 0; k < c.profile_passes; ++k) runner.run(*copies[k % copies.size()], workspace);
  }
  backend.synchronize();

  std::unique_ptr<GpuEventTimer> events;
  if (uses_events(c.device)) events = std::make_unique<GpuEventTimer>();
  std::size_t i = 0;
  for (auto _ : state) {
    const Operands& op = *copies[i++ % copies.size()];
    if (events) {
      events->start();
      runner.run(op, workspace);
      state.SetIterationTime(events->stop_seconds());
    } else {
      runner.run(op, workspace);
      if (c.device.type != DeviceType::cpu) backend.synchronize();
    }
  }

  const double flops = c.desc.flops();
  const std::size_t floor_bytes = copies[0]->bytes();
  state.counters["gflops"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["max_rel_error"] = max_rel_error;
  state.counters["workspace_bytes"] = static_cast<double>(runner.workspace_bytes);
  state.counters["floor_bytes"] = static_cast<double>(floor_bytes);
  state.counters["flop_per_byte"] = flops / static_cast<double>(floor_bytes);
  state.counters["heuristic"] = runner.heuristic ? 1 : 0;
  if (c.profile_passes > 0) state.counters["profiled_passes"] = c.profile_passes;
  std::string label = runner.name + " " + geometry(c.desc, c.count) + " rotation=" + std::to_string(rotation);
  if (!c.family.empty()) {
    const int default_version = kernel_family_default(c.family);
    state.counters["kernel_version"] = c.version;
    state.counters["default_version"] = default_version;
    label += " pinned=" + c.family + ".v" + std::to_string(c.version) +
             " default=v" + std::to_string(default_version) + " float32 precision " +
             to_string(float32_precision());
  }
  if (!runner.detail.empty()) label += " " + runner.detail;
  if (!timing_meaningful(c.device)) label += std::string(" | ") + kSimLabel;
  state.SetLabel(label);
}

void run_conv(benchmark::State& state, const ConvCase& c) {
  try {
    Backend& backend = backend_for(c.device);
    if (c.baseline == "cudnn") {
      const std::string why = CudnnConv::unsupported_reason(c.desc);
      if (!why.empty()) {
        state.SkipWithError(("unsupported: " + why).c_str());
        return;
      }
      time_pass(state, c, backend, baseline_runner(c, std::make_shared<const CudnnConv>(c.desc, c.pass)));
      return;
    }
    if (!c.baseline.empty()) {
      const std::string why = OnednnConv::unsupported_reason(c.desc);
      if (!why.empty()) {
        state.SkipWithError(("unsupported: " + why).c_str());
        return;
      }
      const OnednnLayout layout = c.baseline == "onednn-blocked" ? OnednnLayout::blocked : OnednnLayout::plain;
      time_pass(state, c, backend,
                baseline_runner(c, std::make_shared<const OnednnConv>(c.desc, c.pass, layout)));
      return;
    }
    std::optional<KernelVersionPin> pin;
    if (!c.family.empty()) pin.emplace(c.algo, c.family, c.version);
    const Support support = backend.conv2d_supports(c.algo, c.desc);
    if (!support) {
      state.SkipWithError(("unsupported: " + support.reason).c_str());
      return;
    }
    time_pass(state, c, backend, our_algorithm(backend, c));
  } catch (const std::exception& e) {
    state.SkipWithError((std::string("error: ") + e.what()).c_str());
  }
}

// One pass on sim under the profile; its operands' own fill kernels are not
// counted. Returns the counters, or throws what the pass threw.
std::vector<sim::KernelProfile> profile_pass(const ConvCase& c, Backend& backend) {
  const Runner runner = our_algorithm(backend, c);
  const sim::ScopedProfile profile;
  const Operands operands(c.desc, c.pass, c.device);
  const Tensor workspace =
      runner.workspace_bytes == 0
          ? Tensor()
          : empty({static_cast<std::int64_t>((runner.workspace_bytes + 3) / 4)}, TensorOptions().device(c.device));
  backend.synchronize();
  (void)sim::take_profile();
  runner.run(operands, workspace);
  backend.synchronize();
  std::vector<sim::KernelProfile> counted = sim::take_profile();
  const CheckResult check = check_conv_pass(c.desc, c.algo, c.pass, operands.to_host(), operand_unit(c));
  CK_CHECK(check.ok(), "wrong result: ", check.failures, " of ", check.checked, " sampled elements out of tolerance");
  return counted;
}

// families: the kernel families to profile (empty: every one the algorithm uses).
int print_sim_profiles(const std::vector<ConvCase>& cases, const std::string& gpu_name,
                       const std::vector<std::string>& families) {
  const sim::GpuSpec& gpu = sim::gpu_spec(gpu_name);
  for (const ConvCase& c : cases) {
    const std::string name = "conv/" + c.set + "/" + c.layer + "/sim/" + std::string(conv_algo_name(c.algo)) + "/" +
                             pass_short_name(c.pass);
    Backend& backend = backend_for(c.device);
    const Support support = backend.conv2d_supports(c.algo, c.desc);
    if (!support) {
      std::printf("== %s: unsupported: %s\n\n", name.c_str(), support.reason.c_str());
      continue;
    }
    for (const std::string& family : kernel_families_of(c.algo)) {
      if (!families.empty() && std::find(families.begin(), families.end(), family) == families.end()) continue;
      const int versions = kernel_family_versions(c.algo, family, c.device);
      for (int v = 1; v <= versions; ++v) {
        const KernelVersionPin pin(c.algo, family, v);
        std::printf("== %s, %s v%d (%s)\n", name.c_str(), family.c_str(), v, geometry(c.desc, c.count).c_str());
        try {
          std::printf("%s\n", sim::format_profile(profile_pass(c, backend), gpu).c_str());
        } catch (const std::exception& e) {
          std::printf("not run: %s\n\n", e.what());
        }
      }
    }
  }
  return 0;
}

void register_case(const std::string& name, ConvCase c) {
  c.profiled = std::make_shared<bool>(false);  // one per row
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& s) { run_conv(s, c); });
  b->Unit(benchmark::kMillisecond);
  if (uses_events(c.device)) b->UseManualTime();
  else b->UseRealTime();
  if (!timing_meaningful(c.device)) b->Iterations(1);
}

const std::map<std::string, std::string> kFlags = {
    {"sets", "comma-separated layer sets, or 'all' (default cifar10-cnn)"},
    {"layers", "comma-separated layer names to keep within the sets (default all)"},
    {"layer-file", "the layer-set file (default benchmarks/layer_sets.txt of this source tree)"},
    {"batch-scale", "multiply every batch by this, rounding, at least 1 (default 1)"},
    {"max-batch", "cap every batch at this (default: no cap)"},
    {"devices", "comma-separated devices: cpu, sim, cuda[:N] (default cpu and every usable cuda)"},
    {"algos", "comma-separated algorithms, cudnn for the cuDNN baseline on cuda devices, onednn (plain NCHW) "
              "and onednn-blocked (the layouts oneDNN chooses, reordered outside the timed region) for the "
              "oneDNN baselines on the cpu (default " + conv_algo_names(false, ",") + ", plus cudnn, onednn "
              "and onednn-blocked when built with them)"},
    {"passes", "comma-separated passes: fwd, bwd-data, bwd-weights (default all three)"},
    {"rotate-mib", "operand copies to cycle through, in MiB, so the caches start cold (default 64)"},
    {"check", "check each result against the float64 reference before timing (default true)"},
    {"profile-passes", "run this many passes of each row between cudaProfilerStart and cudaProfilerStop, after "
                       "the warm-up and apart from the timed loop, for `ncu --profile-from-start off` (on cuda "
                       "devices; elsewhere the passes run without a range); counter profiled_passes (default 0)"},
    {"list-sets", "print the layer sets and exit"},
    {"sim-profile", "time nothing: run each pass once on sim under the sim performance model, for every version of "
                    "the kernels its algorithm uses, and print the exact counters with a roofline estimate for this "
                    "GPU (H100, A100 or V100)"},
    {"families", "with --sim-profile, comma-separated kernel families to profile (default every family the "
                 "algorithm uses; e.g. conv2d_implicit_gemm_tensor_core)"},
    {"kernel-versions", "comma-separated kernel families, or 'all': time every version of each such family an "
                        "algorithm runs, one row each named <algo>@<family>.v<N> with counters kernel_version and "
                        "default_version, instead of that algorithm's default row (the tensor-core family's rows "
                        "run on the tensor cores, in tf32, or in bf16 under CONVKIT_FLOAT32_PRECISION=medium; the "
                        "others strict; one-version families and the cpu keep the default row)"},
};

}  // namespace

int main(int argc, char** argv) {
  Flags::print_help_if_requested(argc, argv, kFlags,
                                 "convolution algorithms x devices x passes x layers");
  benchmark::Initialize(&argc, argv);
  try {
    const Flags flags(argc, argv, kFlags);
    const std::string layer_file = flags.get("layer-file", default_layer_sets_path());
    const std::vector<LayerSet> all_sets = load_layer_sets(layer_file);
    if (flags.has("list-sets")) {
      for (const LayerSet& s : all_sets) {
        std::printf("%s: %s\n", s.name.c_str(), s.description.c_str());
        for (const LayerEntry& e : s.layers) std::printf("  %-14s %s\n", e.name.c_str(), e.desc.str().c_str());
      }
      return 0;
    }

    std::vector<std::string> set_names = flags.get_list("sets", {"cifar10-cnn"});
    if (set_names == std::vector<std::string>{"all"}) {
      set_names.clear();
      for (const LayerSet& s : all_sets) set_names.push_back(s.name);
    }
    const std::vector<std::string> layer_filter = flags.get_list("layers", {});
    const BatchScaling batch{flags.get_double("batch-scale", 1.0), flags.get_int("max-batch", 0)};
    std::vector<std::string> default_algos;
    for (const ConvAlgoInfo& info : kConvAlgorithms) default_algos.emplace_back(info.name);
    if (CudnnConv::available()) default_algos.push_back("cudnn");
    if (OnednnConv::available()) {
      default_algos.push_back("onednn");
      default_algos.push_back("onednn-blocked");
    }
    std::vector<ConvAlgo> algos;
    std::vector<std::string> cuda_baselines, cpu_baselines;
    for (const std::string& a : flags.get_list("algos", default_algos)) {
      if (a == "cudnn") {
        CK_CHECK(CudnnConv::available(), "--algos=cudnn: this build has no cuDNN (it needs the cuda backend)");
        cuda_baselines.push_back(a);
      } else if (a == "onednn" || a == "onednn-blocked") {
        CK_CHECK(OnednnConv::available(), "--algos=", a,
                 ": this build has no oneDNN (install libdnnl-dev and reconfigure)");
        cpu_baselines.push_back(a);
      } else {
        algos.push_back(parse_conv_algo(a));
      }
    }
    std::vector<ConvPass> passes;
    for (const std::string& p : flags.get_list("passes", {"fwd", "bwd-data", "bwd-weights"}))
      passes.push_back(parse_pass(p));
    const double rotate_mib = flags.get_double("rotate-mib", 64);
    CK_CHECK(rotate_mib >= 0, "--rotate-mib must be >= 0, got ", rotate_mib);
    const bool check = flags.get("check", "true") != "false";
    const std::int64_t profile_passes = flags.get_int("profile-passes", 0);
    CK_CHECK(profile_passes >= 0 && profile_passes <= 1000, "--profile-passes must be 0 to 1000, got ", profile_passes);
    std::vector<std::string> version_families = flags.get_list("kernel-versions", {});
    if (version_families == std::vector<std::string>{"all"}) version_families = all_conv_kernel_families();
    const std::vector<std::string> known_families = all_conv_kernel_families();
    for (const std::string& f : version_families)
      if (std::find(known_families.begin(), known_families.end(), f) == known_families.end()) {
        std::string names;
        for (const std::string& k : known_families) names += (names.empty() ? "" : ", ") + k;
        CK_FAIL("--kernel-versions: '", f, "' is not a convolution kernel family; they are ", names);
      }

    add_machine_context();
    benchmark::AddCustomContext("layer_file", layer_file);
    benchmark::AddCustomContext("batch_scaling", "scale " + std::to_string(batch.scale) + ", max batch " +
                                                     std::to_string(batch.max_batch) + " (0: none)");
    benchmark::AddCustomContext("results_checked", check ? "yes" : "no (--check=false)");
    const bool sim_profile = flags.has("sim-profile");
    const std::vector<Device> devices =
        sim_profile ? std::vector<Device>{Device::parse("sim")} : usable_devices(flags.get_list("devices", {}));
    std::vector<ConvCase> profile_cases;

    for (const std::string& set_name : set_names) {
      const LayerSet& set = find_layer_set(all_sets, set_name);
      for (const LayerEntry& entry : set.layers) {
        if (!layer_filter.empty() &&
            std::find(layer_filter.begin(), layer_filter.end(), entry.name) == layer_filter.end())
          continue;
        for (const Device& device : devices) {
          // The last rounds are the vendor baselines: cuDNN on cuda devices, oneDNN on the cpu.
          const std::vector<std::string>& libraries = device.type == DeviceType::cuda  ? cuda_baselines
                                                      : device.type == DeviceType::cpu ? cpu_baselines
                                                                                       : std::vector<std::string>{};
          for (std::size_t a = 0; a < algos.size() + libraries.size(); ++a)
            for (ConvPass pass : passes) {
              const bool baseline = a >= algos.size();
              const std::string library = baseline ? libraries[a - algos.size()] : "";
              const ConvAlgo algo = baseline ? ConvAlgo::automatic : algos[a];
              ConvCase c;
              c.set = set.name;
              c.layer = entry.name;
              c.desc = batch.apply(entry.desc);
              c.count = entry.count;
              c.device = device;
              c.algo = algo;
              c.pass = pass;
              c.rotate_bytes = static_cast<std::size_t>(rotate_mib * (1 << 20));
              c.check = check;
              c.profile_passes = static_cast<int>(profile_passes);
              if (baseline) c.baseline = library;
              if (sim_profile) {
                if (!baseline) profile_cases.push_back(c);
                continue;
              }
              const std::string prefix = "conv/" + set.name + "/" + entry.name + "/" + device.str() + "/" +
                                         (baseline ? library : std::string(conv_algo_name(algo)));
              // One row per version of each chosen family the algorithm runs,
              // else its default row.
              bool versioned = false;
              for (const std::string& family : baseline ? std::vector<std::string>{} : kernel_families_of(algo)) {
                if (std::find(version_families.begin(), version_families.end(), family) == version_families.end())
                  continue;
                const int versions = kernel_family_versions(algo, family, device);
                if (versions < 2) continue;
                versioned = true;
                for (int v = 1; v <= versions; ++v) {
                  ConvCase pinned = c;
                  pinned.family = family;
                  pinned.version = v;
                  register_case(prefix + "@" + family + ".v" + std::to_string(v) + "/" + pass_short_name(pass),
                                pinned);
                }
              }
              if (!versioned) register_case(prefix + "/" + pass_short_name(pass), c);
            }
        }
      }
    }
    if (sim_profile) {
      const std::string gpu = flags.get("sim-profile", "true");
      return print_sim_profiles(profile_cases, gpu == "true" ? "H100" : gpu, flags.get_list("families", {}));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_conv: %s\n", e.what());
    return 2;
  }
  return run_benchmarks();
}
