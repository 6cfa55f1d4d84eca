#include "device_group_checks.h"

#include <vector>

#include "dist/gradient_reducer.h"

namespace convkit::testing {

const char* sim_thread_ranks_unsupported() {
#if defined(__SANITIZE_ADDRESS__)
  return "sim thread-ranks under AddressSanitizer: see device_group_checks.h";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return "sim thread-ranks under AddressSanitizer: see device_group_checks.h";
#endif
#endif
  return nullptr;
}

std::vector<Batch> batches_on(const std::vector<Batch>& batches, Device device) {
  std::vector<Batch> out;
  for (const Batch& b : batches) out.push_back({b.x.to(device), b.y.to(device)});
  return out;
}

double one_rank_reducer_difference(const std::shared_ptr<dist::ProcessGroup>& group) {
  const Device device = group->device();
  const auto batches = batches_on(training_batches(3, 4), device);
  auto reference = small_conv_net(7, false);
  reference->to(device);
  train_sgd(*reference, batches);

  auto model = small_conv_net(7, false);
  model->to(device);
  std::vector<dist::detail::GradientReducer::Parameter> parameters;
  for (const auto& [name, p] : model->named_parameters()) parameters.push_back({name, p});
  // A small cap: several buckets, issued during backward.
  auto reducer = std::make_shared<dist::detail::GradientReducer>(group, parameters, 200.0 * 4);
  reducer->attach();
  for (const auto& bucket : reducer->buckets())
    CK_CHECK(bucket.buffer.device() == device, "a bucket is on ", bucket.buffer.device(), ", not ", device);
  train_sgd(*model, batches);
  return max_state_difference(*model, *reference);
}

namespace {

std::vector<double> values_of(const Tensor& t) { return t.to(kCPU).to(DType::float64).to_vector<double>(); }

}  // namespace

std::string one_rank_collectives_problem(const std::shared_ptr<dist::ProcessGroup>& group) {
  const Device device = group->device();
  const TensorOptions f32 = TensorOptions().device(device);
  const Tensor a = arange(0, 1000, 1, f32) * 0.5;  // written by a kernel just before the collective
  const std::vector<double> want_a = values_of(arange(0, 1000, 1) * 0.5);
  group->allreduce_sum(a)->wait();
  if (values_of(a) != want_a) return "allreduce_sum of float32 [1000] changed the values of a one-rank group";
  const Tensor b = arange(0, 7, 1, TensorOptions().device(device).dtype(DType::float64));
  group->broadcast(b, 0)->wait();
  if (values_of(b) != values_of(arange(0, 7, 1))) return "broadcast of float64 [7] from rank 0 changed the values";
  group->allreduce_sum(empty({0}, f32))->wait();
  std::vector<Tensor> many;
  std::vector<std::shared_ptr<dist::Work>> works;
  for (int i = 0; i < 8; ++i) {
    many.push_back(full({64 * (i + 1)}, i, f32));
    works.push_back(group->allreduce_sum(many.back()));
  }
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();  // any order of waits
  for (int i = 0; i < 8; ++i)
    if (values_of(many[static_cast<std::size_t>(i)]) != std::vector<double>(static_cast<std::size_t>(64 * (i + 1)), i))
      return "collective " + std::to_string(i) + " of 8 in flight came back wrong";
  group->barrier();
  try {
    group->allreduce_sum(ones({3}));
    return "a cpu tensor was accepted";
  } catch (const Error& e) {
    if (std::string(e.what()).find("is on cpu") == std::string::npos) return std::string("wrong error: ") + e.what();
  }
  // A refused call takes no turn: the group still works.
  const Tensor c = full({5}, 3, f32);
  group->allreduce_sum(c)->wait();
  if (values_of(c) != std::vector<double>(5, 3)) return "a collective after a refused one came back wrong";
  return "";
}

}  // namespace convkit::testing
