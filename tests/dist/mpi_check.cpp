// Run under mpirun by the ctest entries dist.mpi.* (tests/dist/CMakeLists.txt):
//   mpirun -np 2 --oversubscribe mpi_check MODE
// collectives  values of allreduce_sum and broadcast, many in flight, odd,
//              empty and 30 MB tensors; prints "rank R: ok" per rank
// hang         rank 1 stops issuing collectives; rank 0 must time out
// hang-root    the same with rank 0 stopped: rank 1 must name it
// leave        rank 1's program ends early; rank 0 must abort at once
// kill         rank 1 kills itself (SIGKILL) mid-job
// throw        an exception escapes rank 1's main
// device-id    dist::device_group(sim) over MPI: the id rank 0 makes reaches
//              rank 1, which refuses it (the sim emulation joins threads of
//              one process, and the id names rank 0's), and rank 0 times out
//              waiting for rank 1 to join
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "convkit/core/error.h"
#include "convkit/dist/device_group.h"
#include "convkit/dist/process_group.h"
#include "convkit/ops/factory.h"
#include "mpi_expect.h"

using namespace convkit;
using convkit::testing::expect;
using convkit::testing::mpi_failures;

namespace {

// Element i of rank r's tensor: exact in float32 for the sizes used here.
double value(std::int64_t i, int r) { return static_cast<double>(i % 1000) + 1000.0 * r; }

Tensor filled(std::int64_t n, int rank, DType dtype) {
  Tensor t = empty({n}, dtype);
  for (std::int64_t i = 0; i < n; ++i) {
    if (dtype == DType::float32) {
      t.data<float>()[i] = static_cast<float>(value(i, rank));
    } else {
      t.data<double>()[i] = value(i, rank);
    }
  }
  return t;
}

double at(const Tensor& t, std::int64_t i) {
  return t.dtype() == DType::float32 ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
}

// Every element of `t` equals f(i); names the first that does not.
template <typename F>
void expect_values(const Tensor& t, F f, int rank, const std::string& what) {
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (at(t, i) != f(i)) {
      expect(false, rank, what + ": element " + std::to_string(i) + " is " + std::to_string(at(t, i)) +
                              ", expected " + std::to_string(f(i)));
      return;
    }
  }
}

void check_collectives(dist::ProcessGroup& g) {
  const int rank = g.rank(), size = g.size();
  double rank_sum = 0;
  for (int r = 0; r < size; ++r) rank_sum += 1000.0 * r;
  const auto summed = [&](std::int64_t i) { return static_cast<double>(size) * static_cast<double>(i % 1000) + rank_sum; };
  expect(g.backend() == "mpi", rank, "backend() is " + g.backend());

  for (DType dtype : {DType::float32, DType::float64}) {
    const std::string name(dtype_name(dtype));
    for (std::int64_t n : {1, 7, 1001}) {
      Tensor t = filled(n, rank, dtype);
      g.allreduce_sum(t)->wait();
      expect_values(t, summed, rank, "allreduce_sum " + name + " [" + std::to_string(n) + "]");
      for (int root = 0; root < size; ++root) {
        Tensor b = filled(n, rank, dtype);
        g.broadcast(b, root)->wait();
        expect_values(b, [&](std::int64_t i) { return value(i, root); }, rank,
                      "broadcast " + name + " from " + std::to_string(root));
      }
    }
    // Empty tensors take part like any other.
    Tensor none = empty({0}, dtype), none2 = empty({3, 0}, dtype);
    g.allreduce_sum(none)->wait();
    g.broadcast(none2, size - 1)->wait();
  }

  // Many in flight at once, waited for in reverse: each holds its own sum.
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<dist::Work>> works;
  for (int k = 0; k < 64; ++k) {
    tensors.push_back(filled(1 + 37 * k, rank, k % 2 ? DType::float64 : DType::float32));
    works.push_back(g.allreduce_sum(tensors.back()));
  }
  for (int k = 63; k >= 0; --k) works[static_cast<std::size_t>(k)]->wait();
  for (int k = 0; k < 64; ++k) expect_values(tensors[static_cast<std::size_t>(k)], summed, rank, "in flight #" + std::to_string(k));

  // Issue order is run order: broadcasting the last rank's values and then
  // summing gives size x its values; the other order would give the sum.
  // Both are queued behind a 30 MB allreduce, so the group's thread finds
  // them waiting together and must pick the first.
  Tensor big = filled(7'500'000, rank, DType::float32);
  auto big_work = g.allreduce_sum(big);
  Tensor ordered = filled(5, rank, DType::float64);
  auto first = g.broadcast(ordered, size - 1);
  auto second = g.allreduce_sum(ordered);
  second->wait();
  first->wait();
  big_work->wait();
  expect_values(ordered, [&](std::int64_t i) { return size * value(i, size - 1); }, rank, "broadcast then allreduce");
  expect_values(big, summed, rank, "allreduce_sum float32 [7500000] (30 MB)");

  // A bad tensor is refused on the calling thread and takes no turn.
  try {
    g.allreduce_sum(zeros({2}, DType::int64));
    expect(false, rank, "an int64 allreduce was accepted");
  } catch (const Error&) {
  }

  g.barrier();
}

void issue_some(dist::ProcessGroup& g, int count) {
  for (int k = 0; k < count; ++k) g.allreduce_sum(zeros({4}))->wait();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto g = dist::world();
  const int rank = g->rank();
  if (mode == "collectives") {
    check_collectives(*g);
    std::printf("rank %d: %s\n", rank, mpi_failures ? "FAILED" : "ok");
    return mpi_failures ? 1 : 0;
  }
  if (mode == "device-id") {
    std::string error;
    try {
      dist::device_group(kSim, g, dist::ProcessGroupOptions().timeout(2));
    } catch (const Error& e) {
      error = e.what();
    }
    const std::string want = rank == 0 ? "rank 1 of 2 did not join within 2 s" : "this id was made by process";
    expect(error.find(want) != std::string::npos, rank, "the error \"" + error + "\" lacks \"" + want + "\"");
    std::printf("rank %d: %s\n", rank, mpi_failures ? "FAILED" : "ok");
    return mpi_failures ? 1 : 0;
  }
  issue_some(*g, 3);
  if (mode == "hang" || mode == "hang-root") {
    if (rank == (mode == "hang" ? 1 : 0)) std::this_thread::sleep_for(std::chrono::seconds(120));
    issue_some(*g, 1);  // #4, which rank 1 never reaches
  } else if (mode == "leave") {
    if (rank == 1) return 3;
    issue_some(*g, 1);
  } else if (mode == "kill") {
    if (rank == 1) std::raise(SIGKILL);
    issue_some(*g, 1);
  } else if (mode == "throw") {
    if (rank == 1) throw Error("rank 1 gives up");
    issue_some(*g, 1);
  } else {
    std::fprintf(stderr, "usage: mpi_check collectives|hang|hang-root|leave|kill|throw|device-id\n");
    return 2;
  }
  std::printf("rank %d: got past the failure\n", rank);
  return 0;
}
