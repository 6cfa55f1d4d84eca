#pragma once
// Tensor: a cheap, shareable handle onto (storage, shape, strides, offset,
// dtype) plus the autograd slot. Copying a Tensor copies the handle, never the
// data; views share storage. Math lives in convkit/ops/*; the members here are
// conveniences that forward to those free functions.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/device.h"
#include "convkit/core/dtype.h"
#include "convkit/core/error.h"
#include "convkit/core/shape.h"
#include "convkit/core/storage.h"
#include "convkit/core/tensor_indexing.h"

namespace convkit {

namespace autograd { class Node; }
class TensorImpl;

// Chained-setter options for the factories: zeros({2, 3}, TensorOptions().device("sim")).
struct TensorOptions {
  DType dtype_ = DType::float32;
  Device device_ = kCPU;
  bool requires_grad_ = false;
  // Whether dtype_ was chosen rather than defaulted: factories of integer
  // values (from_vector of int64, randint) then make int64, as PyTorch does.
  bool dtype_given_ = false;
  TensorOptions() = default;
  TensorOptions(DType t) : dtype_(t), dtype_given_(true) {}  // NOLINT: zeros(s, DType::float64)
  TensorOptions(Device d) : device_(d) {}      // NOLINT: zeros(s, Device("sim"))
  TensorOptions& dtype(DType t) { dtype_ = t; dtype_given_ = true; return *this; }
  TensorOptions& device(Device d) { device_ = d; return *this; }
  TensorOptions& requires_grad(bool r = true) { requires_grad_ = r; return *this; }
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor; defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // New uninitialised contiguous tensor.
  static Tensor empty(const Shape& shape, TensorOptions opts = {});
  // A tensor that views `storage` with the given geometry.
  static Tensor make_view(std::shared_ptr<Storage> storage, Shape shape,
                          std::vector<std::int64_t> strides, std::int64_t offset, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- geometry
  const Shape& shape() const;
  std::int64_t dim() const;
  std::int64_t size(std::int64_t d) const;  // negative d counts from the end
  const std::vector<std::int64_t>& strides() const;
  std::int64_t stride(std::int64_t d) const;
  std::int64_t offset() const;
  std::int64_t numel() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;
  // Pointer to the first element (device memory for sim/cuda). Checks the dtype.
  template <typename T> T* data() const {
    CK_CHECK(dtype() == dtype_of<T>::value, "Tensor::data<", dtype_name(dtype_of<T>::value),
             ">() called on a ", dtype_name(dtype()), " tensor of shape ", shape());
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const;

  // ---- views (share storage; differentiable)
  Tensor view(const Shape& shape) const;      // requires compatible strides
  Tensor reshape(const Shape& shape) const;   // view when possible, else copy
  Tensor permute(const std::vector<std::int64_t>& order) const;
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor expand(const Shape& shape) const;
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor contiguous() const;  // itself when already contiguous
  // libtorch-style indexing (convkit/core/tensor_indexing.h): t[i] is
  // select(0, i); index() takes integers, Slice, None and Ellipsis.
  Tensor operator[](std::int64_t index) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;

  // ---- copies
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor clone() const;
  // Value of a one-element tensor, converted to double.
  double item() const;
  template <typename T> T item() const { return static_cast<T>(item()); }
  // All elements in row-major order, copied to the host and converted to T.
  template <typename T> std::vector<T> to_vector() const;

  // ---- autograd
  bool requires_grad() const;
  Tensor& requires_grad_(bool value = true);
  bool is_leaf() const;
  Tensor grad() const;           // undefined until a backward reaches this leaf
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  // Seeds with ones for a one-element tensor; otherwise `gradient` is required.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // shares storage, cut from the graph

  // ---- in-place (bump the version counter; see autograd docs)
  Tensor& zero_();
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& src);  // broadcasts src to this shape; any device
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& sub_(const Tensor& other);
  Tensor& mul_(const Tensor& other);
  Tensor& div_(const Tensor& other);
  Tensor& add_(double value);
  Tensor& mul_(double value);
  Tensor& clamp_(double lo, double hi);
  Tensor& relu_();

  // ---- math conveniences (see convkit/ops)
  Tensor sum(const std::vector<std::int64_t>& dims = {}, bool keepdim = false) const;
  Tensor mean(const std::vector<std::int64_t>& dims = {}, bool keepdim = false) const;
  Tensor max(std::int64_t dim, bool keepdim = false) const;
  Tensor max() const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor var(const std::vector<std::int64_t>& dims = {}, bool unbiased = true,
             bool keepdim = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor pow(double exponent) const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor clamp(double lo, double hi) const;
  Tensor matmul(const Tensor& other) const;

  // PyTorch-style text: tensor([[1.0000, 2.0000]], requires_grad=True)
  std::string str() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

class TensorImpl {
 public:
  std::shared_ptr<Storage> storage;
  Shape shape;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
  DType dtype = DType::float32;
  bool is_view = false;  // shares storage with a tensor it was derived from

  // autograd
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;           // null for leaves
  std::weak_ptr<autograd::Node> grad_accumulator;    // leaves: shared by every use
  // Run, in registration order, each time a backward has accumulated into
  // `grad` (autograd::register_post_accumulate_grad_hook). Kept here, not on
  // the AccumulateGrad node, because that node is made lazily and held weakly:
  // a hook must outlive the graphs of single steps.
  std::vector<std::pair<std::uint64_t, std::function<void(const Tensor&)>>> post_accumulate_grad_hooks;
};

}  // namespace convkit
