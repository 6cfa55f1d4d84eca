#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "backend/environment_flag.h"
#include "convkit/backend/kernel_versions.h"
#include "convkit/backend/precision.h"

#include "convkit/ops/conv_algo.h"
#include "convkit/ops/factory.h"
#include "ops/op_helpers.h"

namespace convkit {

namespace {

constexpr ConvPass kPasses[] = {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights};

struct SelectionState {
  std::mutex mutex;
  // Held while timing, taken before `mutex` and never while holding it: one
  // benchmark at a time, because two at once would share the device and
  // skew each other's figures, and could time one descriptor twice and
  // hand two threads different plans for it.
  std::mutex timing;
  ConvAlgo default_algo = ConvAlgo::automatic;
  // Read strictly (1, true, 0, false): "false" or "no" meaning on would
  // change every conv's algorithm unannounced. A bad value is an Error at
  // the first conv, naming the variable.
  bool benchmark = detail::environment_flag("CONVKIT_CONV_BENCHMARK").value_or(false);
  bool logging = detail::environment_flag("CONVKIT_CONV_LOG").value_or(false);
  std::map<std::string, ConvPassChoice> cache;  // benchmark winners, per pass
  std::map<std::string, bool> logged;           // descriptors already reported
};

SelectionState& state() {
  static SelectionState s;
  return s;
}

std::string desc_fields(const Conv2dDesc& d) {
  std::ostringstream os;
  os << d.N << ' ' << d.C << ' ' << d.H << ' ' << d.W << ' ' << d.K << ' ' << d.R << ' ' << d.S << ' '
     << d.stride_h << ' ' << d.stride_w << ' ' << d.pad_top << ' ' << d.pad_bottom << ' ' << d.pad_left
     << ' ' << d.pad_right << ' ' << d.dilation_h << ' ' << d.dilation_w << ' ' << d.groups << ' '
     << d.workspace_limit;
  return os.str();
}

// "device dtype precision": what a descriptor's choice depends on besides
// the descriptor and the pass.
std::string context_key(DType dtype, Device device) {
  return device.str() + " " + std::string(dtype_name(dtype)) + " " + to_string(float32_precision());
}

std::string pass_key(const std::string& context, ConvPass pass, const std::string& fields) {
  return context + " " + std::string(conv_pass_name(pass)) + " " + fields;
}

std::string choice_text(const ConvPassChoice& c) {
  std::string text(conv_algo_name(c.algo));
  if (c.kernel_version != 0) text += " " + c.kernel_family + " " + std::to_string(c.kernel_version);
  return text;
}

// The operands of one descriptor, random, allocated once for every candidate.
struct TimingOperands {
  Tensor x, w, y, dx, dw;
};

// Runs `pass` with `choice` once to warm up (first-launch costs, plans,
// caches), then three times; returns the fastest run's seconds.
double time_pass(Backend& backend, ConvPass pass, const ConvPassChoice& choice, const Conv2dDesc& d, DType dtype,
                 Device device, const TimingOperands& t) {
  const ScopedKernelVersion version(choice.kernel_family, choice.kernel_version);
  const std::size_t ws = backend.conv2d_workspace_bytes(choice.algo, d, dtype, pass);
  const Tensor workspace =
      ws ? empty({static_cast<std::int64_t>((ws + 3) / 4)}, TensorOptions().device(device)) : Tensor();
  const auto run = [&] {
    switch (pass) {
      case ConvPass::forward: backend.conv2d_forward(choice.algo, d, t.x, t.w, Tensor(), t.y, workspace); break;
      case ConvPass::backward_data: backend.conv2d_backward_data(choice.algo, d, t.y, t.w, t.dx, workspace); break;
      case ConvPass::backward_weights:
        backend.conv2d_backward_weights(choice.algo, d, t.x, t.y, t.dw, Tensor(), workspace);
        break;
    }
  };
  run();
  backend.synchronize();
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    backend.synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i == 0 || s < best) best = s;
  }
  return best;
}

// Every supported algorithm, with each version of its kernel family worth
// timing (or the process's version where none is listed).
std::vector<ConvPassChoice> candidates(Backend& backend, const Conv2dDesc& d, DType dtype) {
  std::vector<ConvPassChoice> out;
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    if (!backend.conv2d_supports(info.algo, d)) continue;
    const KernelChoices k = backend.conv2d_kernel_choices(info.algo, d, dtype);
    if (k.versions.empty()) out.push_back({info.algo, k.family, 0});
    for (int v : k.versions) out.push_back({info.algo, k.family, v});
  }
  return out;
}

