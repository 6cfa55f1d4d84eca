// Radix-2 complex FFT over interleaved lanes, and the real 2-D FFT built on it.
#include "cpu/fft/fft.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "convkit/core/error.h"

namespace convkit::cpu::fft {

template <typename T>
ComplexFft<T>::ComplexFft(std::int64_t n) : n_(n) {
  CK_CHECK(is_power_of_two(n), "fft: length must be a power of two >= 1 (got ", n, ")");
  int bits = 0;
  while ((std::int64_t{1} << bits) < n) ++bits;
  bit_reversed_.resize(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) {
    std::int64_t reversed = 0;
    for (int b = 0; b < bits; ++b) reversed |= ((j >> b) & 1) << (bits - 1 - b);
    bit_reversed_[static_cast<std::size_t>(j)] = reversed;
  }
  // Twiddles are evaluated in double and rounded once, so float transforms
  // carry no accumulated error from a recurrence.
  twiddles_.resize(static_cast<std::size_t>(n / 2));
  for (std::int64_t j = 0; j < n / 2; ++j) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(n);
    twiddles_[static_cast<std::size_t>(j)] = {static_cast<T>(std::cos(angle)), static_cast<T>(std::sin(angle))};
  }
}

template <typename T>
void ComplexFft<T>::transform(std::complex<T>* data, std::int64_t lanes, bool inverse) const {
  // Decimation in time: put samples in bit-reversed order, then merge pairs of
  // half-length transforms with butterflies of growing span.
  for (std::int64_t j = 0; j < n_; ++j) {
    const std::int64_t partner = bit_reversed_[static_cast<std::size_t>(j)];
    if (j < partner) std::swap_ranges(data + j * lanes, data + (j + 1) * lanes, data + partner * lanes);
  }
  const T sign = inverse ? T(-1) : T(1);  // the inverse uses conjugate twiddles
  for (std::int64_t half = 1; half < n_; half *= 2) {
    const std::int64_t twiddle_step = n_ / (2 * half);
    for (std::int64_t start = 0; start < n_; start += 2 * half) {
      for (std::int64_t j = 0; j < half; ++j) {
        const std::complex<T> twiddle = twiddles_[static_cast<std::size_t>(j * twiddle_step)];
        const T wr = twiddle.real(), wi = sign * twiddle.imag();
        // std::complex arrays may be accessed as arrays of (re, im) pairs; the
        // product is written out so GCC neither calls __mulsc3 nor blocks vectorisation.
        T* a = reinterpret_cast<T*>(data + (start + j) * lanes);
        T* b = reinterpret_cast<T*>(data + (start + j + half) * lanes);
#pragma omp simd
        for (std::int64_t l = 0; l < lanes; ++l) {
          const T br = b[2 * l] * wr - b[2 * l + 1] * wi;
          const T bi = b[2 * l] * wi + b[2 * l + 1] * wr;
          const T ar = a[2 * l], ai = a[2 * l + 1];
          a[2 * l] = ar + br;
          a[2 * l + 1] = ai + bi;
          b[2 * l] = ar - br;
          b[2 * l + 1] = ai - bi;
        }
      }
    }
  }
}

template <typename T>
RealFft2d<T>::RealFft2d(std::int64_t rows, std::int64_t cols)
    : rows_(rows), cols_(cols), row_fft_(cols), column_fft_(rows) {
  CK_CHECK(cols >= 2, "fft: a real 2-D transform needs at least 2 columns (got ", cols, ")");
}

template <typename T>
void RealFft2d<T>::forward(const T* in, std::complex<T>* spectrum, std::complex<T>* scratch,
                           std::int64_t lanes) const {
  const std::int64_t sc = spectrum_cols(), L = lanes;
  for (std::int64_t i = 0; i < rows_; i += 2) {
    // Two real rows a, b become one complex row z = a + i*b (b = 0 past the last row).
    const T* a = in + i * cols_ * L;
    const T* b = i + 1 < rows_ ? in + (i + 1) * cols_ * L : nullptr;
    for (std::int64_t j = 0; j < cols_ * L; ++j) scratch[j] = {a[j], b != nullptr ? b[j] : T(0)};
    row_fft_.forward(scratch, L);
    // Since a and b are real, A[k] = (Z[k] + conj(Z[-k])) / 2 and B[k] = (Z[k] - conj(Z[-k])) / (2i).
    std::complex<T>* a_out = spectrum + i * sc * L;
    std::complex<T>* b_out = b != nullptr ? spectrum + (i + 1) * sc * L : nullptr;
    for (std::int64_t k = 0; k < sc; ++k) {
      const std::complex<T>* z_row = scratch + k * L;
      const std::complex<T>* mirror_row = scratch + ((cols_ - k) & (cols_ - 1)) * L;
      for (std::int64_t l = 0; l < L; ++l) {
        const T zr = z_row[l].real(), zi = z_row[l].imag();
        const T mr = mirror_row[l].real(), mi = -mirror_row[l].imag();
        a_out[k * L + l] = {(zr + mr) * T(0.5), (zi + mi) * T(0.5)};
        if (b_out != nullptr) b_out[k * L + l] = {(zi - mi) * T(0.5), -(zr - mr) * T(0.5)};
      }
    }
  }
  column_fft_.forward(spectrum, sc * L);
}

template <typename T>
void RealFft2d<T>::inverse(std::complex<T>* spectrum, T* out, std::complex<T>* scratch, std::int64_t lanes) const {
  const std::int64_t sc = spectrum_cols(), L = lanes;
  column_fft_.inverse(spectrum, sc * L);
  for (std::int64_t i = 0; i < rows_; i += 2) {
    // Rebuild the full row spectra of two real rows from their halves
    // (X[k] = conj(X[cols - k])), combine as Z = A + i*B, and one inverse
    // transform returns a in the real and b in the imaginary part.
    const std::complex<T>* a_in = spectrum + i * sc * L;
    const std::complex<T>* b_in = i + 1 < rows_ ? spectrum + (i + 1) * sc * L : nullptr;
    for (std::int64_t k = 0; k < cols_; ++k) {
      const bool stored = k < sc;
      const std::int64_t at = (stored ? k : cols_ - k) * L;
      const T sign = stored ? T(1) : T(-1);
      for (std::int64_t l = 0; l < L; ++l) {
        const T ar = a_in[at + l].real(), ai = sign * a_in[at + l].imag();
        const T br = b_in != nullptr ? b_in[at + l].real() : T(0);
        const T bi = b_in != nullptr ? sign * b_in[at + l].imag() : T(0);
        scratch[k * L + l] = {ar - bi, ai + br};
      }
    }
    row_fft_.inverse(scratch, L);
    T* a_out = out + i * cols_ * L;
    for (std::int64_t j = 0; j < cols_ * L; ++j) a_out[j] = scratch[j].real();
    if (b_in != nullptr) {
      T* b_out = out + (i + 1) * cols_ * L;
      for (std::int64_t j = 0; j < cols_ * L; ++j) b_out[j] = scratch[j].imag();
    }
  }
}

template class ComplexFft<float>;
template class ComplexFft<double>;
template class RealFft2d<float>;
template class RealFft2d<double>;

}  // namespace convkit::cpu::fft
