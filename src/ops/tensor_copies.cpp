// Tensor's copying members (declared in convkit/core/tensor.h): clone, to()
// and the host read-backs run kernels and record autograd, so they are ops.
#include "convkit/autograd/grad_mode.h"
#include "convkit/autograd/node.h"
#include "convkit/backend/backend.h"
#include "convkit/core/tensor.h"
#include "core/op_scope.h"
#include "ops/op_helpers.h"

namespace convkit {

using autograd::record;

// ---------------------------------------------------------------- copies

Tensor Tensor::clone() const {
  const detail::OpScope op_scope("clone");
  Tensor out = detail::new_empty(shape(), *this);
  detail::backend_of(*this).unary(UnaryOp::copy, *this, out);
  return record(out, "CloneBackward", {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

namespace {

// Copies contiguous `src` into contiguous `dst` on another device, via the host.
void copy_across_devices(const Tensor& src, const Tensor& dst) {
  const std::size_t nbytes = static_cast<std::size_t>(src.numel()) * dtype_size(src.dtype());
  if (src.device().type == DeviceType::cpu) {
    backend_for(dst.device()).copy_from_host(dst.raw_data(), src.raw_data(), nbytes);
  } else if (dst.device().type == DeviceType::cpu) {
    backend_for(src.device()).copy_to_host(dst.raw_data(), src.raw_data(), nbytes);
  } else {
    Tensor staging = Tensor::empty(src.shape(), TensorOptions().dtype(src.dtype()));
    backend_for(src.device()).copy_to_host(staging.raw_data(), src.raw_data(), nbytes);
    backend_for(dst.device()).copy_from_host(dst.raw_data(), staging.raw_data(), nbytes);
  }
}

}  // namespace

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  const detail::OpScope op_scope("to(device)");
  Tensor src = contiguous();
  Tensor out = Tensor::empty(shape(), TensorOptions().dtype(dtype()).device(device));
  {
    NoGradGuard no_grad;
    copy_across_devices(src, out);
  }
  const Device from = this->device();
  return record(out, "ToDeviceBackward", {*this},
                [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == this->dtype()) return *this;
  const detail::OpScope op_scope("to(dtype)");
  Tensor out = detail::new_empty(shape(), *this, dtype);
  detail::backend_of(*this).unary(UnaryOp::copy, *this, out);
  if (!is_floating(dtype)) return out;  // integers carry no gradient
  const DType from = this->dtype();
  return record(out, "ToDtypeBackward", {*this},
                [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; });
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  NoGradGuard no_grad;
  const Tensor host = to(kCPU).to(dtype_of<T>::value).contiguous();
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int64_t> Tensor::to_vector<std::int64_t>() const;

double Tensor::item() const {
  CK_CHECK(numel() == 1, "item: expected a tensor with one element, got shape ", shape());
  NoGradGuard no_grad;
  return to_vector<double>()[0];
}

}  // namespace convkit
