#pragma once
// The elementwise ops (UnaryOp, BinaryOp) one element at a time, written once
// for the cpu backend's loops and the GPU kernels (kernels/elementwise.cu), so
// the backends cannot drift apart: cpu and sim agree bit for bit because they
// run these very lines. A new op is one entry in kernel_params.h's list and
// one case here (-Wswitch names a case left out).
//
// Each function switches on the op. A loop that passes an op known at compile
// time (with_unary_op / with_binary_op) gets the switch folded away, so its
// body is the op's formula alone and vectorises; the GPU kernels pass the op
// at run time instead, where the branch is uniform across the grid and costs
// next to nothing beside the memory traffic.
//
// The math functions are std::'s: g++ calls the C library's expf/exp, and
// nvcc maps the same names onto its device functions.
#include <cmath>

#include "convkit/backend/kernel_params.h"
#include "convkit/core/host_device.h"

namespace convkit::elementwise_math {

// `a` and `b` are the op's scalar parameters (see UnaryOp), already rounded to T.
template <typename T>
CK_HOST_DEVICE inline T unary_value(UnaryOp op, T v, T a, T b) {
  switch (op) {
    case UnaryOp::copy: return v;
    case UnaryOp::neg: return -v;
    case UnaryOp::exp: return std::exp(v);
    case UnaryOp::log: return std::log(v);
    case UnaryOp::sqrt: return std::sqrt(v);
    case UnaryOp::rsqrt: return T(1) / std::sqrt(v);
    case UnaryOp::abs: return std::abs(v);
    case UnaryOp::sign: return T((v > T(0)) - (v < T(0)));
    case UnaryOp::square: return v * v;
    case UnaryOp::reciprocal: return T(1) / v;
    case UnaryOp::relu: return v > T(0) ? v : T(0);
    case UnaryOp::sigmoid: return T(1) / (T(1) + std::exp(-v));
    case UnaryOp::tanh: return std::tanh(v);
    case UnaryOp::add_scalar: return v + a;
    case UnaryOp::mul_scalar: return v * a;
    case UnaryOp::pow_scalar: return a == T(2) ? v * v : std::pow(v, a);
    case UnaryOp::rsub_scalar: return a - v;
    case UnaryOp::rdiv_scalar: return a / v;
    case UnaryOp::clamp: return v < a ? a : (v > b ? b : v);
    case UnaryOp::leaky_relu: return v > T(0) ? v : a * v;
    case UnaryOp::elu: return v > T(0) ? v : a * (std::exp(v) - T(1));
    case UnaryOp::silu: return v / (T(1) + std::exp(-v));
    case UnaryOp::gt_scalar: return T(v > a);
  }
  return v;
}

template <typename T>
CK_HOST_DEVICE inline T binary_value(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    case BinaryOp::div: return x / y;
    case BinaryOp::pow: return std::pow(x, y);
    case BinaryOp::maximum: return x > y ? x : y;
    case BinaryOp::minimum: return x < y ? x : y;
    case BinaryOp::eq: return T(x == y);
    case BinaryOp::ne: return T(x != y);
    case BinaryOp::lt: return T(x < y);
    case BinaryOp::le: return T(x <= y);
    case BinaryOp::gt: return T(x > y);
    case BinaryOp::ge: return T(x >= y);
    case BinaryOp::relu_grad: return y > T(0) ? x : T(0);  // x: the gradient, y: ReLU's output
  }
  return x;
}

// Calls f.template operator()<Op>() with op as a compile-time constant: host
// loops get one instantiation per op.
template <typename F>
void with_unary_op(UnaryOp op, F&& f) {
  switch (op) {
#define CK_CASE(name) \
  case UnaryOp::name: return f.template operator()<UnaryOp::name>();
    CONVKIT_UNARY_OPS(CK_CASE)
#undef CK_CASE
  }
}

template <typename F>
void with_binary_op(BinaryOp op, F&& f) {
  switch (op) {
#define CK_CASE(name) \
  case BinaryOp::name: return f.template operator()<BinaryOp::name>();
    CONVKIT_BINARY_OPS(CK_CASE)
#undef CK_CASE
  }
}

}  // namespace convkit::elementwise_math
