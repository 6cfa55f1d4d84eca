#pragma once
// The operation kinds and parameter structs that Backend methods pass down to
// kernels. Kept apart from backend.h so that CUDA kernels can use them without
// seeing Tensor; everything here is plain data, passed by value.
#include <cstdint>

namespace convkit {

// The elementwise ops, listed once: the enums and the compile-time dispatch
// (elementwise_math.h's with_unary_op) expand these lists, and
// elementwise_math.h holds each op's formula. `a` and `b` are an op's scalars.
#define CONVKIT_UNARY_OPS(X)                                   \
  X(copy)        /* out = x (also converts dtype) */           \
  X(neg) X(exp) X(log) X(sqrt) X(rsqrt) X(abs) X(sign)         \
  X(square) X(reciprocal) X(relu) X(sigmoid) X(tanh)           \
  X(add_scalar)  /* x + a */                                   \
  X(mul_scalar)  /* x * a */                                   \
  X(pow_scalar)  /* x ^ a */                                   \
  X(rsub_scalar) /* a - x */                                   \
  X(rdiv_scalar) /* a / x */                                   \
  X(clamp)       /* min(max(x, a), b) */                       \
  X(leaky_relu)  /* x > 0 ? x : a * x */                       \
  X(elu)         /* x > 0 ? x : a * (exp(x) - 1) */            \
  X(silu)        /* x * sigmoid(x) */                          \
  X(gt_scalar)   /* x > a ? 1 : 0 */

#define CONVKIT_BINARY_OPS(X)                                  \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum)     \
  X(eq) X(ne) X(lt) X(le) X(gt) X(ge) /* 1 or 0 in the inputs' dtype */ \
  X(relu_grad)   /* a where b > 0, else 0: ReLU's backward from its output */

#define CK_ENUM_VALUE(name) name,
enum class UnaryOp { CONVKIT_UNARY_OPS(CK_ENUM_VALUE) };
enum class BinaryOp { CONVKIT_BINARY_OPS(CK_ENUM_VALUE) };
#undef CK_ENUM_VALUE

enum class ReduceOp { sum, max, min };

// Window of a 2-D pooling kernel, passed by value so that a GPU kernel can
// take it as a launch argument. Output sizes come from the out tensor's shape.
struct PoolWindow {
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;  // symmetric
  bool count_include_pad = true;      // average pooling only
};

// Batch norm's per-channel coefficients (Backend::batch_norm_coefficients),
// the rule of convkit/backend/batch_norm_math.h. momentum and
// variance_correction matter only where running statistics are updated.
struct BatchNormCoefficientStep {
  double eps = 1e-5;
  double momentum = 0.1;             // running = running * (1 - momentum) + batch * momentum
  double variance_correction = 1.0;  // M / (M - 1): the running variance is the unbiased one
};

// One fused SGD step over one parameter tensor (Backend::sgd_update), the rule
// of optim::sgd_update element by element (convkit/backend/optimizer_math.h).
struct SgdStep {
  double lr = 0;
  double weight_decay = 0;  // L2, folded into the gradient; 0: none
  double momentum = 0;      // 0: plain SGD, no buffer
  double dampening = 0;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer holds nothing yet and becomes the gradient
};

// One fused Adam/AdamW step (Backend::adam_update). The bias corrections of
// the step t come from the host, computed once per tensor in double.
struct AdamStep {
  double lr = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW: p *= 1 - lr * weight_decay; Adam: L2 in the gradient
  double bias_correction1 = 1;          // 1 - beta1^t
  double bias_correction2_sqrt = 1;     // sqrt(1 - beta2^t)
};

}  // namespace convkit