// The fastest candidate of each of `passes`, into `plan`; `report` lists
// every candidate's time.
void benchmark_passes(const Conv2dDesc& d, DType dtype, Device device, const std::vector<ConvPass>& passes,
                      ConvPlan& plan, std::string& report) {
  Backend& backend = backend_for(device);
  const TensorOptions o = TensorOptions().dtype(dtype).device(device);
  TimingOperands t;
  t.x = randn({d.N, d.C, d.H, d.W}, o);
  t.w = randn({d.K, d.C_per_group(), d.R, d.S}, o);
  t.y = randn({d.N, d.K, d.P(), d.Q()}, o);
  t.dx = empty_like(t.x);
  t.dw = empty_like(t.w);
  const std::vector<ConvPassChoice> all = candidates(backend, d, dtype);
  CK_CHECK(!all.empty(), "conv2d: no algorithm supports ", d);
  std::ostringstream os;
  for (ConvPass pass : passes) {
    ConvPassChoice best;
    double best_time = 0;
    os << ' ' << conv_pass_name(pass) << ':';
    for (const ConvPassChoice& c : all) {
      os << ' ' << conv_algo_name(c.algo);
      if (c.kernel_version != 0) os << "(v" << c.kernel_version << ')';
      double s = 0;
      try {
        s = time_pass(backend, pass, c, d, dtype, device, t);
      } catch (const Error& e) {  // e.g. its workspace would exceed the limit
        os << "=failed(" << e.what() << ")";
        continue;
      }
      os << '=' << s * 1e3 << "ms";
      if (best.algo == ConvAlgo::automatic || s < best_time) {
        best = c;
        best_time = s;
      }
    }
    CK_CHECK(best.algo != ConvAlgo::automatic, "conv2d: every algorithm failed ", conv_pass_name(pass), " of ", d,
             ":", os.str());
    plan.at(pass) = best;
  }
  report = os.str();
}

ConvPlan same_for_every_pass(ConvAlgo algo) {
  const ConvPassChoice c{algo, {}, 0};
  return {c, c, c};
}

}  // namespace

const ConvPassChoice& ConvPlan::at(ConvPass pass) const {
  return pass == ConvPass::forward ? forward : pass == ConvPass::backward_data ? backward_data : backward_weights;
}

ConvPassChoice& ConvPlan::at(ConvPass pass) {
  return pass == ConvPass::forward ? forward : pass == ConvPass::backward_data ? backward_data : backward_weights;
}

void set_default_conv_algo(ConvAlgo algo) {
  std::lock_guard lock(state().mutex);
  state().default_algo = algo;
}

ConvAlgo default_conv_algo() {
  std::lock_guard lock(state().mutex);
  return state().default_algo;
}

void set_conv_benchmark_mode(bool on) {
  std::lock_guard lock(state().mutex);
  state().benchmark = on;
}

bool conv_benchmark_mode() {
  std::lock_guard lock(state().mutex);
  return state().benchmark;
}

void set_conv_algo_logging(bool on) {
  std::lock_guard lock(state().mutex);
  state().logging = on;
}

ConvPlan select_conv_plan(ConvAlgo requested, const Conv2dDesc& desc, DType dtype, Device device) {
  SelectionState& s = state();
  std::unique_lock lock(s.mutex);
  if (requested == ConvAlgo::automatic) requested = s.default_algo;
  if (requested != ConvAlgo::automatic) return same_for_every_pass(requested);
  const std::string context = context_key(dtype, device);
  const std::string fields = desc_fields(desc);
  ConvPlan plan;
  std::string how;
  bool timed = false;
  if (s.benchmark) {
    // Cached passes keep their choice (a loaded file may hold some passes
    // only); the others are timed. Called with `mutex` held.
    const auto uncached = [&] {
      std::vector<ConvPass> missing;
      for (ConvPass pass : kPasses) {
        const auto it = s.cache.find(pass_key(context, pass, fields));
        if (it != s.cache.end()) plan.at(pass) = it->second;
        else missing.push_back(pass);
      }
      return missing;
    };
    std::vector<ConvPass> missing = uncached();
    how = "benchmark (cached)";
    if (!missing.empty()) {
      lock.unlock();  // other threads may select cached descriptors while this one times
      const std::lock_guard timing(s.timing);
      lock.lock();
      missing = uncached();  // a thread that timed them while this one waited has cached them
      if (!missing.empty()) {
        lock.unlock();
        std::string report;
        benchmark_passes(desc, dtype, device, missing, plan, report);
        lock.lock();
        for (ConvPass pass : missing) s.cache[pass_key(context, pass, fields)] = plan.at(pass);
        how = "benchmark:" + report;
        timed = true;
      }
    }
  } else {
    lock.unlock();
    plan = same_for_every_pass(backend_for(device).conv2d_heuristic(desc, dtype));
    lock.lock();
    how = "heuristic";
  }
  const std::string key = context + " " + fields;
  // Every timing is reported; a plan chosen otherwise, once per descriptor.
  if (s.logging && (timed || !s.logged[key])) {
    s.logged[key] = true;
    std::fprintf(stderr, "convkit: conv2d %s on %s %s (%s) -> forward %s, backward_data %s, backward_weights %s (%s)\n",
                 desc.str().c_str(), device.str().c_str(), std::string(dtype_name(dtype)).c_str(),
                 to_string(float32_precision()).c_str(), choice_text(plan.forward).c_str(),
                 choice_text(plan.backward_data).c_str(), choice_text(plan.backward_weights).c_str(), how.c_str());
  }
  return plan;
}

