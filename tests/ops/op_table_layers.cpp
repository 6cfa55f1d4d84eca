// The op table's entries beyond elementwise: reductions, softmax and
// log_softmax, matmul and linear, pooling, cross-entropy, batch_norm_add_relu. Each reference is
// the definition as loops in double.
#include <cmath>
#include <algorithm>
#include <limits>
#include <sstream>

#include "ops/op_info.h"

namespace convkit::testing {

namespace {

using Ref = std::function<Values(const std::vector<Values>&)>;

// One sample per shape over values in [lo, hi), then the first shape again
// strided and transposed. gradcheck takes the first shape and its layouts.
std::function<std::vector<Sample>(std::mt19937_64&)> shapes(std::vector<Shape> list, double lo = -1, double hi = 1) {
  return [list, lo, hi](std::mt19937_64& rng) {
    std::vector<Sample> out;
    for (const Shape& s : list) {
      std::ostringstream name;
      name << s;
      out.push_back({name.str(), {values_in(s, rng, lo, hi)}, {}, out.empty()});
    }
    out.push_back({"strided", {values_in(list[0], rng, lo, hi)}, strided});
    out.push_back({"transposed", {values_in(list[0], rng, lo, hi)}, transposed});
    return out;
  };
}

// x reduced over `dims` (empty: all) with f, keeping size 1 there.
Values reduce_ref(const Values& x, std::vector<std::int64_t> dims, double init,
                  const std::function<double(double, double)>& f) {
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  if (dims.empty())
    for (std::int64_t d = 0; d < rank; ++d) dims.push_back(d);
  Shape kept = x.shape;
  for (std::int64_t& d : dims) {
    if (d < 0) d += rank;
    kept[static_cast<std::size_t>(d)] = 1;
  }
  Values out{kept, std::vector<double>(static_cast<std::size_t>(kept.numel()), init)};
  for (std::int64_t i = 0; i < x.shape.numel(); ++i) {
    double& acc = out.v[static_cast<std::size_t>(broadcast_index(unravel(i, x.shape), kept))];
    acc = f(acc, x.v[static_cast<std::size_t>(i)]);
  }
  return out;
}

Values squeezed(Values v, const std::vector<std::int64_t>& dims_in) {
  std::vector<bool> drop(v.shape.size(), dims_in.empty());
  for (std::int64_t d : dims_in) drop[static_cast<std::size_t>(d < 0 ? d + static_cast<std::int64_t>(v.shape.size()) : d)] = true;
  Shape s;
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (!drop[d]) s.dims().push_back(v.shape[d]);
  v.shape = s;
  return v;
}

OpInfo reduction(std::string name, std::vector<std::int64_t> dims, bool keepdim,
                 std::function<Tensor(const Tensor&)> op, std::function<Values(const Values&)> ref) {
  OpInfo info;
  info.name = std::move(name);
  info.op = [op = std::move(op)](const std::vector<Tensor>& in) { return op(in[0]); };
  info.reference = [ref = std::move(ref), dims, keepdim](const std::vector<Values>& in) {
    return keepdim ? ref(in[0]) : squeezed(ref(in[0]), dims);
  };
  info.samples = shapes({{3, 5, 4}, {1, 7, 2}, {2, 1, 33}});
  info.kernel_families = {"reduce"};
  return info;
}

double plus(double a, double b) { return a + b; }

Values mean_ref(const Values& x, const std::vector<std::int64_t>& dims) {
  Values s = reduce_ref(x, dims, 0, plus);
  const double n = static_cast<double>(x.shape.numel()) / static_cast<double>(s.shape.numel());
  for (double& e : s.v) e /= n;
  return s;
}

Values var_ref(const Values& x, const std::vector<std::int64_t>& dims) {
  const Values m = mean_ref(x, dims);
  Values sq{x.shape, {}};
  for (std::int64_t i = 0; i < x.shape.numel(); ++i) {
    const double c = x.v[static_cast<std::size_t>(i)] - m.v[static_cast<std::size_t>(broadcast_index(unravel(i, x.shape), m.shape))];
    sq.v.push_back(c * c);
  }
  Values s = reduce_ref(sq, dims, 0, plus);
  const double n = static_cast<double>(x.shape.numel()) / static_cast<double>(s.shape.numel());
  for (double& e : s.v) e /= n - 1;
  return s;
}

// Index of the first maximum along dim, size 1 there.
Values argmax_ref(const Values& x, std::int64_t dim) {
  Shape kept = x.shape;
  kept[static_cast<std::size_t>(dim)] = 1;
  Values out{kept, std::vector<double>(static_cast<std::size_t>(kept.numel()), -1)};
  std::vector<double> best(out.v.size(), -std::numeric_limits<double>::infinity());
  for (std::int64_t i = 0; i < x.shape.numel(); ++i) {
    const auto idx = unravel(i, x.shape);
    const auto o = static_cast<std::size_t>(broadcast_index(idx, kept));
    if (x.v[static_cast<std::size_t>(i)] > best[o]) {
      best[o] = x.v[static_cast<std::size_t>(i)];
      out.v[o] = static_cast<double>(idx[static_cast<std::size_t>(dim)]);
    }
  }
  return out;
}

Values softmax_ref(const Values& x, std::int64_t dim, bool log) {
  const Values mx = reduce_ref(x, {dim}, -std::numeric_limits<double>::infinity(),
                               [](double a, double b) { return std::max(a, b); });
  Values shifted{x.shape, {}};
  for (std::int64_t i = 0; i < x.shape.numel(); ++i)
    shifted.v.push_back(x.v[static_cast<std::size_t>(i)] - mx.v[static_cast<std::size_t>(broadcast_index(unravel(i, x.shape), mx.shape))]);
  Values e = shifted;
  for (double& v : e.v) v = std::exp(v);
  const Values sum = reduce_ref(e, {dim}, 0, plus);
  Values out{x.shape, {}};
  for (std::int64_t i = 0; i < x.shape.numel(); ++i) {
    const double s = sum.v[static_cast<std::size_t>(broadcast_index(unravel(i, x.shape), sum.shape))];
    out.v.push_back(log ? shifted.v[static_cast<std::size_t>(i)] - std::log(s) : e.v[static_cast<std::size_t>(i)] / s);
  }
  return out;
}

OpInfo softmax_info(bool log, std::int64_t dim) {
  OpInfo info;
  info.name = std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim);
  info.op = [log, dim](const std::vector<Tensor>& in) { return log ? log_softmax(in[0], dim) : softmax(in[0], dim); };
  info.reference = [log, dim](const std::vector<Values>& in) {
    return softmax_ref(in[0], dim < 0 ? dim + static_cast<std::int64_t>(in[0].shape.size()) : dim, log);
  };
  info.samples = [dim](std::mt19937_64& rng) {
    std::vector<Sample> out = shapes({{3, 5, 4}, {1, 70, 3}, {2, 3, 67}}, -4, 4)(rng);
    // Logits near 1000 overflow exp unless the maximum is subtracted first.
    out.push_back({"huge logits", {values_in({2, 6, 5}, rng, 995, 1005)}, {}, false});
    (void)dim;
    return out;
  };
  info.atol32 = info.rtol32 = 2e-4;  // the huge-logit sample loses float32 digits in x - max
  info.kernel_families = {"softmax"};
  return info;
}

// [..., M, K] @ [..., K, N] with broadcast batch, vectors promoted as NumPy.
Values matmul_ref(const Values& a_in, const Values& b_in) {
  Values a = a_in, b = b_in;
  const bool vec_a = a.shape.size() == 1, vec_b = b.shape.size() == 1;
  if (vec_a) a.shape = Shape{1, a.shape[0]};
  if (vec_b) b.shape = Shape{b.shape[0], 1};
  const std::int64_t M = a.shape[a.shape.size() - 2], K = a.shape[a.shape.size() - 1];
  const std::int64_t N = b.shape[b.shape.size() - 1];
  const Shape batch_a(std::vector<std::int64_t>(a.shape.dims().begin(), a.shape.dims().end() - 2));
  const Shape batch_b(std::vector<std::int64_t>(b.shape.dims().begin(), b.shape.dims().end() - 2));
  const Shape batch = broadcast_shapes(batch_a, batch_b, "matmul reference");
  Shape out_shape = batch;
  if (!vec_a) out_shape.dims().push_back(M);
  if (!vec_b) out_shape.dims().push_back(N);
  Values out{out_shape, {}};
  for (std::int64_t bi = 0; bi < batch.numel(); ++bi) {
    const auto bidx = unravel(bi, batch);
    const std::int64_t oa = broadcast_index(bidx, batch_a), ob = broadcast_index(bidx, batch_b);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += a.v[static_cast<std::size_t>((oa * M + i) * K + k)] * b.v[static_cast<std::size_t>((ob * K + k) * N + j)];
        out.v.push_back(s);
      }
  }
  return out;
}

