// The argument check every device communicator runs, and the Backend
// defaults for backends that have no communicator.
#include "convkit/backend/device_communicator.h"

#include "convkit/backend/backend.h"
#include "convkit/core/error.h"

namespace convkit {

void check_communicator_tensor(const char* op, const Tensor& tensor, Device device) {
  CK_CHECK(tensor.defined(), "dist::", op, ": the tensor is undefined");
  const std::string what = detail::concat(dtype_name(tensor.dtype()), " ", tensor.shape().str());
  CK_CHECK(tensor.device() == device, "dist::", op, ": the tensor (", what, ") is on ", tensor.device(),
           "; this group communicates tensors on ", device, " only (move it with .to(\"", device, "\"))");
  CK_CHECK(tensor.dtype() == DType::float32 || tensor.dtype() == DType::float64, "dist::", op, ": the tensor (",
           what, ") must be float32 or float64");
  CK_CHECK(tensor.numel() == 0 || tensor.is_contiguous(), "dist::", op, ": the tensor (", what,
           ") must be contiguous (call .contiguous() and communicate that copy)");
}

CommunicatorSupport Backend::communicator_support() const {
  return {false, "the " + Device(type()).str() + " backend has no device communicator"};
}

CommunicatorId Backend::make_communicator_id() {
  CK_FAIL("make_communicator_id: ", communicator_support().detail);
}

std::unique_ptr<DeviceCommunicator> Backend::make_communicator(const CommunicatorId&, int, int, Device, double) {
  CK_FAIL("make_communicator: ", communicator_support().detail);
}

}  // namespace convkit
