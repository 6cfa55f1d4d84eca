// Raw tests of the reduction kernels (kernels/reduce.cu) through
// GpuBackend::reduce / argmax: every version against a float64 reference and
// against v1, on odd shapes, strided and broadcast inputs, empty and size-1
// dims, NaN and infinities, under several sim schedules, plus the planner's
// choice of mapping (so each v3 path, split or not, is known to run).
#include <cmath>
#include <limits>
#include <set>

#include "convkit/sim/schedule.h"
#include "gpu/gpu_testing.h"
#include "kernels/reduce.cuh"

namespace convkit {
namespace {

using testing::gpu_devices;
using testing::ScopedKernelVersion;
namespace kernels = convkit::gpu_sim;

constexpr int kVersions = 3;
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};

const char* op_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "min";
}

enum class Layout { contiguous, gapped, permuted, broadcast };
const char* layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous: return "contiguous";
    case Layout::gapped: return "gapped";
    case Layout::permuted: return "permuted";
    case Layout::broadcast: return "broadcast";
  }
  return "?";
}

// x of `shape` on `device` laid out as asked, with the same logical values
// however it is laid out (the reference reads them back row-major).
Tensor make_input(const Shape& shape, Layout layout, DType dt, Device device, std::mt19937_64& rng) {
  const TensorOptions o = TensorOptions().dtype(dt).device(device);
  switch (layout) {
    case Layout::contiguous: return testing::random_tensor(shape, rng, o);
    case Layout::gapped: return testing::noncontiguous(testing::random_tensor(shape, rng, o));
    case Layout::permuted: {  // stored with the dims reversed, viewed back in order
      std::vector<std::int64_t> rev(shape.begin(), shape.end()), order;
      std::reverse(rev.begin(), rev.end());
      for (std::int64_t d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) order.push_back(d);
      return testing::random_tensor(Shape(rev), rng, o).permute(order);
    }
    case Layout::broadcast: {  // dim 0 expanded from size 1 (stride 0)
      Shape one = shape;
      if (!one.empty()) one[0] = 1;
      return testing::random_tensor(one, rng, o).expand(shape);
    }
  }
  return {};
}

Shape kept_shape(const Shape& s, const std::set<std::int64_t>& dims) {
  Shape out = s;
  for (auto d : dims) out[static_cast<std::size_t>(d)] = 1;
  return out;
}

// For each element of x (row-major), the flat index of the output it reduces into.
std::vector<std::size_t> output_of_each_element(const Shape& shape, const std::set<std::int64_t>& dims) {
  const Shape out_shape = kept_shape(shape, dims);
  std::vector<std::int64_t> out_stride(shape.size(), 0);
  std::int64_t step = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (!dims.count(static_cast<std::int64_t>(d))) out_stride[d] = step;
    step *= out_shape[d];
  }
  std::vector<std::size_t> map(static_cast<std::size_t>(shape.numel()));
  std::vector<std::int64_t> idx(shape.size(), 0);
  std::int64_t o = 0;
  for (std::size_t i = 0; i < map.size(); ++i) {
    map[i] = static_cast<std::size_t>(o);
    for (std::size_t d = shape.size(); d-- > 0;) {  // odometer step
      o += out_stride[d];
      if (++idx[d] < shape[d]) break;
      o -= idx[d] * out_stride[d];
      idx[d] = 0;
    }
  }
  return map;
}