struct PoolGeometry {
  std::int64_t kh, kw, sh, sw, ph, pw;
  bool include_pad;
};

// Walks every window position, padding included, as the definition reads
// (floor mode: the last window starts inside the padded input).
Values pool_ref(const Values& x, const PoolGeometry& g, bool max) {
  const std::int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const std::int64_t OH = (H + 2 * g.ph - g.kh) / g.sh + 1, OW = (W + 2 * g.pw - g.kw) / g.sw + 1;
  Values out{{N, C, OH, OW}, {}};
  for (std::int64_t p = 0; p < N * C; ++p)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        std::int64_t inside = 0, in_padded = 0;
        for (std::int64_t i = 0; i < g.kh; ++i)
          for (std::int64_t j = 0; j < g.kw; ++j) {
            const std::int64_t h = oh * g.sh - g.ph + i, w = ow * g.sw - g.pw + j;
            if (h >= -g.ph && h < H + g.ph && w >= -g.pw && w < W + g.pw) ++in_padded;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x.v[static_cast<std::size_t>((p * H + h) * W + w)];
            ++inside;
            sum += v;
            best = std::max(best, v);
          }
        out.v.push_back(max ? best : sum / static_cast<double>(g.include_pad ? in_padded : inside));
      }
  return out;
}

OpInfo pool_info(bool max, PoolGeometry g) {
  OpInfo info;
  std::ostringstream name;
  name << (max ? "max_pool2d" : "avg_pool2d") << " k" << g.kh << "x" << g.kw << " s" << g.sh << "x" << g.sw << " p"
       << g.ph << "x" << g.pw << (max || g.include_pad ? "" : " exclude_pad");
  info.name = name.str();
  info.op = [max, g](const std::vector<Tensor>& in) {
    const Pool2dParams p = Pool2dParams(g.kh, g.kw).stride(g.sh, g.sw).padding(g.ph, g.pw).count_include_pad(g.include_pad);
    return max ? max_pool2d(in[0], p) : avg_pool2d(in[0], p);
  };
  info.reference = [max, g](const std::vector<Values>& in) { return pool_ref(in[0], g, max); };
  info.samples = [](std::mt19937_64& rng) {
    // Distinct values, so that no max-pooling window has a tie that a central
    // difference could cross.
    auto distinct = [&](const Shape& s) {
      std::vector<double> v(static_cast<std::size_t>(s.numel()));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<double>(i) - static_cast<double>(v.size()) / 2) * 0.01;
      std::shuffle(v.begin(), v.end(), rng);
      return std::vector<Tensor>{from_vector(v, s, TensorOptions().dtype(DType::float64))};
    };
    return std::vector<Sample>{{"odd [2, 3, 7, 6]", distinct({2, 3, 7, 6}), {}},
                               {"batch 1 [1, 2, 5, 9]", distinct({1, 2, 5, 9}), {}},
                               {"strided [1, 2, 6, 5]", distinct({1, 2, 6, 5}), strided}};
  };
  info.kernel_families = {"pool2d_forward", "pool2d_backward"};
  return info;
}

