#include "cpu/conv/conv_reference.h"

#include <cmath>
#include <sstream>

namespace convkit::cpu::testing {

std::int64_t x_size(const Conv2dDesc& d) { return d.N * d.C * d.H * d.W; }
std::int64_t w_size(const Conv2dDesc& d) { return d.K * d.C_per_group() * d.R * d.S; }
std::int64_t y_size(const Conv2dDesc& d) { return d.N * d.K * d.P() * d.Q(); }

namespace {

// Calls fn(x_index, w_index, y_index) for every product of the convolution sum:
// y[n][k][p][q] += x[n][g*Cg + c][h][w] * w[k][c][r][s] with
// h = p*stride_h - pad_top + r*dilation_h, w = q*stride_w - pad_left + s*dilation_w, inside the image.
template <typename Fn>
void for_each_connection(const Conv2dDesc& d, Fn fn) {
  const std::int64_t P = d.P(), Q = d.Q(), Cg = d.C_per_group(), Kg = d.K_per_group();
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t k = 0; k < d.K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q)
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t r = 0; r < d.R; ++r)
              for (std::int64_t s = 0; s < d.S; ++s) {
                const std::int64_t h = p * d.stride_h - d.pad_top + r * d.dilation_h;
                const std::int64_t w = q * d.stride_w - d.pad_left + s * d.dilation_w;
                if (h < 0 || h >= d.H || w < 0 || w >= d.W) continue;
                const std::int64_t channel = (k / Kg) * Cg + c;
                fn(((n * d.C + channel) * d.H + h) * d.W + w, ((k * Cg + c) * d.R + r) * d.S + s,
                   ((n * d.K + k) * P + p) * Q + q);
              }
}

Reference make(std::int64_t size) {
  Reference ref;
  ref.value.assign(static_cast<std::size_t>(size), 0.0);
  ref.magnitude.assign(static_cast<std::size_t>(size), 0.0);
  return ref;
}

// Accumulates one product into element `at` and tracks the term count.
struct Accumulator {
  Reference& ref;
  std::vector<std::int64_t> terms;
  explicit Accumulator(Reference& r) : ref(r), terms(r.value.size(), 0) {}
  void add(std::int64_t at, double product) {
    const auto i = static_cast<std::size_t>(at);
    ref.value[i] += product;
    ref.magnitude[i] += std::abs(product);
    ++terms[i];
  }
  void finish() {
    for (auto t : terms) ref.max_terms = std::max(ref.max_terms, t);
  }
};

}  // namespace

Reference reference_forward(const Conv2dDesc& d, const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& b) {
  Reference ref = make(y_size(d));
  Accumulator acc(ref);
  for_each_connection(d, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    acc.add(yi, x[static_cast<std::size_t>(xi)] * w[static_cast<std::size_t>(wi)]);
  });
  if (!b.empty()) {
    const std::int64_t plane = d.P() * d.Q();
    for (std::int64_t i = 0; i < y_size(d); ++i) acc.add(i, b[static_cast<std::size_t>((i / plane) % d.K)]);
  }
  acc.finish();
  return ref;
}

Reference reference_backward_data(const Conv2dDesc& d, const std::vector<double>& dy, const std::vector<double>& w) {
  Reference ref = make(x_size(d));
  Accumulator acc(ref);
  for_each_connection(d, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    acc.add(xi, dy[static_cast<std::size_t>(yi)] * w[static_cast<std::size_t>(wi)]);
  });
  acc.finish();
  return ref;
}

Reference reference_backward_weights(const Conv2dDesc& d, const std::vector<double>& x,
                                     const std::vector<double>& dy) {
  Reference ref = make(w_size(d));
  Accumulator acc(ref);
  for_each_connection(d, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    acc.add(wi, dy[static_cast<std::size_t>(yi)] * x[static_cast<std::size_t>(xi)]);
  });
  acc.finish();
  return ref;
}

Reference reference_bias_gradient(const Conv2dDesc& d, const std::vector<double>& dy) {
  Reference ref = make(d.K);
  Accumulator acc(ref);
  const std::int64_t plane = d.P() * d.Q();
  for (std::int64_t i = 0; i < y_size(d); ++i) acc.add((i / plane) % d.K, dy[static_cast<std::size_t>(i)]);
  acc.finish();
  return ref;
}

