#pragma once
// Our own FFTs (no FFT library), sized for convolution tiles: power-of-two
// lengths up to a few hundred, float and double.
//
// ComplexFft is the iterative radix-2 decimation-in-time Cooley-Tukey
// transform: a bit-reversal permutation, then log2(n) stages of butterflies.
// It transforms `lanes` interleaved signals at once (sample j of signal l at
// data[j*lanes + l]), so the column pass of a 2-D transform runs on whole rows
// and its inner loop is a contiguous, vectorisable sweep over the lanes.
//
// RealFft2d maps a real rows x cols array to its half spectrum, rows x
// (cols/2 + 1) complex values (the rest follows from Hermitian symmetry). Row
// transforms pack two real rows into one complex FFT (a + i*b) and separate
// the two spectra afterwards, halving the work of the row pass. Both transform
// many arrays at once with the lanes interleaved, which is how the FFT
// convolution calls them (one lane per tile).
//
// Conventions: forward X[k] = sum_j x[j] exp(-2*pi*i*j*k/n); inverse is
// unnormalised, sum_k X[k] exp(+2*pi*i*j*k/n) = n * x[j].
#include <complex>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace convkit::cpu::fft {

constexpr bool is_power_of_two(std::int64_t n) { return n >= 1 && (n & (n - 1)) == 0; }

template <typename T>
class ComplexFft {
 public:
  // n: a power of two >= 1; throws Error otherwise.
  explicit ComplexFft(std::int64_t n);
  std::int64_t size() const { return n_; }
  void forward(std::complex<T>* data, std::int64_t lanes = 1) const { transform(data, lanes, false); }
  void inverse(std::complex<T>* data, std::int64_t lanes = 1) const { transform(data, lanes, true); }

 private:
  void transform(std::complex<T>* data, std::int64_t lanes, bool inverse) const;
  std::int64_t n_;
  std::vector<std::int64_t> bit_reversed_;   // bit_reversed_[j]: j with its log2(n) bits reversed
  std::vector<std::complex<T>> twiddles_;    // exp(-2*pi*i*j/n), j < n/2, computed in double
};

template <typename T>
class RealFft2d {
 public:
  // rows >= 1 and cols >= 2, both powers of two; throws Error otherwise.
  RealFft2d(std::int64_t rows, std::int64_t cols);
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t spectrum_cols() const { return cols_ / 2 + 1; }
  std::int64_t spectrum_size() const { return rows_ * spectrum_cols(); }
  // Complex values of scratch a call on `lanes` arrays needs (one row of each).
  std::int64_t scratch_size(std::int64_t lanes = 1) const { return cols_ * lanes; }

  // Transforms `lanes` arrays at once, stored interleaved (lane index fastest)
  // so every butterfly runs over a contiguous run of lanes.
  // in: rows x cols x lanes real values; spectrum: rows x spectrum_cols x lanes.
  void forward(const T* in, std::complex<T>* spectrum, std::complex<T>* scratch, std::int64_t lanes = 1) const;
  // spectrum (destroyed): half spectra as forward() makes them; out: rows x cols
  // x lanes real values, rows*cols times the arrays whose spectra they are.
  void inverse(std::complex<T>* spectrum, T* out, std::complex<T>* scratch, std::int64_t lanes = 1) const;

 private:
  std::int64_t rows_, cols_;
  ComplexFft<T> row_fft_;     // length cols, one row at a time
  ComplexFft<T> column_fft_;  // length rows, over spectrum_cols lanes
};

}  // namespace convkit::cpu::fft