Values cross_entropy_ref(const Values& x, const Values& targets, double s, Reduction reduction) {
  const std::int64_t N = x.shape[0], C = x.shape[1];
  std::vector<double> per;
  for (std::int64_t n = 0; n < N; ++n) {
    double mx = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < C; ++c) mx = std::max(mx, x.at({n, c}));
    double sum = 0;
    for (std::int64_t c = 0; c < C; ++c) sum += std::exp(x.at({n, c}) - mx);
    const double lse = mx + std::log(sum);
    double loss = 0;
    for (std::int64_t c = 0; c < C; ++c) {
      const double q = (c == static_cast<std::int64_t>(targets.v[static_cast<std::size_t>(n)]) ? 1 - s : 0) +
                       s / static_cast<double>(C);
      loss -= q * (x.at({n, c}) - lse);
    }
    per.push_back(loss);
  }
  if (reduction == Reduction::none) return {{N}, per};
  double total = 0;
  for (double e : per) total += e;
  return {{}, {reduction == Reduction::sum ? total : total / static_cast<double>(N)}};
}

OpInfo cross_entropy_info(double smoothing, Reduction reduction) {
  OpInfo info;
  info.name = "cross_entropy s" + std::to_string(smoothing).substr(0, 4) +
              (reduction == Reduction::none ? " none" : reduction == Reduction::sum ? " sum" : " mean");
  info.op = [smoothing, reduction](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], in[1], smoothing, reduction);
  };
  info.reference = [smoothing, reduction](const std::vector<Values>& in) {
    return cross_entropy_ref(in[0], in[1], smoothing, reduction);
  };
  info.samples = [](std::mt19937_64& rng) {
    auto in = [&](std::int64_t n, std::int64_t c) {
      std::uniform_int_distribution<std::int64_t> dist(0, c - 1);
      std::vector<std::int64_t> t(static_cast<std::size_t>(n));
      for (auto& e : t) e = dist(rng);
      return std::vector<Tensor>{values_in({n, c}, rng, -3, 3), from_vector(t, {n}, TensorOptions().dtype(DType::int64))};
    };
    return std::vector<Sample>{{"odd [5, 7]", in(5, 7), {}},
                               {"batch 1 [1, 10]", in(1, 10), {}},
                               {"wide [3, 130]", in(3, 130), {}, false},
                               {"strided [4, 3]", in(4, 3), strided}};
  };
  return info;
}

