#pragma once
// The tile transforms of Winograd's minimal filtering algorithms F(2x2, 3x3)
// and F(4x4, 3x3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015).
//
// F(m x m, 3x3) computes an m x m block of outputs Y of the correlation of an
// a x a input tile D (a = m + 2) with a 3x3 filter g as
//     Y = A^T [ (G g G^T) (.) (B^T D B) ] A,
// where (.) is the elementwise product: a*a multiplications instead of 9*m*m
// (16 instead of 36 for m = 2, 36 instead of 144 for m = 4).
//
// F(2, 3), interpolation points 0, 1, -1, infinity:
//   B^T = | 1  0 -1  0 |     G = | 1    0    0   |     A^T = | 1  1  1  0 |
//         | 0  1  1  0 |         | 1/2  1/2  1/2 |           | 0  1 -1 -1 |
//         | 0 -1  1  0 |         | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |         | 0    0    1   |
//
// F(4, 3), interpolation points 0, 1, -1, 2, -2, infinity:
//   B^T = | 4  0 -5  0  1  0 |   G = |  1/4     0     0   |   A^T = | 1  1  1  1  1  0 |
//         | 0 -4 -4  1  1  0 |       | -1/6  -1/6  -1/6  |         | 0  1 -1  2 -2  0 |
//         | 0  4 -4 -1  1  0 |       | -1/6   1/6  -1/6  |         | 0  1  1  4  4  0 |
//         | 0 -2 -1  2  1  0 |       |  1/24  1/12  1/6  |         | 0  1 -1  8 -8  1 |
//         | 0  2 -1 -2  1  0 |       |  1/24 -1/12  1/6  |
//         | 0  4  0 -5  0  1 |       |  0     0     1    |
//
// The backward passes follow from the same identity, because Y is bilinear
// in (g, D): for an output gradient E (m x m),
//   <E, Y> = < A E A^T, (G g G^T) (.) (B^T D B) >,
// so the gradient with respect to g is  G^T [ (A E A^T) (.) (B^T D B) ] G.
// (The data gradient is computed as a forward correlation of dy with the
// rotated filter; see conv_winograd.cpp.)
//
// Every 2-D transform is the 1-D one applied to each column, then to each row.
// Tiles are row-major: t[i * width + j].

