#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "convkit/ops/conv_algo.h"
#include "convkit/ops/factory.h"
#include "ops/op_helpers.h"

namespace convkit {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

struct SelectionState {
  std::mutex mutex;
  ConvAlgo default_algo = ConvAlgo::automatic;
  bool benchmark = env_flag("CONVKIT_CONV_BENCHMARK");
  bool logging = env_flag("CONVKIT_CONV_LOG");
  std::map<std::string, ConvAlgo> cache;   // benchmark winners
  std::map<std::string, bool> logged;      // descriptors already reported
};

SelectionState& state() {
  static SelectionState s;
  return s;
}

std::string desc_fields(const Conv2dDesc& d) {
  std::ostringstream os;
  os << d.N << ' ' << d.C << ' ' << d.H << ' ' << d.W << ' ' << d.K << ' ' << d.R << ' ' << d.S << ' '
     << d.stride_h << ' ' << d.stride_w << ' ' << d.pad_top << ' ' << d.pad_bottom << ' ' << d.pad_left
     << ' ' << d.pad_right << ' ' << d.dilation_h << ' ' << d.dilation_w << ' ' << d.groups;
  return os.str();
}

std::string cache_key(const Conv2dDesc& d, DType dtype, Device device) {
  return device.str() + " " + std::string(dtype_name(dtype)) + " " + desc_fields(d);
}

// Runs the three passes once with `algo` and returns the seconds taken.
double time_algo(Backend& backend, ConvAlgo algo, const Conv2dDesc& d, DType dtype, Device device) {
  const TensorOptions o = TensorOptions().dtype(dtype).device(device);
  const Tensor x = randn({d.N, d.C, d.H, d.W}, o), w = randn({d.K, d.C_per_group(), d.R, d.S}, o);
  const Tensor y = empty({d.N, d.K, d.P(), d.Q()}, o), dx = empty_like(x), dw = empty_like(w);
  std::size_t ws = 0;
  for (ConvPass p : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    ws = std::max(ws, backend.conv2d_workspace_bytes(algo, d, dtype, p));
  const Tensor workspace = ws ? empty({static_cast<std::int64_t>((ws + 3) / 4)}, TensorOptions().device(device)) : Tensor();
  backend.synchronize();
  const auto start = std::chrono::steady_clock::now();
  backend.conv2d_forward(algo, d, x, w, Tensor(), y, workspace);
  backend.conv2d_backward_data(algo, d, y, w, dx, workspace);
  backend.conv2d_backward_weights(algo, d, x, y, dw, Tensor(), workspace);
  backend.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ConvAlgo benchmark_winner(const Conv2dDesc& d, DType dtype, Device device, std::string& report) {
  Backend& backend = backend_for(device);
  ConvAlgo best = ConvAlgo::automatic;
  double best_time = 0;
  std::ostringstream os;
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    const ConvAlgo a = info.algo;
    const Support s = backend.conv2d_supports(a, d);
    if (!s) continue;
    double t = 0;
    try {
      t = time_algo(backend, a, d, dtype, device);
    } catch (const Error& e) {  // e.g. its workspace would exceed the limit
      os << ' ' << conv_algo_name(a) << "=failed(" << e.what() << ")";
      continue;
    }
    os << ' ' << conv_algo_name(a) << '=' << t * 1e3 << "ms";
    if (best == ConvAlgo::automatic || t < best_time) {
      best = a;
      best_time = t;
    }
  }
  CK_CHECK(best != ConvAlgo::automatic, "conv2d: no algorithm supports ", d);
  report = os.str();
  return best;
}

}  // namespace

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

ConvAlgo select_conv_algo(ConvAlgo requested, const Conv2dDesc& desc, DType dtype, Device device) {
  SelectionState& s = state();
  std::unique_lock lock(s.mutex);
  if (requested == ConvAlgo::automatic) requested = s.default_algo;
  if (requested != ConvAlgo::automatic) return requested;
  const std::string key = cache_key(desc, dtype, device);
  ConvAlgo chosen;
  std::string how;
  if (s.benchmark) {
    if (auto it = s.cache.find(key); it != s.cache.end()) {
      chosen = it->second;
      how = "benchmark (cached)";
    } else {
      lock.unlock();  // timing runs convolutions; other threads may select meanwhile
      std::string report;
      chosen = benchmark_winner(desc, dtype, device, report);
      lock.lock();
      s.cache[key] = chosen;
      how = "benchmark:" + report;
    }
  } else {
    lock.unlock();
    chosen = backend_for(device).conv2d_heuristic(desc, dtype);
    lock.lock();
    how = "heuristic";
  }
  if (s.logging && !s.logged[key]) {
    s.logged[key] = true;
    std::fprintf(stderr, "convkit: conv2d %s on %s %s -> %s (%s)\n", desc.str().c_str(),
                 device.str().c_str(), std::string(dtype_name(dtype)).c_str(),
                 std::string(conv_algo_name(chosen)).c_str(), how.c_str());
  }
  return chosen;
}

void save_conv_algo_cache(const std::string& path) {
  std::ostringstream os;
  {
    std::lock_guard lock(state().mutex);
    os << "# convkit conv algorithm cache: device dtype N C H W K R S stride_h stride_w pad_top "
          "pad_bottom pad_left pad_right dilation_h dilation_w groups -> algo\n";
    for (const auto& [key, algo] : state().cache) os << key << " -> " << conv_algo_name(algo) << '\n';
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

void load_conv_algo_cache(const std::string& path) {
  std::ifstream in(path);
  CK_CHECK(in.good(), "load_conv_algo_cache: cannot open ", path);
  std::map<std::string, ConvAlgo> loaded;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto arrow = line.find(" -> ");
    CK_CHECK(arrow != std::string::npos, path, ":", number, ": expected 'key -> algo', got '", line, "'");
    std::istringstream fields(line.substr(0, arrow));
    std::string device, dtype;
    std::int64_t v;
    int count = 0;
    fields >> device >> dtype;
    while (fields >> v) ++count;
    CK_CHECK(count == 16 && fields.eof(), path, ":", number, ": expected a device, a dtype and 16 descriptor fields");
    Device::parse(device);
    ConvAlgo algo;
    try {
      algo = parse_conv_algo(line.substr(arrow + 4));
    } catch (const Error& e) {
      CK_FAIL(path, ":", number, ": ", e.what());
    }
    loaded[line.substr(0, arrow)] = algo;
  }
  std::lock_guard lock(state().mutex);
  for (auto& [k, a] : loaded) state().cache[k] = a;
}

void clear_conv_algo_cache() {
  std::lock_guard lock(state().mutex);
  state().cache.clear();
  state().logged.clear();
}

}  // namespace convkit