// relu((x - mean) / sqrt(var + eps) * w + b + r) over channel dim 1, with
// the batch's mean and biased variance (training) or fixed running values
// (eval: mean[c] = 0.1 c - 0.2, var[c] = 0.5 + 0.25 c). Inputs x, r, w, b.
constexpr double kBnEps = 1e-3;
double eval_mean(std::int64_t c) { return 0.1 * static_cast<double>(c) - 0.2; }
double eval_var(std::int64_t c) { return 0.5 + 0.25 * static_cast<double>(c); }

Values batch_norm_add_relu_ref(const std::vector<Values>& in, bool training) {
  const Values &x = in[0], &r = in[1], &w = in[2], &b = in[3];
  const std::int64_t N = x.shape[0], C = x.shape[1], S = x.shape.numel() / (N * C);
  Values out{x.shape, std::vector<double>(x.v.size())};
  for (std::int64_t c = 0; c < C; ++c) {
    double mean = eval_mean(c), var = eval_var(c);
    if (training) {
      double sum = 0, sq = 0;
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t s = 0; s < S; ++s) sum += x.v[static_cast<std::size_t>((n * C + c) * S + s)];
      mean = sum / static_cast<double>(N * S);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t s = 0; s < S; ++s) {
          const double d = x.v[static_cast<std::size_t>((n * C + c) * S + s)] - mean;
          sq += d * d;
        }
      var = sq / static_cast<double>(N * S);
    }
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t s = 0; s < S; ++s) {
        const auto i = static_cast<std::size_t>((n * C + c) * S + s);
        const auto k = static_cast<std::size_t>(c);
        const double y = (x.v[i] - mean) / std::sqrt(var + kBnEps) * w.v[k] + b.v[k] + r.v[i];
        out.v[i] = y > 0 ? y : 0;
      }
  }
  return out;
}

