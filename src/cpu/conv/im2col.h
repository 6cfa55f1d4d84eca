#pragma once
// im2col / col2im for one image.
//
// The column matrix of an image has C*R*S rows and P*Q columns:
//   col[(c*R + r)*S + s][p*Q + q] = x[c][p*sh - pt + r*dh][q*sw - pl + s*dw]
// (zero where that lands in the padding). With it a convolution is a matrix
// product: y[group g] = w[g] (Kg x Cg*R*S) * col[rows of g] (Cg*R*S x P*Q).
// col2im is its adjoint: it adds every column entry back onto the input pixel
// it was copied from.
//
// Each has a row-at-a-time version (used by im2col_gemm) and an
// element-at-a-time reference twin (used by the tests to check it).
#include "convkit/backend/conv_desc.h"

namespace convkit::cpu {

// x_image: C*H*W; col: (C*R*S) x (P*Q). With parallel, rows are split over threads.
template <typename T>
void im2col(const Conv2dDesc& d, const T* x_image, T* col, bool parallel);
// dx_image (C*H*W) = col2im(col); dx_image is overwritten.
template <typename T>
void col2im(const Conv2dDesc& d, const T* col, T* dx_image, bool parallel);

template <typename T>
void im2col_reference(const Conv2dDesc& d, const T* x_image, T* col);
template <typename T>
void col2im_reference(const Conv2dDesc& d, const T* col, T* dx_image);

}  // namespace convkit::cpu
