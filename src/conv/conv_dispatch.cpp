// The tensor-to-pointer adapter every backend's conv2d_* methods share.
#include "conv/conv_dispatch.h"

#include <string>

#include "convkit/core/error.h"

namespace convkit::conv {

namespace {

const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
void* mut_ptr_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

std::string op_name(const ConvAlgorithmRegistry& registry, ConvAlgo algo, ConvPass pass) {
  return conv_op_name(registry.backend(), algo, pass);
}

// What Backend's contract promises, checked once here for every algorithm:
// a valid descriptor, and operands of its sizes, contiguous, of one dtype.
void check_operand(const std::string& op, const char* name, const Tensor& t, std::int64_t numel, DType dtype) {
  CK_CHECK(t.defined(), op, ": ", name, " is undefined");
  CK_CHECK(t.dtype() == dtype && t.is_contiguous() && t.numel() == numel, op, ": ", name, " must be a contiguous ",
           dtype, " tensor of ", numel, " values, got ", t.dtype(), " of shape ", t.shape(),
           t.is_contiguous() ? "" : " (not contiguous)");
}

// The workspace, once it is known to be large enough for `pass`. An
// unsupported descriptor or dtype is left to the pass, whose own checks name it.
void* checked_workspace(const std::string& op, const ConvAlgorithm& a, const Conv2dDesc& desc, DType dtype,
                        ConvPass pass, const Tensor& workspace) {
  if (!is_floating(dtype) || !a.supports(desc)) return mut_ptr_or_null(workspace);
  const std::size_t needed = a.workspace_bytes(desc, dtype, pass);
  const std::size_t given =
      workspace.defined() ? static_cast<std::size_t>(workspace.numel()) * dtype_size(workspace.dtype()) : 0;
  CK_CHECK(given >= needed, op, ": needs ", needed, " bytes of workspace, got ", given, "; descriptor: ", desc.str());
  return mut_ptr_or_null(workspace);
}

std::int64_t x_numel(const Conv2dDesc& d) { return d.N * d.C * d.H * d.W; }
std::int64_t w_numel(const Conv2dDesc& d) { return d.K * d.C_per_group() * d.R * d.S; }
std::int64_t y_numel(const Conv2dDesc& d) { return d.N * d.K * d.P() * d.Q(); }

}  // namespace

Support dispatch_supports(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc) {
  if (algo == ConvAlgo::automatic) return Support::no("automatic is resolved before reaching a backend");
  const ConvAlgorithm* a = registry.find(algo);
  if (a == nullptr) {
    return Support::no(detail::concat(conv_algo_name(algo), " is not implemented on the ", registry.backend(),
                                      " backend yet"));
  }
  return a->supports(desc);
}

std::size_t dispatch_workspace_bytes(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc,
                                     DType dtype, ConvPass pass) {
  return registry.get(algo).workspace_bytes(desc, dtype, pass);
}

void dispatch_forward(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc, const Tensor& x,
                      const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& workspace) {
  const ConvAlgorithm& a = registry.get(algo);
  const std::string op = op_name(registry, algo, ConvPass::forward);
  desc.validate(op.c_str());
  const DType dtype = x.dtype();
  check_operand(op, "x", x, x_numel(desc), dtype);
  check_operand(op, "w", w, w_numel(desc), dtype);
  if (b.defined()) check_operand(op, "b", b, desc.K, dtype);
  check_operand(op, "y", y, y_numel(desc), dtype);
  void* ws = checked_workspace(op, a, desc, dtype, ConvPass::forward, workspace);
  a.forward(desc, x.dtype(), x.raw_data(), w.raw_data(), ptr_or_null(b), y.raw_data(), ws);
}

void dispatch_backward_data(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc,
                            const Tensor& dy, const Tensor& w, const Tensor& dx, const Tensor& workspace) {
  const ConvAlgorithm& a = registry.get(algo);
  const std::string op = op_name(registry, algo, ConvPass::backward_data);
  desc.validate(op.c_str());
  const DType dtype = dy.dtype();
  check_operand(op, "dy", dy, y_numel(desc), dtype);
  check_operand(op, "w", w, w_numel(desc), dtype);
  check_operand(op, "dx", dx, x_numel(desc), dtype);
  void* ws = checked_workspace(op, a, desc, dtype, ConvPass::backward_data, workspace);
  a.backward_data(desc, dy.dtype(), dy.raw_data(), w.raw_data(), dx.raw_data(), ws);
}

void dispatch_backward_weights(const ConvAlgorithmRegistry& registry, ConvAlgo algo, const Conv2dDesc& desc,
                               const Tensor& x, const Tensor& dy, const Tensor& dw, const Tensor& db,
                               const Tensor& workspace) {
  const ConvAlgorithm& a = registry.get(algo);
  const std::string op = op_name(registry, algo, ConvPass::backward_weights);
  desc.validate(op.c_str());
  const DType dtype = x.dtype();
  check_operand(op, "x", x, x_numel(desc), dtype);
  check_operand(op, "dy", dy, y_numel(desc), dtype);
  check_operand(op, "dw", dw, w_numel(desc), dtype);
  if (db.defined()) check_operand(op, "db", db, desc.K, dtype);
  void* ws = checked_workspace(op, a, desc, dtype, ConvPass::backward_weights, workspace);
  a.backward_weights(desc, x.dtype(), x.raw_data(), dy.raw_data(), dw.raw_data(), mut_ptr_or_null(db), ws);
}

}  // namespace convkit::conv
