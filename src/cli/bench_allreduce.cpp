// `mpirun -np N convkit bench allreduce`: what one all-reduce of the job's
// process group costs, by message size, measured through dist::world() as
// DistributedDataParallel uses it (the group's thread, MPI's nonblocking
// all-reduce, the polling wait). Its small-message time is the latency and
// its large-message bus bandwidth the link speed that the scaling model of
// docs/distributed-scaling.md takes as inputs.
//
// Every rank runs the same sizes and iteration counts (a pure function of
// the size), since each all-reduce is a collective. The time reported for a
// size is the slowest rank's, as a collective ends when its last rank does.
#include "cli/bench_allreduce.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/arg_parser.h"
#include "cli/build_commit.h"
#include "cli/cli_common.h"
#include "cli/train_ranks.h"
#include "convkit/core/error.h"
#include "convkit/core/host_info.h"
#include "convkit/dist/process_group.h"
#include "convkit/ops/factory.h"
#include "convkit/version.h"

namespace convkit::cli {

namespace {

// Enough repetitions that a size takes about as long as moving this many
// bytes, within bounds: small messages are repeated to average out the
// clock, large ones are not repeated for minutes.
constexpr std::int64_t kBytesPerSize = 256LL << 20;
constexpr std::int64_t kMinIterations = 5, kMaxIterations = 1000;

std::int64_t iterations_for(std::int64_t bytes) {
  return std::clamp(kBytesPerSize / std::max<std::int64_t>(bytes, 1), kMinIterations, kMaxIterations);
}

// Every rank's value of `mine`, in rank order: an all-reduce of a tensor
// that is zero but for this rank's slot.
std::vector<double> gather_from_ranks(dist::ProcessGroup& group, double mine) {
  Tensor slots = zeros({group.size()}, TensorOptions().dtype(DType::float64));
  slots.data<double>()[group.rank()] = mine;
  group.allreduce_sum(slots)->wait();
  return slots.to_vector<double>();
}

// Fills rank r's buffer with r + 1 and checks the sum on every element, so a
// benchmark of a broken group fails instead of timing it.
void check_sum(dist::ProcessGroup& group, Tensor& buffer) {
  buffer.fill_(static_cast<double>(group.rank() + 1));
  group.allreduce_sum(buffer)->wait();
  const double n = group.size(), expected = n * (n + 1) / 2;
  const auto* p = buffer.data<float>();
  for (std::int64_t i = 0; i < buffer.numel(); ++i)
    CK_CHECK(p[i] == static_cast<float>(expected), "bench allreduce: element ", i, " of ", buffer.numel(),
             " summed to ", p[i], " over ", group.size(), " ranks; expected ", expected);
}

struct SizeResult {
  std::int64_t bytes, iterations;
  double seconds;  // per all-reduce, the slowest rank's
  double algbw, busbw;  // bytes/s: bytes / time, and the ring's per-link load 2(N-1)/N bytes / time
};

SizeResult time_size(dist::ProcessGroup& group, std::int64_t bytes) {
  Tensor buffer = Tensor::empty({bytes / 4});
  check_sum(group, buffer);
  buffer.zero_();  // sums of zeros stay zeros: no overflow however often it runs
  group.allreduce_sum(buffer)->wait();  // warm-up
  const std::int64_t iterations = iterations_for(bytes);
  group.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < iterations; ++i) group.allreduce_sum(buffer)->wait();
  const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<double> all = gather_from_ranks(group, mine);
  const double seconds = *std::max_element(all.begin(), all.end()) / static_cast<double>(iterations);
  const double n = group.size();
  const double algbw = static_cast<double>(bytes) / seconds;
  return {bytes, iterations, seconds, algbw, algbw * 2 * (n - 1) / n};
}

}  // namespace

int bench_allreduce(const Args& args) {
  const ParsedArgs p(args, "bench allreduce", {{"min-bytes", true}, {"max-bytes", true}, {"json", false}});
  p.expect_positional(0, 0, "only options: --min-bytes, --max-bytes, --json");
  const std::int64_t min_bytes = p.int_or("min-bytes", 8, 4);
  const std::int64_t max_bytes = p.int_or("max-bytes", 64LL << 20, 4);
  CK_CHECK(min_bytes % 4 == 0 && max_bytes % 4 == 0, "bench allreduce: --min-bytes ", min_bytes, " and --max-bytes ",
           max_bytes, " must be multiples of 4 (float32 elements)");
  CK_CHECK(min_bytes <= max_bytes, "bench allreduce: --min-bytes ", min_bytes, " is above --max-bytes ", max_bytes);
  std::shared_ptr<dist::ProcessGroup> group = join_training_job();
  if (!group) group = dist::world();

  std::vector<SizeResult> results;
  try {
    for (std::int64_t bytes = min_bytes;; bytes *= 4) {
      results.push_back(time_size(*group, std::min(bytes, max_bytes)));
      if (bytes >= max_bytes) break;
    }
  } catch (const Error& e) {
    if (group->size() == 1) throw;
    throw Error("bench allreduce: rank " + std::to_string(group->rank()) + " of " + std::to_string(group->size()) +
                ": " + e.what());
  }

  std::printf("bench allreduce: %d rank%s, %s group, float32 sum, time per all-reduce (the slowest rank's)\n",
              group->size(), group->size() == 1 ? "" : "s", group->backend().c_str());
  if (group->size() == 1) std::printf("(one rank communicates nothing: start it with mpirun -np N)\n");
  std::printf("%12s %10s %12s %12s %12s\n", "bytes", "iterations", "us", "algbw GB/s", "busbw GB/s");
  for (const SizeResult& r : results)
    std::printf("%12lld %10lld %12.2f %12.3f %12.3f\n", static_cast<long long>(r.bytes),
                static_cast<long long>(r.iterations), r.seconds * 1e6, r.algbw / 1e9, r.busbw / 1e9);
  if (p.flag("json"))
    for (const SizeResult& r : results) {
      JsonLine line;
      line.add("command", "bench allreduce")
          .add("ranks", group->size())
          .add("backend", group->backend())
          .add("bytes", r.bytes)
          .add("iterations", r.iterations)
          .add("seconds", r.seconds)
          .add("algbw_bytes_per_sec", r.algbw)
          .add("busbw_bytes_per_sec", r.busbw)
          .add("host", cpu_model())
          .add("threads", omp_get_max_threads())
          .add("compiler", compiler_version())
          .add("commit", CONVKIT_COMMIT)
          .add("version", CONVKIT_VERSION_STRING);
      std::printf("%s\n", line.str().c_str());
    }
  return 0;
}

}  // namespace convkit::cli
