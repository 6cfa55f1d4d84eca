#include "dist/single_group.h"

#include "dist/collective_check.h"
#include "dist/work.h"

namespace convkit::dist {
namespace {

class SingleGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }

  std::shared_ptr<Work> allreduce_sum(Tensor tensor) override {
    check_collective_tensor("allreduce_sum", tensor);
    return std::make_shared<CompletedWork>();
  }
  std::shared_ptr<Work> broadcast(Tensor tensor, int root) override {
    check_collective_tensor("broadcast", tensor);
    check_root("broadcast", root, 1);
    return std::make_shared<CompletedWork>();
  }
  void barrier() override {}
};

}  // namespace

std::shared_ptr<ProcessGroup> make_single_group() { return std::make_shared<SingleGroup>(); }

}  // namespace convkit::dist