// Float64 reference: out[o] = op over x's elements whose index matches o off
// the reduced dims; also sum |x| per output, which scales the sum tolerance.
struct Reference {
  std::vector<double> value, abs_sum;
};
Reference reference(const std::vector<double>& x, const Shape& shape, const std::set<std::int64_t>& dims,
                    ReduceOp op) {
  const auto n_out = static_cast<std::size_t>(kept_shape(shape, dims).numel());
  const double init = op == ReduceOp::sum ? 0.0
                      : op == ReduceOp::max ? -std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::infinity();
  Reference r{std::vector<double>(n_out, init), std::vector<double>(n_out, 0.0)};
  const auto out_of = output_of_each_element(shape, dims);
  for (std::size_t i = 0; i < x.size(); ++i) {
    double& v = r.value[out_of[i]];
    const double e = x[i];
    if (op == ReduceOp::sum) v += e;
    else if (std::isnan(e) || std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
    else v = op == ReduceOp::max ? std::max(v, e) : std::min(v, e);
    r.abs_sum[out_of[i]] += std::abs(e);
  }
  return r;
}

// Any summation order is within n * eps * sum|x| of the exact sum. v1 adds a
// slice serially (n = slice length); v2 and v3 give every thread at most
// ceil(n / 8) elements and combine at most 2^16 partials in trees (docs/gpu/reduce.md).
double sum_tolerance(int version, std::int64_t n_red, double abs_sum, DType dt) {
  const double eps = dt == DType::float32 ? std::numeric_limits<float>::epsilon()
                                          : std::numeric_limits<double>::epsilon();
  const double chain = version == 1 ? static_cast<double>(n_red) : std::ceil(static_cast<double>(n_red) / 8) + 16;
  return chain * eps * abs_sum + 1e-300;
}

Tensor run_reduce(ReduceOp op, const Tensor& x, const std::set<std::int64_t>& dims) {
  Tensor out = empty(kept_shape(x.shape(), dims), TensorOptions().dtype(x.dtype()).device(x.device()));
  backend_for(x.device()).reduce(op, x, out);
  return out;
}

Tensor run_argmax(const Tensor& x, std::int64_t dim) {
  Tensor out = empty(kept_shape(x.shape(), {dim}), TensorOptions().dtype(DType::int64).device(x.device()));
  backend_for(x.device()).argmax(x, dim, out);
  return out;
}

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Checks every version of `op` over `dims` of x against the reference and v1.
void check_all_versions(const Tensor& x, const std::set<std::int64_t>& dims, ReduceOp op) {
  const auto xv = x.to_vector<double>();
  const Reference ref = reference(xv, x.shape(), dims, op);
  std::int64_t n_red = 1;
  for (auto d : dims) n_red *= x.size(d);
  std::vector<double> v1;
  for (int version = 1; version <= kVersions; ++version) {
    SCOPED_TRACE("version " + std::to_string(version));
    ScopedKernelVersion scoped("reduce", version);
    const auto got = run_reduce(op, x, dims).to_vector<double>();
    ASSERT_EQ(got.size(), ref.value.size());
    if (version == 1) v1 = got;
    for (std::size_t o = 0; o < got.size(); ++o) {
      if (op == ReduceOp::sum && std::isfinite(ref.value[o])) {
        const double tol = sum_tolerance(version, n_red, ref.abs_sum[o], x.dtype());
        ASSERT_NEAR(got[o], ref.value[o], tol) << "output " << o;
        ASSERT_NEAR(got[o], v1[o], tol + sum_tolerance(1, n_red, ref.abs_sum[o], x.dtype())) << "output " << o;
      } else {
        // max and min pick an element: exact in any order, and NaN when the slice
        // has one; a sum with an infinity is that infinity (or NaN) in any order.
        ASSERT_TRUE(same_value(got[o], ref.value[o])) << "output " << o << ": " << got[o] << " vs " << ref.value[o];
        ASSERT_TRUE(same_value(got[o], v1[o])) << "output " << o;
      }
    }
  }
}

struct Case {
  Shape shape;
  std::set<std::int64_t> dims;
};

// Odd sizes, primes, 1s, every mapping of v3 (see PlannerPicksEachMapping).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{7}, {0}},                          // a single output
      {{5, 37}, {1}},                      // warp rows
      {{5, 37}, {0}},                      // columns (37 outputs in a row)
      {{3, 2000}, {1}},                    // block rows
      {{3, 9001}, {1}},                    // block rows split over 2 blocks per slice
      {{301, 70}, {0}},                    // columns split over 2 blocks per tile
      {{2, 3, 4, 5}, {0, 2}},              //
      {{2, 3, 4, 5}, {1, 3}},              //
      {{2, 3, 4, 5}, {0, 1, 2, 3}},        //
      {{2, 33, 5}, {0, 2}},                // batch-norm-like: channels kept
      {{4, 1, 6}, {1}},                    // a size-1 reduced dim
      {{1, 1, 1}, {0, 1, 2}},              //
      {{2, 1, 3, 1, 2, 1, 2, 3}, {1, 3, 5, 7}},  // rank 8
      {{3, 1, 5, 2, 1, 3, 2, 2}, {0, 2, 4, 6}},
  };
  return c;
}

