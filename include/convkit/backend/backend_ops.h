#pragma once
// The Backend methods that run an op, listed once. A backend declares which of
// them it implements (Backend::supports); the others run on cpu through the
// default methods of Backend (src/backend/cpu_fallback.cpp). The memory
// methods, type() and devices() are not in this list: every backend must
// implement them, since the fallback itself needs them.
#include <cstddef>
#include <ostream>

namespace convkit {

#define CONVKIT_BACKEND_OPS(X)                                                      \
  X(fill) X(unary) X(binary) X(where)                                               \
  X(reduce) X(argmax)                                                               \
  X(matmul)                                                                         \
  X(arange) X(uniform) X(normal)                                                    \
  X(max_pool2d_forward) X(max_pool2d_backward)                                      \
  X(avg_pool2d_forward) X(avg_pool2d_backward)                                      \
  X(batch_norm_stats) X(batch_norm_coefficients) X(batch_norm_affine)               \
  X(batch_norm_backward_reduce) X(batch_norm_backward_input)                        \
  X(batch_norm_add_relu) X(batch_norm_relu_backward_reduce)                         \
  X(dropout_mask)                                                                   \
  X(softmax_forward) X(softmax_backward)                                            \
  X(cross_entropy_forward) X(cross_entropy_backward)                                \
  X(sgd_update) X(adam_update)                                                      \
  X(conv2d) /* conv2d_supports, _workspace_bytes, _heuristic and the three passes, \
               which one adapter implements together (src/conv/conv_dispatch.h) */

#define CK_ENUM_VALUE(name) name,
enum class BackendOp { CONVKIT_BACKEND_OPS(CK_ENUM_VALUE) };
#undef CK_ENUM_VALUE

#define CK_COUNT(name) +1
inline constexpr std::size_t kBackendOpCount = 0 CONVKIT_BACKEND_OPS(CK_COUNT);
#undef CK_COUNT

constexpr const char* backend_op_name(BackendOp op) {
  switch (op) {
#define CK_CASE(name) \
  case BackendOp::name: return #name;
    CONVKIT_BACKEND_OPS(CK_CASE)
#undef CK_CASE
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, BackendOp op) { return os << backend_op_name(op); }

}  // namespace convkit