OpInfo batch_norm_add_relu_info(bool training) {
  OpInfo info;
  info.name = std::string("batch_norm_add_relu ") + (training ? "training" : "eval");
  info.op = [training](const std::vector<Tensor>& in) {
    const std::int64_t C = in[0].size(1);
    std::vector<double> mean, var;
    for (std::int64_t c = 0; c < C; ++c) {
      mean.push_back(eval_mean(c));
      var.push_back(eval_var(c));
    }
    const TensorOptions o = TensorOptions().dtype(in[0].dtype()).device(in[0].device());
    // Fresh running statistics per call: training updates them, and gradcheck calls many times.
    return batch_norm_add_relu(in[0], in[1], from_vector(mean, {C}, o), from_vector(var, {C}, o), in[2], in[3],
                               training, 0.1, kBnEps);
  };
  info.reference = [training](const std::vector<Values>& in) { return batch_norm_add_relu_ref(in, training); };
  info.samples = [](std::mt19937_64& rng) {
    auto in = [&](const Shape& s) {
      return std::vector<Tensor>{values_in(s, rng, -2, 2), values_in(s, rng, -1, 1), values_in({s[1]}, rng, 0.5, 1.5),
                                 values_in({s[1]}, rng, -0.5, 0.5)};
    };
    return std::vector<Sample>{{"odd [2, 3, 5, 7]", in({2, 3, 5, 7}), {}},
                               {"one channel, batch 1 [1, 1, 3, 5]", in({1, 1, 3, 5}), {}},
                               {"[N, C] [6, 4]", in({6, 4}), {}},
                               // v3 of the family splits these channels over blocks.
                               {"split channels [3, 2, 50, 60]", in({3, 2, 50, 60}), {}, false},
                               {"strided [2, 3, 4, 3]", in({2, 3, 4, 3}), strided}};
  };
  info.kernel_families = {"batch_norm"};
  // float32 against float64: normalising divides by a spread computed in float32.
  info.atol32 = info.rtol32 = 1e-4;
  return info;
}

}  // namespace