void save_conv_algo_cache(const std::string& path) {
  std::ostringstream os;
  {
    std::lock_guard lock(state().mutex);
    os << "# convkit conv algorithm cache: device dtype precision pass N C H W K R S stride_h stride_w pad_top "
          "pad_bottom pad_left pad_right dilation_h dilation_w groups workspace_limit -> algo "
          "[kernel-family version]\n";
    for (const auto& [key, choice] : state().cache) os << key << " -> " << choice_text(choice) << '\n';
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    CK_CHECK(out.good(), "save_conv_algo_cache: cannot write ", tmp);
    out << os.str();
    out.flush();
    CK_CHECK(out.good(), "save_conv_algo_cache: writing ", tmp, " failed");
  }
  CK_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "save_conv_algo_cache: cannot rename ", tmp,
           " to ", path);
}

namespace {

// One line's key (normalised) and choice; `where` ("file:line") starts every error.
std::pair<std::vector<std::string>, ConvPassChoice> parse_cache_line(const std::string& line,
                                                                     const std::string& where) {
  const auto arrow = line.find(" -> ");
  CK_CHECK(arrow != std::string::npos, where, ": expected 'key -> algo', got '", line, "'");
  std::istringstream key(line.substr(0, arrow));
  std::vector<std::string> tokens;
  for (std::string t; key >> t;) tokens.push_back(t);
  // The older form has no precision, pass or workspace limit: its algorithm
  // ran every pass, at highest, with the default limit.
  const bool old_form = tokens.size() == 18;
  CK_CHECK(old_form || tokens.size() == 21, where,
           ": expected a device, a dtype, a float32 precision, a pass, 16 descriptor fields and a workspace limit");
  ConvPassChoice choice;
  try {
    Device::parse(tokens[0]);
    CK_CHECK(tokens[1] == dtype_name(DType::float32) || tokens[1] == dtype_name(DType::float64), "'", tokens[1],
             "' is not a floating dtype (float32 or float64)");
    if (!old_form) {
      parse_float32_precision(tokens[2]);
      CK_CHECK(tokens[3] == conv_pass_name(ConvPass::forward) || tokens[3] == conv_pass_name(ConvPass::backward_data) ||
                   tokens[3] == conv_pass_name(ConvPass::backward_weights),
               "'", tokens[3], "' is not a pass (forward, backward_data or backward_weights)");
    }
    const auto integer = [](const std::string& t, auto& value) {
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
      return ec == std::errc() && end == t.data() + t.size();
    };
    for (std::size_t i = old_form ? 2 : 4; i < tokens.size(); ++i) {
      std::uint64_t field = 0;
      CK_CHECK(integer(tokens[i], field), "'", tokens[i], "' is not a descriptor field");
    }
    std::istringstream value(line.substr(arrow + 4));
    std::vector<std::string> words;
    for (std::string w; value >> w;) words.push_back(w);
    CK_CHECK((words.size() == 1 || words.size() == 3) &&
                 (words.size() == 1 || (integer(words[2], choice.kernel_version) && choice.kernel_version > 0)),
             "expected 'algo' or 'algo kernel-family version' after '->', got '", line.substr(arrow + 4), "'");
    choice.algo = parse_conv_algo(words[0]);
    if (words.size() == 3) choice.kernel_family = words[1];
  } catch (const Error& e) {
    CK_FAIL(where, ": ", e.what());
  }
  const std::size_t first_field = old_form ? 2 : 4;
  std::string fields = tokens[first_field];
  for (std::size_t i = first_field + 1; i < tokens.size(); ++i) fields += " " + tokens[i];
  if (!old_form) {
    const std::string context = tokens[0] + " " + tokens[1] + " " + tokens[2];
    return {{context + " " + tokens[3] + " " + fields}, choice};
  }
  const std::string context = tokens[0] + " " + tokens[1] + " " + to_string(Float32Precision::highest);
  fields += " " + std::to_string(Conv2dDesc().workspace_limit);
  std::vector<std::string> keys;
  for (ConvPass pass : kPasses) keys.push_back(pass_key(context, pass, fields));
  return {keys, choice};
}

}  // namespace

void load_conv_algo_cache(const std::string& path) {
  std::ifstream in(path);
  CK_CHECK(in.good(), "load_conv_algo_cache: cannot open ", path);
  std::map<std::string, ConvPassChoice> loaded;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto [keys, choice] = parse_cache_line(line, path + ":" + std::to_string(number));
    for (const std::string& k : keys) loaded[k] = choice;
  }
  std::lock_guard lock(state().mutex);
  for (auto& [k, c] : loaded) state().cache[k] = c;
}

void clear_conv_algo_cache() {
  std::lock_guard lock(state().mutex);
  state().cache.clear();
  state().logged.clear();
}

}  // namespace convkit
