// Core overheads: op dispatch on tiny tensors, elementwise bandwidth against
// memcpy, and matmul against raw Eigen on the same buffers.
//
// Floors: a small op's cost is dispatch (argument checks, allocation, backend
// call); target < 1 us. An elementwise op on N floats moves 12N bytes (two
// reads, one write) and is bandwidth-bound, so its ceiling is memcpy's rate.
// matmul does 2MNK flops; Eigen's GEMM is the ceiling (target: within 5%).
#include <benchmark/benchmark.h>

#include <convkit/convkit.h>

#include <Eigen/Core>
#include <cstring>
#include <vector>

using namespace convkit;

namespace {

// GFLOP/s of `flops` per iteration, as a Google Benchmark rate counter.
benchmark::Counter gflops_counter(double flops) {
  return benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DispatchAddTiny(benchmark::State& state) {
  const Tensor a = ones({4}), b = ones({4});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetLabel("out-of-place add of 4 floats: checks + allocation + kernel");
}
BENCHMARK(BM_DispatchAddTiny);

void BM_DispatchAddInplaceTiny(benchmark::State& state) {
  Tensor a = ones({4});
  const Tensor b = ones({4});
  for (auto _ : state) benchmark::DoNotOptimize(a.add_(b));
  state.SetLabel("in-place add of 4 floats: no allocation");
}
BENCHMARK(BM_DispatchAddInplaceTiny);

void BM_DispatchAddTinyWithGrad(benchmark::State& state) {
  const Tensor a = ones({4}, TensorOptions().requires_grad()), b = ones({4});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetLabel("add of 4 floats recording an autograd node");
}
BENCHMARK(BM_DispatchAddTinyWithGrad);

// Rotates among enough buffers that each iteration misses the cache, so the
// figure is DRAM bandwidth, not L2's.
struct Buffers {
  std::vector<Tensor> a, b, out;
  explicit Buffers(std::int64_t n, int count = 4) {
    for (int i = 0; i < count; ++i) {
      a.push_back(rand({n}));
      b.push_back(rand({n}));
      out.push_back(empty({n}));
    }
  }
};

void BM_ElementwiseAdd(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Buffers buf(n);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.out[i % 4].copy_(buf.a[i % 4]).add_(buf.b[i % 4]));
    ++i;
  }
  // copy_ then add_: 2 reads + 1 write, then 2 reads + 1 write.
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4 * 5);
  state.counters["floor_bytes"] = static_cast<double>(n * 4 * 3);
}
BENCHMARK(BM_ElementwiseAdd)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24);

void BM_ElementwiseAddOutOfPlace(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Buffers buf(n);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(add(buf.a[i % 4], buf.b[i % 4]));
    ++i;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4 * 3);
  state.SetLabel("includes allocating the output");
}
BENCHMARK(BM_ElementwiseAddOutOfPlace)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24);

void BM_ElementwiseExp(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Buffers buf(n);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(exp(buf.a[i % 4]));
    ++i;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4 * 2);
}
BENCHMARK(BM_ElementwiseExp)->Arg(1 << 20)->Arg(1 << 24);

void BM_Memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Buffers buf(n);
  std::size_t i = 0;
  for (auto _ : state) {
    std::memcpy(buf.out[i % 4].raw_data(), buf.a[i % 4].raw_data(), static_cast<std::size_t>(n) * 4);
    benchmark::ClobberMemory();
    ++i;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4 * 2);
  state.SetLabel("the bandwidth ceiling (1 read + 1 write)");
}
BENCHMARK(BM_Memcpy)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24);

void BM_Matmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor a = rand({n, n}), b = rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.counters["gflops"] = gflops_counter(2.0 * static_cast<double>(n * n * n));
}
BENCHMARK(BM_Matmul)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_EigenMatmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Tensor a = rand({n, n}), b = rand({n, n});
  const Eigen::Map<const M> ma(a.data<float>(), n, n), mb(b.data<float>(), n, n);
  for (auto _ : state) {
    M c(n, n);  // allocated per call, as matmul allocates its output
    c.noalias() = ma * mb;
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["gflops"] = gflops_counter(2.0 * static_cast<double>(n * n * n));
  state.SetLabel("raw Eigen: the ceiling for matmul");
}
BENCHMARK(BM_EigenMatmul)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