namespace {

Conv2dDesc make_desc(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K,
                     std::int64_t R, std::int64_t S) {
  Conv2dDesc d;
  d.N = N;
  d.C = C;
  d.H = H;
  d.W = W;
  d.K = K;
  d.R = R;
  d.S = S;
  return d;
}

Conv2dDesc with_pad(Conv2dDesc d, std::int64_t top, std::int64_t bottom, std::int64_t left, std::int64_t right) {
  d.pad_top = top;
  d.pad_bottom = bottom;
  d.pad_left = left;
  d.pad_right = right;
  return d;
}

Conv2dDesc with_stride(Conv2dDesc d, std::int64_t h, std::int64_t w) {
  d.stride_h = h;
  d.stride_w = w;
  return d;
}

Conv2dDesc with_dilation(Conv2dDesc d, std::int64_t h, std::int64_t w) {
  d.dilation_h = h;
  d.dilation_w = w;
  return d;
}

Conv2dDesc with_groups(Conv2dDesc d, std::int64_t g) {
  d.groups = g;
  return d;
}

bool is_valid(const Conv2dDesc& d) {
  try {
    d.validate("test");
    return true;
  } catch (...) {
    return false;
  }
}

std::vector<ConvCase> build_cases() {
  std::vector<ConvCase> cases = {
      {"single_pixel", make_desc(1, 1, 1, 1, 1, 1, 1)},
      {"odd_nonsquare_3x3_pad1", with_pad(make_desc(2, 3, 7, 5, 4, 3, 3), 1, 1, 1, 1)},
      {"stride2_3x3", with_stride(with_pad(make_desc(1, 4, 9, 11, 2, 3, 3), 1, 1, 1, 1), 2, 2)},
      {"asymmetric_pad_3x2", with_pad(make_desc(2, 2, 6, 8, 3, 3, 2), 0, 2, 1, 0)},
      {"dilation_2x3", with_dilation(with_pad(make_desc(1, 2, 10, 9, 3, 3, 3), 2, 2, 3, 3), 2, 3)},
      {"groups3", with_groups(with_pad(make_desc(2, 6, 8, 8, 9, 3, 3), 1, 1, 1, 1), 3)},
      {"depthwise", with_groups(with_pad(make_desc(2, 4, 7, 7, 4, 3, 3), 1, 1, 1, 1), 4)},
      {"pointwise_1x1", make_desc(3, 5, 6, 7, 4, 1, 1)},
      {"pointwise_1x1_stride2", with_stride(make_desc(2, 3, 7, 6, 2, 1, 1), 2, 2)},
      {"kernel5x5", with_pad(make_desc(2, 3, 12, 10, 4, 5, 5), 2, 2, 2, 2)},
      {"kernel7x7", with_pad(make_desc(1, 2, 16, 14, 3, 7, 7), 3, 3, 3, 3)},
      {"kernel11x11", with_pad(make_desc(1, 2, 20, 18, 2, 11, 11), 5, 5, 5, 5)},
      {"many_fft_tiles", with_pad(make_desc(2, 2, 40, 37, 3, 3, 3), 1, 1, 1, 1)},
      {"stride_dilation_groups",
       with_groups(with_dilation(with_stride(with_pad(make_desc(2, 4, 11, 13, 6, 3, 3), 1, 2, 0, 1), 2, 3), 2, 2), 2)},
      {"pad_beyond_1x1_filter", with_pad(make_desc(1, 2, 4, 5, 3, 1, 1), 2, 1, 0, 3)},
      {"pad_beyond_3x3_filter", with_pad(make_desc(2, 2, 5, 4, 2, 3, 3), 3, 0, 4, 2)},
      {"single_output_channel", with_pad(make_desc(2, 8, 6, 6, 1, 3, 3), 1, 1, 1, 1)},
      {"single_input_channel", with_pad(make_desc(2, 1, 9, 8, 5, 3, 3), 1, 1, 1, 1)},
      {"row_signal_1x5", with_pad(make_desc(2, 3, 1, 20, 2, 1, 5), 0, 0, 2, 2)},
      {"column_signal_4x1", with_pad(make_desc(1, 2, 15, 1, 3, 4, 1), 2, 1, 0, 0)},
      {"filter_covers_image", make_desc(3, 2, 5, 5, 3, 5, 5)},
      {"stride3_no_pad_remainder", with_stride(make_desc(2, 2, 10, 11, 3, 2, 3), 3, 2)},
      // Above kMinParallelFlops, so the multi-threaded paths run too.
      {"parallel_3x3", with_pad(make_desc(4, 16, 16, 16, 16, 3, 3), 1, 1, 1, 1)},
      {"winograd_batch1_no_pad_odd", make_desc(1, 3, 9, 8, 5, 3, 3)},
      {"winograd_asymmetric_pad", with_pad(make_desc(2, 2, 7, 6, 3, 3, 3), 0, 2, 2, 1)},
      {"winograd_image_smaller_than_tile", with_pad(make_desc(2, 3, 2, 1, 2, 3, 3), 1, 1, 1, 1)},
      {"parallel_groups_3x3", with_groups(with_pad(make_desc(8, 16, 17, 15, 16, 3, 3), 1, 1, 1, 1), 2)},
      {"parallel_groups_5x5", with_groups(with_pad(make_desc(5, 12, 18, 18, 12, 5, 5), 2, 2, 2, 2), 2)},
      // One image, enough work to split it over threads (rows and filter
      // blocks inside a pass), with 53-column rows: a 32-column AVX-512
      // tile, a 16-column one and a partial one.
      {"one_image_parallel_3x3", with_pad(make_desc(1, 10, 37, 53, 20, 3, 3), 1, 1, 1, 1)},
  };
  // Random descriptors: small sizes so the float64 reference stays fast.
  std::mt19937_64 rng(20261122);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto one_of = [&](std::initializer_list<std::int64_t> values) {
    return *(values.begin() + pick(0, static_cast<std::int64_t>(values.size()) - 1));
  };
  for (int made = 0; made < 30;) {
    const std::int64_t groups = one_of({1, 1, 1, 2, 3});
    Conv2dDesc d = make_desc(pick(1, 3), groups * pick(1, 4), pick(1, 14), pick(1, 14), groups * pick(1, 4),
                             one_of({1, 2, 3, 3, 5, 7}), one_of({1, 2, 3, 3, 5}));
    d.groups = groups;
    d = with_pad(d, pick(0, 3), pick(0, 3), pick(0, 3), pick(0, 3));
    d = with_stride(d, one_of({1, 1, 2}), one_of({1, 1, 2, 3}));
    d = with_dilation(d, one_of({1, 1, 2}), one_of({1, 1, 2}));
    if (!is_valid(d)) continue;
    std::ostringstream name;
    name << "random" << made;
    cases.push_back({name.str(), d});
    ++made;
  }
  return cases;
}

}  // namespace

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = build_cases();
  return cases;
}

}  // namespace convkit::cpu::testing
