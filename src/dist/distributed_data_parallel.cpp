#include "convkit/dist/distributed_data_parallel.h"

#include <sstream>

#include "dist/broadcast_tensors.h"
#include "dist/gradient_reducer.h"

namespace convkit::dist {

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 const DistributedDataParallelOptions& options)
    : Module("DistributedDataParallel"), module_(std::move(module)), group_(std::move(group)), options_(options) {
  CK_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  CK_CHECK(group_ != nullptr, "DistributedDataParallel: the process group is null");
  CK_CHECK(options_.bucket_cap_mb_ > 0, "DistributedDataParallel: bucket_cap_mb must be positive, got ",
           options_.bucket_cap_mb_);
  register_module("module", module_);
  if (group_->size() == 1) return;

  std::vector<Tensor> state = module_->parameters();
  for (const Tensor& b : module_->buffers()) state.push_back(b);
  detail::broadcast_tensors(*group_, state, 0);

  std::vector<detail::GradientReducer::Parameter> trained;
  for (const auto& [name, p] : module_->named_parameters())
    if (p.requires_grad()) trained.push_back({name, p});
  reducer_ = std::make_shared<detail::GradientReducer>(group_, std::move(trained),
                                                       options_.bucket_cap_mb_ * 1024.0 * 1024.0);
  reducer_->attach();
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::prepare_forward() {
  if (options_.broadcast_buffers_ && group_->size() > 1 && is_training())
    detail::broadcast_tensors(*group_, module_->buffers(), 0);
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  prepare_forward();
  return module_->forward(input);
}

std::string DistributedDataParallel::extra_repr() const {
  std::ostringstream os;
  os << "rank=" << group_->rank() << ", world_size=" << group_->size() << ", backend=" << group_->backend()
     << ", bucket_cap_mb=" << options_.bucket_cap_mb_
     << ", broadcast_buffers=" << (options_.broadcast_buffers_ ? "True" : "False");
  return os.str();
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  std::vector<std::vector<std::string>> out;
  if (!reducer_) return out;
  for (const auto& bucket : reducer_->buckets()) {
    out.emplace_back();
    for (std::size_t k : bucket.parameters) out.back().push_back(reducer_->parameters()[k].name);
  }
  return out;
}

void DistributedDataParallel::set_gradient_sync(bool on) {
  sync_ = on;
  if (reducer_) reducer_->set_sync(on);
}

bool DistributedDataParallel::gradient_sync() const { return sync_; }

}  // namespace convkit::dist
