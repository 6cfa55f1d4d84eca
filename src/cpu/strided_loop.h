#pragma once
// The one loop nest behind every cpu elementwise kernel: walks N same-shaped
// (possibly strided, possibly broadcast) operands together. Dims that are
// contiguous in every operand are merged so that the innermost loop is as
// long as possible, and the work is split into rows (and chunks of long rows)
// across OpenMP threads.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "convkit/core/tensor.h"

namespace convkit::cpu {

template <std::size_t N>
struct StridedLoop {
  std::vector<std::int64_t> sizes;                    // merged dims, outermost first
  std::array<std::vector<std::int64_t>, N> strides;   // in bytes, per operand
  std::array<char*, N> base{};

  explicit StridedLoop(const std::array<const Tensor*, N>& operands) {
    const Shape& shape = operands[0]->shape();
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;  // size-1 dims contribute nothing
      sizes.push_back(shape[d]);
      for (std::size_t k = 0; k < N; ++k)
        strides[k].push_back(operands[k]->stride(static_cast<std::int64_t>(d)) *
                             static_cast<std::int64_t>(dtype_size(operands[k]->dtype())));
    }
    for (std::size_t k = 0; k < N; ++k) base[k] = static_cast<char*>(operands[k]->raw_data());
    merge_dims();
    if (sizes.empty()) {  // a single element
      sizes.push_back(1);
      for (auto& s : strides) s.push_back(0);
    }
  }

  std::int64_t inner() const { return sizes.back(); }
  std::int64_t rows() const {
    std::int64_t r = 1;
    for (std::size_t d = 0; d + 1 < sizes.size(); ++d) r *= sizes[d];
    return r;
  }

  // f(ptrs, inner_strides_in_bytes, count) handles `count` consecutive
  // elements of one row. Runs serially below `parallel_threshold` elements:
  // a small op finishes in less time than waking the OpenMP team takes, and
  // on a loaded machine the team waits for its slowest, descheduled thread.
  template <typename F>
  void run(F&& f, std::int64_t parallel_threshold = std::int64_t{1} << 18) const {
    constexpr std::int64_t kChunk = 16384;  // elements per task within a long row
    const std::int64_t n_inner = inner();
    const std::int64_t chunks = (n_inner + kChunk - 1) / kChunk;
    const std::int64_t tasks = rows() * chunks;
    std::array<std::int64_t, N> inner_stride;
    for (std::size_t k = 0; k < N; ++k) inner_stride[k] = strides[k].back();

    auto task = [&](std::int64_t t) {
      std::int64_t row = t / chunks;
      const std::int64_t chunk = t % chunks;
      std::array<char*, N> p = base;
      for (std::size_t d = sizes.size() - 1; d-- > 0;) {  // row index -> outer offsets
        const std::int64_t i = row % sizes[d];
        row /= sizes[d];
        for (std::size_t k = 0; k < N; ++k) p[k] += i * strides[k][d];
      }
      const std::int64_t begin = chunk * kChunk;
      for (std::size_t k = 0; k < N; ++k) p[k] += begin * inner_stride[k];
      f(p, inner_stride, std::min(kChunk, n_inner - begin));
    };
    if (rows() * n_inner < parallel_threshold) {
      for (std::int64_t t = 0; t < tasks; ++t) task(t);
    } else {
#pragma omp parallel for schedule(static)
      for (std::int64_t t = 0; t < tasks; ++t) task(t);
    }
  }

 private:
  void merge_dims() {
    for (std::size_t d = sizes.size(); d-- > 1;) {
      bool mergeable = true;
      for (std::size_t k = 0; k < N; ++k)
        mergeable = mergeable && strides[k][d - 1] == strides[k][d] * sizes[d];
      if (!mergeable) continue;
      sizes[d - 1] *= sizes[d];
      sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(d));
      for (std::size_t k = 0; k < N; ++k) {
        strides[k][d - 1] = strides[k][d];
        strides[k].erase(strides[k].begin() + static_cast<std::ptrdiff_t>(d));
      }
    }
  }
};

// Calls f.template operator()<T>() with T the C++ type of a floating dtype.
template <typename F>
void dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::float32: f.template operator()<float>(); return;
    case DType::float64: f.template operator()<double>(); return;
    default: CK_FAIL(op, ": dtype ", t, " is not supported (expected float32 or float64)");
  }
}

template <typename F>
void dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::float32: f.template operator()<float>(); return;
    case DType::float64: f.template operator()<double>(); return;
    case DType::int64: f.template operator()<std::int64_t>(); return;
  }
}

}  // namespace convkit::cpu