namespace convkit::cpu::winograd {

constexpr int kFilter = 3;  // r

// The 1-D transforms of F(M, 3): out = X * in for X = B^T, G, A^T, A, G^T.
template <int M>
struct F;

template <>
struct F<2> {
  static constexpr int kOutput = 2, kTile = 4;
  template <typename T>
  static void input_1d(const T d[4], T out[4]) {  // B^T d
    out[0] = d[0] - d[2];
    out[1] = d[1] + d[2];
    out[2] = d[2] - d[1];
    out[3] = d[1] - d[3];
  }
  template <typename T>
  static void filter_1d(const T g[3], T out[4]) {  // G g
    out[0] = g[0];
    out[1] = T(0.5) * (g[0] + g[1] + g[2]);
    out[2] = T(0.5) * (g[0] - g[1] + g[2]);
    out[3] = g[2];
  }
  template <typename T>
  static void output_1d(const T m[4], T out[2]) {  // A^T m
    out[0] = m[0] + m[1] + m[2];
    out[1] = m[1] - m[2] - m[3];
  }
  template <typename T>
  static void output_gradient_1d(const T e[2], T out[4]) {  // A e
    out[0] = e[0];
    out[1] = e[0] + e[1];
    out[2] = e[0] - e[1];
    out[3] = -e[1];
  }
  template <typename T>
  static void weight_gradient_1d(const T w[4], T out[3]) {  // G^T w
    out[0] = w[0] + T(0.5) * (w[1] + w[2]);
    out[1] = T(0.5) * (w[1] - w[2]);
    out[2] = T(0.5) * (w[1] + w[2]) + w[3];
  }
};

template <>
struct F<4> {
  static constexpr int kOutput = 4, kTile = 6;
  template <typename T>
  static void input_1d(const T d[6], T out[6]) {  // B^T d
    out[0] = T(4) * d[0] - T(5) * d[2] + d[4];
    out[1] = d[3] + d[4] - T(4) * (d[1] + d[2]);
    out[2] = d[4] - d[3] + T(4) * (d[1] - d[2]);
    out[3] = d[4] - d[2] + T(2) * (d[3] - d[1]);
    out[4] = d[4] - d[2] + T(2) * (d[1] - d[3]);
    out[5] = T(4) * d[1] - T(5) * d[3] + d[5];
  }
  // Products with rounded reciprocals, not divisions, which cost about ten
  // multiplications each: they were a fifth of conv4's forward at batch 32
  // when the convolution ran these per filter. The convolution now applies
  // the matrices read off them (conv_winograd.cpp), so they are cold.
  template <typename T>
  static constexpr T kQuarter = T(1) / T(4);
  template <typename T>
  static constexpr T kSixth = T(1) / T(6);
  template <typename T>
  static constexpr T kTwelfth = T(1) / T(12);
  template <typename T>
  static constexpr T kTwentyFourth = T(1) / T(24);
  template <typename T>
  static void filter_1d(const T g[3], T out[6]) {  // G g
    out[0] = g[0] * kQuarter<T>;
    out[1] = -(g[0] + g[1] + g[2]) * kSixth<T>;
    out[2] = -(g[0] - g[1] + g[2]) * kSixth<T>;
    out[3] = g[0] * kTwentyFourth<T> + g[1] * kTwelfth<T> + g[2] * kSixth<T>;
    out[4] = g[0] * kTwentyFourth<T> - g[1] * kTwelfth<T> + g[2] * kSixth<T>;
    out[5] = g[2];
  }
  template <typename T>
  static void output_1d(const T m[6], T out[4]) {  // A^T m
    const T sum12 = m[1] + m[2], diff12 = m[1] - m[2];
    const T sum34 = m[3] + m[4], diff34 = m[3] - m[4];
    out[0] = m[0] + sum12 + sum34;
    out[1] = diff12 + T(2) * diff34;
    out[2] = sum12 + T(4) * sum34;
    out[3] = diff12 + T(8) * diff34 + m[5];
  }
  template <typename T>
  static void output_gradient_1d(const T e[4], T out[6]) {  // A e
    out[0] = e[0];
    out[1] = e[0] + e[1] + e[2] + e[3];
    out[2] = e[0] - e[1] + e[2] - e[3];
    out[3] = e[0] + T(2) * e[1] + T(4) * e[2] + T(8) * e[3];
    out[4] = e[0] - T(2) * e[1] + T(4) * e[2] - T(8) * e[3];
    out[5] = e[3];
  }
  template <typename T>
  static void weight_gradient_1d(const T w[6], T out[3]) {  // G^T w
    out[0] = w[0] * kQuarter<T> - (w[1] + w[2]) * kSixth<T> + (w[3] + w[4]) * kTwentyFourth<T>;
    out[1] = (w[2] - w[1]) * kSixth<T> + (w[3] - w[4]) * kTwelfth<T>;
    out[2] = (w[3] + w[4] - w[1] - w[2]) * kSixth<T> + w[5];
  }
};

// out (O x O) = L in L^T for a 1-D transform `f` from I to O values.
template <int I, int O, typename T, typename Fn>
inline void transform_2d(const T* in, T* out, Fn f) {
  T columns[O * I];  // f applied to each column of `in`: O x I
  for (int j = 0; j < I; ++j) {
    T column[I], transformed[O];
    for (int i = 0; i < I; ++i) column[i] = in[i * I + j];
    f(column, transformed);
    for (int i = 0; i < O; ++i) columns[i * I + j] = transformed[i];
  }
  for (int i = 0; i < O; ++i) f(columns + i * I, out + i * O);
}

// The 2-D transforms of F(M x M, 3x3), one tile at a time, with a = M + 2.
// (The convolution applies the 1-D transforms across many tiles at once; these
// are the definitions the tests check the 1-D ones and the identities with.)
template <int M, typename T>
void input_transform(const T* d, T* v) {  // V = B^T D B: a x a to a x a
  constexpr int a = F<M>::kTile;
  transform_2d<a, a>(d, v, [](const T* x, T* y) { F<M>::input_1d(x, y); });
}
template <int M, typename T>
void filter_transform(const T* g, T* u) {  // U = G g G^T: 3x3 to a x a
  transform_2d<kFilter, F<M>::kTile>(g, u, [](const T* x, T* y) { F<M>::filter_1d(x, y); });
}
template <int M, typename T>
void output_transform(const T* m, T* y) {  // Y = A^T M A: a x a to M x M
  transform_2d<F<M>::kTile, M>(m, y, [](const T* x, T* z) { F<M>::output_1d(x, z); });
}
template <int M, typename T>
void output_gradient_transform(const T* e, T* out) {  // A E A^T: M x M to a x a
  transform_2d<M, F<M>::kTile>(e, out, [](const T* x, T* y) { F<M>::output_gradient_1d(x, y); });
}
template <int M, typename T>
void weight_gradient_transform(const T* w, T* dg) {  // G^T W G: a x a to 3x3
  transform_2d<F<M>::kTile, kFilter>(w, dg, [](const T* x, T* y) { F<M>::weight_gradient_1d(x, y); });
}

}  // namespace convkit::cpu::winograd