class GpuReduce : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { kernels::reduce_kernel_version(); }  // registers the family
};

TEST_P(GpuReduce, EveryVersionMatchesFloat64ReferenceAndV1) {
  std::mt19937_64 rng(testing::kSeed + 900);
  for (DType dt : {DType::float32, DType::float64})
    for (const Case& c : cases())
      for (Layout layout : {Layout::contiguous, Layout::gapped, Layout::permuted, Layout::broadcast}) {
        const Tensor x = make_input(c.shape, layout, dt, GetParam(), rng);
        for (ReduceOp op : kOps) {
          SCOPED_TRACE(::testing::Message() << op_name(op) << " of " << c.shape << " " << layout_name(layout) << " "
                                            << dtype_name(dt));
          check_all_versions(x, c.dims, op);
        }
      }
}

TEST_P(GpuReduce, EmptyAndScalarShapes) {
  std::mt19937_64 rng(testing::kSeed + 901);
  for (int version = 1; version <= kVersions; ++version) {
    ScopedKernelVersion scoped("reduce", version);
    // A reduced dim of size 0: every sum is 0.
    const Tensor e = empty({3, 0, 4}, TensorOptions().device(GetParam()));
    EXPECT_TRUE(testing::all_close(run_reduce(ReduceOp::sum, e, {1}), std::vector<double>(12, 0.0), 0, 0));
    EXPECT_TRUE(testing::all_close(run_reduce(ReduceOp::sum, e, {0, 1, 2}), {0.0}, 0, 0));
    // A kept dim of size 0: nothing to write.
    EXPECT_EQ(run_reduce(ReduceOp::max, empty({0, 5}, TensorOptions().device(GetParam())), {1}).numel(), 0);
    // A rank-0 tensor reduces to itself.
    const Tensor s = full({}, 2.5, TensorOptions().device(GetParam()));
    for (ReduceOp op : kOps) EXPECT_EQ(run_reduce(op, s, {}).item(), 2.5);
  }
}

TEST_P(GpuReduce, MaxAndMinPropagateNaNAndHandleInfinities) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::mt19937_64 rng(testing::kSeed + 902);
  for (DType dt : {DType::float32, DType::float64}) {
    for (const Shape& shape : {Shape{4, 40}, Shape{2, 9001}, Shape{301, 70}}) {
      std::vector<double> v = testing::random_tensor(shape, rng).to_vector<double>();
      const std::int64_t rows = shape[0], cols = shape[1];
      auto at = [&](std::int64_t r, std::int64_t c) -> double& { return v[static_cast<std::size_t>(r * cols + c)]; };
      at(0, cols - 1) = nan;
      at(1, 3) = nan;
      if (rows > 3) {
        for (std::int64_t j = 0; j < cols; ++j) at(2, j) = -inf;  // a slice of -inf only
        at(3, 5) = inf;
      }
      const Tensor x = from_vector(v, shape, TensorOptions().dtype(dt).device(GetParam()));
      for (ReduceOp op : kOps)
        for (const std::set<std::int64_t>& dims : {std::set<std::int64_t>{1}, {0}, {0, 1}}) {
          SCOPED_TRACE(::testing::Message() << op_name(op) << " of " << shape << " over " << dims.size() << " dims "
                                            << (dims.count(0) ? "incl. 0" : "1"));
          check_all_versions(x, dims, op);
        }
    }
  }
}

