#pragma once
// DistributedDataParallel's gradient buckets: the parameters, grouped into
// buckets of about bucket_cap bytes in reverse registration order, each
// all-reduced as soon as backward has accumulated its last gradient, so the
// communication of one bucket overlaps the backward of the layers below it.
//
// A post-accumulate-grad hook on each parameter marks it ready. When a
// bucket's last parameter is ready, the bucket and every ready bucket after
// it are issued, strictly in bucket order (the group's order rule: the same
// collectives in the same order on every rank, whichever gradient a rank
// happens to finish first). The first hook of a pass queues finish() at the
// end of backward, which issues the buckets left (a parameter that got no
// gradient on this rank contributes zeros), waits for all of them and writes
// sum / world size into every parameter's grad.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/tensor.h"
#include "convkit/dist/process_group.h"

namespace convkit::dist::detail {

class GradientReducer : public std::enable_shared_from_this<GradientReducer> {
 public:
  struct Parameter {
    std::string name;
    Tensor tensor;
  };
  struct Bucket {
    std::vector<std::size_t> parameters;  // indices into parameters(), in bucket order
    std::vector<std::int64_t> offsets;    // of each in the flat buffer
    DType dtype = DType::float32;         // of its parameters
    std::int64_t numel = 0;
    Tensor buffer;                        // [numel] on the group's device, reused every pass
  };

  // `parameters` in registration order, each a float32 or float64 leaf that
  // requires grad. Call attach() once the reducer is owned by a shared_ptr.
  GradientReducer(std::shared_ptr<ProcessGroup> group, std::vector<Parameter> parameters, double bucket_cap_bytes);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Registers the hooks; they hold the reducer weakly.
  void attach();
  // While off, backward passes only accumulate local gradients.
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }

  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  void mark_ready(std::size_t parameter);
  void issue_ready_buckets();
  void issue(std::size_t bucket);
  void finish();
  void reset_pass();

  std::shared_ptr<ProcessGroup> group_;
  std::vector<Parameter> parameters_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // per parameter
  std::vector<std::uint64_t> hooks_;    // per parameter, 0 before attach()
  bool sync_ = true;

  // The pass in progress.
  std::vector<bool> ready_;               // per parameter
  std::vector<std::size_t> waiting_for_;  // per bucket: parameters not yet ready
  std::vector<std::shared_ptr<Work>> work_;
  std::size_t next_to_issue_ = 0;
  bool finish_queued_ = false;
};

}  // namespace convkit::dist::detail
