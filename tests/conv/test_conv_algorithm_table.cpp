// The table of convolution algorithms (convkit/conv/algorithms.h) against
// everything that derives a list from it: name parsing, each backend's
// registry and supports(), the CLI's --algo, and bench_conv's default
// benchmarks. An algorithm added to the table but missing from one of these
// (or registered by a backend the table does not name) fails here.
#include <gtest/gtest.h>

#include <convkit/convkit.h>

#include <set>
#include <string>

#include "cpu/conv/conv_algorithm.h"
#include "gpu/gpu_conv_algorithm.h"
#include "support/command.h"

namespace convkit {
namespace {

using testing::run_command;
using testing::shell_quote;

TEST(ConvAlgorithmTable, NamesAreUniqueAndRoundTrip) {
  std::set<std::string_view> names{"automatic"};
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    SCOPED_TRACE(std::string(info.name));
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate name";
    EXPECT_FALSE(info.summary.empty());
    EXPECT_EQ(info.doc.substr(0, 16), "docs/algorithms/");
    EXPECT_EQ(parse_conv_algo(info.name), info.algo);
    EXPECT_EQ(conv_algo_name(info.algo), info.name);
    EXPECT_EQ(&conv_algo_info(info.algo), &info);
  }
  EXPECT_EQ(parse_conv_algo("automatic"), ConvAlgo::automatic);
  EXPECT_THROW(conv_algo_info(ConvAlgo::automatic), Error);
}

TEST(ConvAlgorithmTable, UnknownNameListsEveryAlgorithm) {
  try {
    parse_conv_algo("magic");
    FAIL() << "parse_conv_algo accepted 'magic'";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const ConvAlgoInfo& info : kConvAlgorithms)
      EXPECT_NE(message.find(info.name), std::string::npos) << message;
  }
}

// Each backend implements exactly the algorithms the table says it does.
void expect_registry_matches(const conv::ConvAlgorithmRegistry& registry, bool ConvAlgoInfo::*implemented) {
  std::size_t expected = 0;
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    const conv::ConvAlgorithm* a = registry.find(info.algo);
    EXPECT_EQ(a != nullptr, info.*implemented) << registry.backend() << " " << info.name;
    if (a != nullptr) {
      EXPECT_EQ(a->algo(), info.algo);
    }
    expected += info.*implemented ? 1 : 0;
  }
  EXPECT_EQ(registry.all().size(), expected) << registry.backend() << " registers an algorithm outside the table";
}

TEST(ConvAlgorithmTable, CpuRegistryMatchesTable) { expect_registry_matches(cpu::conv_registry(), &ConvAlgoInfo::cpu); }

TEST(ConvAlgorithmTable, SimRegistryMatchesTable) {
  expect_registry_matches(gpu_sim::conv_registry(), &ConvAlgoInfo::gpu);
}

TEST(ConvAlgorithmTable, RegistryRefusesASecondImplementation) {
  conv::ConvAlgorithmRegistry registry("test");
  registry.add(cpu::conv_algorithm(ConvAlgo::direct));
  EXPECT_THROW(registry.add(cpu::conv_algorithm(ConvAlgo::direct)), Error);
  EXPECT_THROW(registry.get(ConvAlgo::fft), Error);
  EXPECT_THROW(registry.get(ConvAlgo::automatic), Error);
}

// A 3x3 "same" layer every algorithm supports, so supports() answers for
// the backend, not for the shape.
Conv2dDesc plain_layer() {
  Conv2dDesc d;
  d.N = 1, d.C = 4, d.H = 8, d.W = 8, d.K = 4, d.R = 3, d.S = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  return d;
}

TEST(ConvAlgorithmTable, BackendsSupportWhatTheTableSays) {
  for (const auto& [device, implemented] : {std::pair{kCPU, &ConvAlgoInfo::cpu},
                                            std::pair{kSim, &ConvAlgoInfo::gpu}}) {
    Backend& backend = backend_for(device);
    for (const ConvAlgoInfo& info : kConvAlgorithms) {
      const Support s = backend.conv2d_supports(info.algo, plain_layer());
      EXPECT_EQ(s.ok, info.*implemented) << device << " " << info.name << ": " << s.reason;
      if (!s.ok) {
        EXPECT_NE(s.reason.find("not implemented"), std::string::npos) << s.reason;
      }
    }
    EXPECT_FALSE(backend.conv2d_supports(ConvAlgo::automatic, plain_layer()));
  }
}

#ifdef CONVKIT_CLI_PATH
TEST(ConvAlgorithmTable, CliAcceptsAndListsEveryAlgorithm) {
  const std::string cli = shell_quote(CONVKIT_CLI_PATH);
  const testing::CommandResult help = run_command(cli + " train --help");
  ASSERT_EQ(help.status, 0) << help.err;
  const testing::CommandResult bad = run_command(cli + " bench train fmnist-cnn --algo magic");
  EXPECT_NE(bad.status, 0);
  for (const ConvAlgoInfo& info : kConvAlgorithms) {
    EXPECT_NE(help.out.find(info.name), std::string::npos) << "train --help lacks " << info.name;
    EXPECT_NE(bad.err.find(info.name), std::string::npos) << "--algo's error lacks " << info.name;
    // A valid name gets past --algo: the run then stops at the missing model
    // file, not at the algorithm.
    const testing::CommandResult r =
        run_command(cli + " eval /nonexistent/model.ckpt --algo " + std::string(info.name));
    EXPECT_EQ(r.err.find("--algo"), std::string::npos) << info.name << ": " << r.err;
  }
}
#endif

#ifdef CONVKIT_BENCH_CONV_PATH
TEST(ConvAlgorithmTable, BenchConvRunsEveryAlgorithmByDefault) {
  const testing::CommandResult r = run_command(shell_quote(CONVKIT_BENCH_CONV_PATH) +
                                               " --benchmark_list_tests=true --sets=tiny --layer-file=" +
                                               shell_quote(CONVKIT_TINY_LAYERS_FILE) + " --devices=cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const ConvAlgoInfo& info : kConvAlgorithms)
    EXPECT_NE(r.out.find("/cpu/" + std::string(info.name) + "/fwd"), std::string::npos)
        << "bench_conv's default list lacks " << info.name << ":\n" << r.out;
}
#endif

}  // namespace
}  // namespace convkit
