#pragma once
// The tile transforms of Winograd's minimal filtering algorithm F(2x2, 3x3)
// (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2015),
// with the interpolation points 0, 1, -1 and infinity:
//
//   B^T = | 1  0 -1  0 |     G = | 1    0    0   |     A^T = | 1  1  1  0 |
//         | 0  1  1  0 |         | 1/2  1/2  1/2 |           | 0  1 -1 -1 |
//         | 0 -1  1  0 |         | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |         | 0    0    1   |
//
// A 2x2 block of outputs Y of the correlation of a 4x4 input tile D with a
// 3x3 filter g is  Y = A^T [ (G g G^T) (.) (B^T D B) ] A,  where (.) is the
// elementwise product: 16 multiplications instead of 36.
//
// The backward passes follow from the same identity, because Y is bilinear
// in (g, D): for an output gradient E (2x2),
//   <E, Y> = < A E A^T, (G g G^T) (.) (B^T D B) >,
// so the gradient with respect to g is  G^T [ (A E A^T) (.) (B^T D B) ] G.
// That is the weight-gradient transform below. (The data gradient is computed
// as a forward correlation of dy with the flipped filter; see winograd_conv.cpp.)
//
// Every 2-D transform is the 1-D one applied to each column, then to each row.
// Tiles are row-major: t[i * width + j].

namespace convkit::cpu::winograd {

constexpr int kTile = 4;     // input tile side: m + r - 1
constexpr int kOutput = 2;   // output tile side: m
constexpr int kFilter = 3;   // filter side: r
constexpr int kPoints = 16;  // kTile * kTile: one GEMM per point

// 1-D transforms: out = M * in for M = B^T, G, A^T, A, G^T.
template <typename T>
inline void input_1d(const T d[4], T out[4]) {  // B^T d
  out[0] = d[0] - d[2];
  out[1] = d[1] + d[2];
  out[2] = d[2] - d[1];
  out[3] = d[1] - d[3];
}
template <typename T>
inline void filter_1d(const T g[3], T out[4]) {  // G g
  out[0] = g[0];
  out[1] = T(0.5) * (g[0] + g[1] + g[2]);
  out[2] = T(0.5) * (g[0] - g[1] + g[2]);
  out[3] = g[2];
}
template <typename T>
inline void output_1d(const T m[4], T out[2]) {  // A^T m
  out[0] = m[0] + m[1] + m[2];
  out[1] = m[1] - m[2] - m[3];
}
template <typename T>
inline void output_gradient_1d(const T e[2], T out[4]) {  // A e
  out[0] = e[0];
  out[1] = e[0] + e[1];
  out[2] = e[0] - e[1];
  out[3] = -e[1];
}
template <typename T>
inline void weight_gradient_1d(const T w[4], T out[3]) {  // G^T w
  out[0] = w[0] + T(0.5) * (w[1] + w[2]);
  out[1] = T(0.5) * (w[1] - w[2]);
  out[2] = T(0.5) * (w[1] + w[2]) + w[3];
}

// out (O x O) = L in L^T for a 1-D transform `f` from I to O values.
template <int I, int O, typename T, typename F>
inline void transform_2d(const T* in, T* out, F f) {
  T columns[O * I];  // f applied to each column of `in`: O x I
  for (int j = 0; j < I; ++j) {
    T column[I], transformed[O];
    for (int i = 0; i < I; ++i) column[i] = in[i * I + j];
    f(column, transformed);
    for (int i = 0; i < O; ++i) columns[i * I + j] = transformed[i];
  }
  for (int i = 0; i < O; ++i) f(columns + i * I, out + i * O);
}

// V = B^T D B: a 4x4 input tile to its 16 points.
template <typename T>
inline void input_transform(const T d[16], T v[16]) {
  transform_2d<4, 4>(d, v, [](const T* a, T* b) { input_1d(a, b); });
}
// U = G g G^T: a 3x3 filter to its 16 points.
template <typename T>
inline void filter_transform(const T g[9], T u[16]) {
  transform_2d<3, 4>(g, u, [](const T* a, T* b) { filter_1d(a, b); });
}
// Y = A^T M A: 16 accumulated products to a 2x2 output block.
template <typename T>
inline void output_transform(const T m[16], T y[4]) {
  transform_2d<4, 2>(m, y, [](const T* a, T* b) { output_1d(a, b); });
}
// A E A^T: a 2x2 block of the output gradient to its 16 points.
template <typename T>
inline void output_gradient_transform(const T e[4], T out[16]) {
  transform_2d<2, 4>(e, out, [](const T* a, T* b) { output_gradient_1d(a, b); });
}
// dg = G^T W G: 16 accumulated products to a 3x3 filter gradient.
template <typename T>
inline void weight_gradient_transform(const T w[16], T dg[9]) {
  transform_2d<4, 3>(w, dg, [](const T* a, T* b) { weight_gradient_1d(a, b); });
}

}  // namespace convkit::cpu::winograd
