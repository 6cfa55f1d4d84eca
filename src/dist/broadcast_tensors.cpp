#include "dist/broadcast_tensors.h"

#include "convkit/autograd/grad_mode.h"
#include "convkit/ops/factory.h"

namespace convkit::dist::detail {

namespace {

void broadcast_staged(ProcessGroup& group, const std::vector<Tensor>& tensors, DType staging, int root) {
  std::int64_t total = 0;
  for (const Tensor& t : tensors) total += t.numel();
  if (total == 0) return;
  // On the group's device: a device group broadcasts a model on its device
  // without a trip through the host.
  Tensor buffer = Tensor::empty({total}, TensorOptions().dtype(staging).device(group.device()));
  std::int64_t offset = 0;
  for (const Tensor& t : tensors) {
    buffer.narrow(0, offset, t.numel()).view(t.shape()).copy_(t.detach().to(staging));
    offset += t.numel();
  }
  group.broadcast(buffer, root)->wait();
  offset = 0;
  for (const Tensor& t : tensors) {
    Tensor target = t;  // a handle: the write reaches the caller's tensor
    target.copy_(buffer.narrow(0, offset, t.numel()).view(t.shape()).to(t.dtype()));
    offset += t.numel();
  }
}

}  // namespace

void broadcast_tensors(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  CK_CHECK(root >= 0 && root < group.size(), "broadcast_tensors: root ", root, " is not a rank of a group of ",
           group.size());
  std::vector<Tensor> as_float32, as_float64;
  for (const Tensor& t : tensors) {
    CK_CHECK(t.defined(), "broadcast_tensors: a tensor is undefined");
    (t.dtype() == DType::float32 ? as_float32 : as_float64).push_back(t);
  }
  NoGradGuard no_grad;
  // The same two collectives on every rank, whatever its tensors hold: a rank
  // with no float32 tensors still takes part with an empty list only if all
  // ranks have none, which holds since every rank wraps the same model.
  broadcast_staged(group, as_float32, DType::float32, root);
  broadcast_staged(group, as_float64, DType::float64, root);
}

}  // namespace convkit::dist::detail