// The cpu's scan `if (x[i] > x[best]) best = i`, which the GPU reproduces.
std::vector<std::int64_t> reference_argmax(const std::vector<double>& x, const Shape& shape, std::int64_t dim) {
  const auto out_of = output_of_each_element(shape, {dim});
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::size_t n_out = static_cast<std::size_t>(kept_shape(shape, {dim}).numel());
  std::vector<std::int64_t> best(n_out, 0);
  std::vector<double> best_value(n_out, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) {  // row-major: each slice in increasing index order
    const std::int64_t k = (static_cast<std::int64_t>(i) / inner) % shape[static_cast<std::size_t>(dim)];
    const std::size_t o = out_of[i];
    if (k == 0 || x[i] > best_value[o]) {
      best[o] = k;
      best_value[o] = x[i];
    }
  }
  return best;
}

void check_argmax(const Tensor& x, std::int64_t dim) {
  const auto want = reference_argmax(x.to_vector<double>(), x.shape(), dim);
  const auto cpu = run_argmax(x.to(Device("cpu")), dim).to_vector<std::int64_t>();
  EXPECT_EQ(cpu, want) << "the reference disagrees with the cpu backend";
  for (int version = 1; version <= kVersions; ++version) {
    ScopedKernelVersion scoped("reduce", version);
    EXPECT_EQ(run_argmax(x, dim).to_vector<std::int64_t>(), want) << "version " << version;
  }
}

TEST_P(GpuReduce, ArgmaxIsTheFirstMaximumOnEveryVersion) {
  std::mt19937_64 rng(testing::kSeed + 903);
  std::uniform_int_distribution<int> small(0, 3);  // few distinct values: many ties
  for (DType dt : {DType::float32, DType::float64}) {
    for (const Case& c : std::vector<Case>{{{5, 37}, {1}}, {{5, 37}, {0}}, {{3, 2000}, {1}}, {{301, 70}, {0}},
                                           {{2, 3, 4, 5}, {2}}, {{4, 1, 6}, {1}}, {{7}, {0}}}) {
      const std::int64_t dim = *c.dims.begin();
      std::vector<double> ties(static_cast<std::size_t>(c.shape.numel()));
      for (double& e : ties) e = small(rng);
      SCOPED_TRACE(::testing::Message() << c.shape << " dim " << dim << " " << dtype_name(dt));
      const TensorOptions o = TensorOptions().dtype(dt).device(GetParam());
      check_argmax(from_vector(ties, c.shape, o), dim);
      for (Layout layout : {Layout::contiguous, Layout::gapped, Layout::permuted, Layout::broadcast})
        check_argmax(make_input(c.shape, layout, dt, GetParam(), rng), dim);
    }
  }
}

TEST_P(GpuReduce, ArgmaxFollowsTheCpuRuleForNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // Rows of 40 (warp rows along dim 1, columns along dim 0).
  std::vector<double> v(6 * 40);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 11);
  v[0 * 40 + 0] = nan;                                      // NaN first: index 0 wins
  v[1 * 40 + 5] = nan;                                      // NaN later: ignored
  for (int j = 0; j < 40; ++j) v[2 * 40 + j] = nan;         // all NaN: 0
  for (int j = 0; j < 40; ++j) v[3 * 40 + j] = -inf;        // all -inf: 0
  v[4 * 40 + 17] = inf;                                     // +inf wins
  v[5 * 40 + 39] = 100;                                     // the maximum last
  const Tensor x = from_vector(v, {6, 40}, TensorOptions().device(GetParam()));
  check_argmax(x, 1);
  check_argmax(x, 0);
}

// v2 launches at most 65535 blocks and grid-strides beyond: blocks then reuse
// their shared memory for a second output (the one place its missing trailing
// barrier could matter).
TEST_P(GpuReduce, BlockTreeGridStridesPastTheBlockLimit) {
  std::mt19937_64 rng(testing::kSeed + 905);
  const Tensor x = testing::random_tensor({70001, 2}, rng, TensorOptions().dtype(DType::float64).device(GetParam()));
  const auto xv = x.to_vector<double>();
  ScopedKernelVersion scoped("reduce", 2);
  const auto sums = run_reduce(ReduceOp::sum, x, {1}).to_vector<double>();
  const auto args = run_argmax(x, 1).to_vector<std::int64_t>();
  for (std::size_t o = 0; o < sums.size(); ++o) {
    ASSERT_NEAR(sums[o], xv[2 * o] + xv[2 * o + 1], 1e-15) << "output " << o;
    ASSERT_EQ(args[o], xv[2 * o + 1] > xv[2 * o] ? 1 : 0) << "output " << o;
  }
}

