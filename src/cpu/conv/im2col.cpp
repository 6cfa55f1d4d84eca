// im2col / col2im, row-at-a-time and element-at-a-time (reference).
#include "cpu/conv/im2col.h"

#include <algorithm>
#include <cstdint>

#include "cpu/conv/conv_common.h"

namespace convkit::cpu {

// One (c, r, s) row of the column matrix is P rows of Q entries. For each p the
// entries split into [zeros | copied input row | zeros]; the split points come
// from valid_range, so the copy loop itself has no bounds checks.
template <typename T>
void im2col(const Conv2dDesc& d, const T* x_image, T* col, bool parallel) {
  const std::int64_t C = d.C, H = d.H, W = d.W, R = d.R, S = d.S, P = d.P(), Q = d.Q();
  const std::int64_t sh = d.stride_h, sw = d.stride_w, dh = d.dilation_h, dw = d.dilation_w;
  const std::int64_t pt = d.pad_top, pl = d.pad_left;
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (std::int64_t c = 0; c < C; ++c) {
    for (std::int64_t r = 0; r < R; ++r) {
      const T* x_plane = x_image + c * H * W;
      const std::int64_t row_offset = r * dh - pt;
      const IndexRange rows = valid_range(P, sh, row_offset, H);
      for (std::int64_t s = 0; s < S; ++s) {
        T* out = col + ((c * R + r) * S + s) * P * Q;
        const std::int64_t col_offset = s * dw - pl;
        const IndexRange cols = valid_range(Q, sw, col_offset, W);
        for (std::int64_t p = 0; p < P; ++p) {
          T* out_row = out + p * Q;
          if (p < rows.begin || p >= rows.end) {
            std::fill(out_row, out_row + Q, T(0));
            continue;
          }
          const T* x_row = x_plane + (p * sh + row_offset) * W;
          std::fill(out_row, out_row + cols.begin, T(0));
          if (sw == 1) {
            // A SIMD loop rather than std::copy: rows are short (tens of
            // values), and a memmove call per row cost ~15% of a forward pass.
#pragma omp simd
            for (std::int64_t q = cols.begin; q < cols.end; ++q) out_row[q] = x_row[q + col_offset];
          } else {
            for (std::int64_t q = cols.begin; q < cols.end; ++q) out_row[q] = x_row[q * sw + col_offset];
          }
          std::fill(out_row + cols.end, out_row + Q, T(0));
        }
      }
    }
  }
}

// The adjoint of im2col. Rows of one channel c all add into plane c, so
// threads split over channels and never write the same pixel.
template <typename T>
void col2im(const Conv2dDesc& d, const T* col, T* dx_image, bool parallel) {
  const std::int64_t C = d.C, H = d.H, W = d.W, R = d.R, S = d.S, P = d.P(), Q = d.Q();
  const std::int64_t sh = d.stride_h, sw = d.stride_w, dh = d.dilation_h, dw = d.dilation_w;
  const std::int64_t pt = d.pad_top, pl = d.pad_left;
#pragma omp parallel for schedule(static) if (parallel)
  for (std::int64_t c = 0; c < C; ++c) {
    T* dx_plane = dx_image + c * H * W;
    std::fill(dx_plane, dx_plane + H * W, T(0));
    for (std::int64_t r = 0; r < R; ++r) {
      const std::int64_t row_offset = r * dh - pt;
      const IndexRange rows = valid_range(P, sh, row_offset, H);
      for (std::int64_t s = 0; s < S; ++s) {
        const T* in = col + ((c * R + r) * S + s) * P * Q;
        const std::int64_t col_offset = s * dw - pl;
        const IndexRange cols = valid_range(Q, sw, col_offset, W);
        for (std::int64_t p = rows.begin; p < rows.end; ++p) {
          const T* in_row = in + p * Q;
          T* dx_row = dx_plane + (p * sh + row_offset) * W;
          if (sw == 1) {
#pragma omp simd
            for (std::int64_t q = cols.begin; q < cols.end; ++q) dx_row[q + col_offset] += in_row[q];
          } else {
            for (std::int64_t q = cols.begin; q < cols.end; ++q) dx_row[q * sw + col_offset] += in_row[q];
          }
        }
      }
    }
  }
}

template <typename T>
void im2col_reference(const Conv2dDesc& d, const T* x_image, T* col) {
  const std::int64_t P = d.P(), Q = d.Q();
  for (std::int64_t c = 0; c < d.C; ++c)
    for (std::int64_t r = 0; r < d.R; ++r)
      for (std::int64_t s = 0; s < d.S; ++s)
        for (std::int64_t p = 0; p < P; ++p)
          for (std::int64_t q = 0; q < Q; ++q) {
            const std::int64_t h = p * d.stride_h - d.pad_top + r * d.dilation_h;
            const std::int64_t w = q * d.stride_w - d.pad_left + s * d.dilation_w;
            const bool inside = h >= 0 && h < d.H && w >= 0 && w < d.W;
            col[((c * d.R + r) * d.S + s) * P * Q + p * Q + q] = inside ? x_image[(c * d.H + h) * d.W + w] : T(0);
          }
}

template <typename T>
void col2im_reference(const Conv2dDesc& d, const T* col, T* dx_image) {
  const std::int64_t P = d.P(), Q = d.Q();
  std::fill(dx_image, dx_image + d.C * d.H * d.W, T(0));
  for (std::int64_t c = 0; c < d.C; ++c)
    for (std::int64_t r = 0; r < d.R; ++r)
      for (std::int64_t s = 0; s < d.S; ++s)
        for (std::int64_t p = 0; p < P; ++p)
          for (std::int64_t q = 0; q < Q; ++q) {
            const std::int64_t h = p * d.stride_h - d.pad_top + r * d.dilation_h;
            const std::int64_t w = q * d.stride_w - d.pad_left + s * d.dilation_w;
            if (h >= 0 && h < d.H && w >= 0 && w < d.W)
              dx_image[(c * d.H + h) * d.W + w] += col[((c * d.R + r) * d.S + s) * P * Q + p * Q + q];
          }
}

#define CONVKIT_INSTANTIATE_IM2COL(T)                                           \
  template void im2col<T>(const Conv2dDesc&, const T*, T*, bool);              \
  template void col2im<T>(const Conv2dDesc&, const T*, T*, bool);              \
  template void im2col_reference<T>(const Conv2dDesc&, const T*, T*);          \
  template void col2im_reference<T>(const Conv2dDesc&, const T*, T*);
CONVKIT_INSTANTIATE_IM2COL(float)
CONVKIT_INSTANTIATE_IM2COL(double)
#undef CONVKIT_INSTANTIATE_IM2COL

}  // namespace convkit::cpu