std::vector<OpInfo> layer_op_infos() {
  std::vector<OpInfo> t = {
      reduction("sum all", {}, false, [](const Tensor& x) { return sum(x); },
                [](const Values& x) { return reduce_ref(x, {}, 0, plus); }),
      reduction("sum dims 0 2 keepdim", {0, 2}, true, [](const Tensor& x) { return sum(x, {0, 2}, true); },
                [](const Values& x) { return reduce_ref(x, {0, 2}, 0, plus); }),
      reduction("mean dim -1", {-1}, false, [](const Tensor& x) { return mean(x, {-1}); },
                [](const Values& x) { return mean_ref(x, {-1}); }),
      reduction("var dims 0 1", {0, 1}, false, [](const Tensor& x) { return var(x, {0, 1}); },
                [](const Values& x) { return var_ref(x, {0, 1}); }),
      reduction("max dim 1", {1}, false, [](const Tensor& x) { return max(x, 1); },
                [](const Values& x) { return reduce_ref(x, {1}, -1e300, [](double a, double b) { return std::max(a, b); }); }),
      reduction("max all", {}, false, [](const Tensor& x) { return max(x); },
                [](const Values& x) { return reduce_ref(x, {}, -1e300, [](double a, double b) { return std::max(a, b); }); }),
      reduction("min all", {}, false, [](const Tensor& x) { return min(x); },
                [](const Values& x) { return reduce_ref(x, {}, 1e300, [](double a, double b) { return std::min(a, b); }); }),
      reduction("argmax dim 2", {2}, true, [](const Tensor& x) { return argmax(x, 2, true); },
                [](const Values& x) { return argmax_ref(x, 2); }),
      softmax_info(false, 1), softmax_info(false, -1), softmax_info(true, 0), softmax_info(true, 2),
      pool_info(true, {2, 2, 2, 2, 0, 0, true}), pool_info(true, {3, 3, 2, 2, 1, 1, true}),
      pool_info(false, {3, 2, 2, 1, 1, 1, true}), pool_info(false, {3, 3, 2, 2, 1, 1, false}),
      cross_entropy_info(0, Reduction::mean), cross_entropy_info(0.1, Reduction::none),
      cross_entropy_info(0.2, Reduction::sum),
      batch_norm_add_relu_info(true), batch_norm_add_relu_info(false),
  };
  for (OpInfo& info : t)
    if (info.name.starts_with("argmax")) info.gradcheck = false;

  OpInfo mm;
  mm.name = "matmul";
  mm.op = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  mm.reference = [](const std::vector<Values>& in) { return matmul_ref(in[0], in[1]); };
  mm.samples = [](std::mt19937_64& rng) {
    auto ab = [&](const Shape& a, const Shape& b) { return std::vector<Tensor>{values_in(a, rng, -1, 1), values_in(b, rng, -1, 1)}; };
    return std::vector<Sample>{{"1x1", ab({1, 1}, {1, 1}), {}},
                               {"odd [17, 33] @ [33, 9]", ab({17, 33}, {33, 9}), {}, false},
                               {"batched [4, 3, 5] @ [4, 5, 2]", ab({4, 3, 5}, {4, 5, 2}), {}},
                               {"broadcast batch [3, 5] @ [2, 5, 6]", ab({3, 5}, {2, 5, 6}), {}},
                               {"batch 1 [1, 7, 3] @ [5, 3, 2]", ab({1, 7, 3}, {5, 3, 2}), {}},
                               {"vector [4] @ [4, 6]", ab({4}, {4, 6}), {}},
                               {"vector [6, 4] @ [4]", ab({6, 4}, {4}), {}},
                               {"transposed [6, 4] @ [4, 5]", ab({6, 4}, {4, 5}), transposed},
                               {"strided [3, 4] @ [4, 2]", ab({3, 4}, {4, 2}), strided}};
  };
  mm.kernel_families = {"gemm"};
  t.push_back(mm);

  OpInfo lin;
  lin.name = "linear";
  lin.op = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  lin.reference = [](const std::vector<Values>& in) {
    Values wt{{in[1].shape[1], in[1].shape[0]}, {}};
    for (std::int64_t k = 0; k < in[1].shape[1]; ++k)
      for (std::int64_t o = 0; o < in[1].shape[0]; ++o) wt.v.push_back(in[1].at({o, k}));
    Values y = matmul_ref(in[0], wt);
    for (std::size_t i = 0; i < y.v.size(); ++i) y.v[i] += in[2].v[i % in[2].v.size()];
    return y;
  };
  lin.samples = [](std::mt19937_64& rng) {
    auto xwb = [&](std::int64_t n, std::int64_t in, std::int64_t out) {
      return std::vector<Tensor>{values_in({n, in}, rng, -1, 1), values_in({out, in}, rng, -1, 1), values_in({out}, rng, -1, 1)};
    };
    return std::vector<Sample>{{"odd [5, 7] -> 3", xwb(5, 7, 3), {}},
                               {"batch 1 [1, 4] -> 6", xwb(1, 4, 6), {}},
                               {"strided [3, 5] -> 2", xwb(3, 5, 2), strided}};
  };
  lin.kernel_families = {"gemm"};
  t.push_back(lin);
  return t;
}

}  // namespace convkit::testing
