// Tensor as core holds it: creation, geometry and the autograd slot. Views,
// copies and to() record autograd and run kernels, so they are ops
// (src/ops/tensor_views.cpp, tensor_copies.cpp); backward() is the engine's
// (src/autograd/engine.cpp). Their declarations stay in tensor.h, as
// libtorch's TensorBody declares methods that ATen implements.
#include "convkit/core/tensor.h"

namespace convkit {

// ---------------------------------------------------------------- creation

Tensor Tensor::empty(const Shape& shape, TensorOptions opts) {
  for (auto d : shape) CK_CHECK(d >= 0, "empty: negative dimension in shape ", shape);
  const auto element_bytes = static_cast<std::int64_t>(dtype_size(opts.dtype_));
  const std::int64_t numel = shape.numel();
  CK_CHECK(numel <= Shape::kMaxShapeProduct / element_bytes, "empty: shape ", shape, " of ", opts.dtype_,
           " would take ", numel, " x ", element_bytes, " bytes, more than 2^62");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<std::size_t>(numel * element_bytes), opts.device_,
                                    &shape, opts.dtype_);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = opts.dtype_;
  if (opts.requires_grad_) {
    CK_CHECK(is_floating(opts.dtype_), "requires_grad: only floating tensors can require grad, got ",
             opts.dtype_);
    impl->requires_grad = true;
  }
  return Tensor(std::move(impl));
}

Tensor Tensor::make_view(std::shared_ptr<Storage> storage, Shape shape,
                         std::vector<std::int64_t> strides, std::int64_t offset, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->is_view = true;
  return Tensor(std::move(impl));
}

// ---------------------------------------------------------------- geometry

namespace {
const TensorImpl& need(const Tensor& t) {
  CK_CHECK(t.defined(), "operation on an undefined tensor");
  return *t.impl();
}
}  // namespace

const Shape& Tensor::shape() const { return need(*this).shape; }
std::int64_t Tensor::dim() const { return shape().rank(); }
std::int64_t Tensor::size(std::int64_t d) const { return shape()[static_cast<std::size_t>(wrap_dim(d, dim(), "size"))]; }
const std::vector<std::int64_t>& Tensor::strides() const { return need(*this).strides; }
std::int64_t Tensor::stride(std::int64_t d) const { return strides()[static_cast<std::size_t>(wrap_dim(d, dim(), "stride"))]; }
std::int64_t Tensor::offset() const { return need(*this).offset; }
std::int64_t Tensor::numel() const { return shape().numel(); }
DType Tensor::dtype() const { return need(*this).dtype; }
Device Tensor::device() const { return need(*this).storage->device(); }
const std::shared_ptr<Storage>& Tensor::storage() const { return need(*this).storage; }
void* Tensor::raw_data() const {
  const auto& impl = need(*this);
  return static_cast<char*>(impl.storage->data()) + impl.offset * static_cast<std::int64_t>(dtype_size(impl.dtype));
}

bool Tensor::is_contiguous() const {
  const auto& impl = need(*this);
  std::int64_t expected = 1;
  for (std::size_t i = impl.shape.size(); i-- > 0;) {
    if (impl.shape[i] == 1) continue;
    if (impl.strides[i] != expected) return false;
    expected *= impl.shape[i];
  }
  return true;
}

// ---------------------------------------------------------------- autograd

bool Tensor::requires_grad() const { return need(*this).requires_grad; }

Tensor& Tensor::requires_grad_(bool value) {
  CK_CHECK(!value || is_floating(dtype()), "requires_grad_: only floating tensors can require grad, got ",
           dtype(), " of shape ", shape());
  CK_CHECK(is_leaf() || value, "requires_grad_: cannot turn off requires_grad on a non-leaf tensor; use detach()");
  impl()->requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const { return need(*this).grad_fn == nullptr; }
Tensor Tensor::grad() const { return need(*this).grad; }
void Tensor::set_grad(const Tensor& g) const {
  CK_CHECK(!g.defined() || g.shape() == shape(), "set_grad: gradient of shape ", g.shape(),
           " for a tensor of shape ", shape());
  impl()->grad = g;
}
const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const { return need(*this).grad_fn; }

Tensor Tensor::detach() const {
  Tensor out = Tensor::make_view(storage(), shape(), strides(), offset(), dtype());
  out.impl()->is_view = false;  // a detached tensor is its own autograd root
  return out;
}

}  // namespace convkit