// The planner's choice for contiguous [rows, n] reduced over dim 1 (or dim 0 when `outer`).
kernels::ReducePlan plan_for(std::int64_t rows, std::int64_t n, bool outer, int version, bool allow_split = true) {
  kernels::ReduceGeometry g;
  g.kept_rank = g.red_rank = 1;
  g.kept_size[0] = outer ? n : rows;
  g.kept_stride[0] = outer ? 1 : n;
  g.red_size[0] = outer ? rows : n;
  g.red_stride[0] = outer ? n : 1;
  g.n_out = g.kept_size[0];
  g.n_red = g.red_size[0];
  return kernels::plan_reduce(g, version, allow_split);
}

TEST(GpuReducePlan, PlannerPicksEachMapping) {
  using M = kernels::ReduceMapping;
  EXPECT_EQ(plan_for(5, 37, false, 1).mapping, M::thread_per_output);
  EXPECT_EQ(plan_for(5, 37, false, 2).mapping, M::block_tree);
  EXPECT_EQ(plan_for(5, 37, false, 2).threads, 64u);
  EXPECT_EQ(plan_for(5, 37, false, 3).mapping, M::warp_rows);
  EXPECT_EQ(plan_for(5, 37, true, 3).mapping, M::columns);
  EXPECT_EQ(plan_for(5, 37, true, 3).splits, 1u);
  EXPECT_EQ(plan_for(3, 2000, false, 3).mapping, M::block_rows);
  EXPECT_EQ(plan_for(3, 2000, false, 3).splits, 1u);
  const auto split_rows = plan_for(3, 9001, false, 3);
  EXPECT_EQ(split_rows.mapping, M::block_rows);
  EXPECT_EQ(split_rows.splits, 2u);
  EXPECT_EQ(split_rows.workspace_elements, 6);
  const auto split_columns = plan_for(301, 70, true, 3);
  EXPECT_EQ(split_columns.mapping, M::columns);
  EXPECT_EQ(split_columns.splits, 2u);
  EXPECT_EQ(split_columns.workspace_elements, 140);
  // Few outputs along a contiguous dim stay rows (lanes over 3 outputs would idle).
  EXPECT_EQ(plan_for(1000, 3, true, 3).mapping, M::warp_rows);
  // Argmax never splits; many short rows never split.
  EXPECT_EQ(plan_for(3, 9001, false, 3, false).splits, 1u);
  EXPECT_EQ(plan_for(5000, 5000, false, 3).splits, 1u);
  EXPECT_THROW(plan_for(3, 3, false, 4), Error);
}

TEST(GpuReducePlan, VersionsAreSelectable) {
  kernels::reduce_kernel_version();
  {
    ScopedKernelVersion scoped("reduce", 2);
    EXPECT_EQ(kernel_version("reduce"), 2);
  }
  EXPECT_EQ(kernel_version("reduce"), 3);  // the default is the fastest
  EXPECT_THROW(set_kernel_version("reduce", 4), Error);
}

// A missing barrier can hide under one thread order; run one case per mapping under others.
TEST(GpuReduceSchedules, EveryMappingUnderReverseAndRandomOrders) {
  std::mt19937_64 rng(testing::kSeed + 904);
  kernels::reduce_kernel_version();
  for (const char* schedule : {"reverse", "random:7"}) {
    sim::ScopedSchedule scoped(sim::Schedule::parse(schedule));
    SCOPED_TRACE(schedule);
    for (const Case& c : std::vector<Case>{{{5, 37}, {1}}, {{5, 37}, {0}}, {{3, 9001}, {1}}, {{301, 70}, {0}}}) {
      const Tensor x = make_input(c.shape, Layout::contiguous, DType::float32, Device("sim"), rng);
      for (ReduceOp op : kOps) check_all_versions(x, c.dims, op);
      check_argmax(x, *c.dims.begin());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GpuReduce, ::testing::ValuesIn(gpu_devices()), testing::device_name);

}  // namespace
}  // namespace convkit
