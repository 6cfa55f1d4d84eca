#pragma once
// optim::Optimizer: the base of SGD, Adam, AdamW and RMSprop, modelled on PyTorch's.
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   for (...) { opt.zero_grad(); loss(model, batch).backward(); opt.step(); }
//
// Parameters come in groups; each group has its own learning rate and weight
// decay (unset ones take the optimizer's), the other hyper-parameters are the
// optimizer's. A scheduler changes `param_groups()[g].lr` between steps.
//
// State lives per parameter, keyed by the parameter's identity (its
// TensorImpl), so it survives Module::to(), which moves tensors in place; state
// made before such a move is moved to the parameter's device and dtype at the
// next step.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "convkit/core/tensor.h"
#include "convkit/nn/state_dict.h"

namespace convkit::optim {

struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<double> lr;            // unset: the optimizer's; always set once inside one
  std::optional<double> weight_decay;  // unset: the optimizer's; always set once inside one
};

// What an optimizer keeps for one parameter.
struct ParamState {
  std::int64_t step = 0;  // updates applied to this parameter so far
  // Named buffers, e.g. "momentum_buffer", each shaped as the parameter. A map
  // so that references to slots stay valid while others are added.
  std::map<std::string, Tensor> tensors;

  // The slot for `name`, created undefined when missing; update rules create
  // their buffers on first use by assigning to it.
  Tensor& slot(const std::string& name) { return tensors[name]; }
  Tensor get(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? Tensor() : it->second;
  }
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update to every parameter that has a gradient (parameters
  // without one are skipped and keep their state). Runs under NoGradGuard.
  void step();
  // Clears the gradients of every parameter: undefined when set_to_none (the
  // default, as PyTorch 2), else filled with zeros.
  void zero_grad(bool set_to_none = true);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Adds a group; unset lr / weight_decay take the optimizer's defaults.
  void add_param_group(ParamGroup group);

  const std::string& name() const { return name_; }
  // The state of `param`, or null before its first update.
  const ParamState* state(const Tensor& param) const;

  // Everything needed to resume, as named tensors (float64/int64 scalars on
  // the cpu for the numbers), with parameters numbered in group order:
  //   param_groups.<g>.lr, param_groups.<g>.weight_decay,
  //   state.<i>.step, state.<i>.<buffer>   (e.g. state.3.exp_avg)
  // Buffer tensors share storage with the optimizer's.
  StateDict state_dict() const;
  // Restores a state_dict() taken from an optimizer of the same type over
  // parameters of the same shapes. Tensors are copied (to each parameter's
  // device and dtype). Throws Error naming every unknown key and shape
  // mismatch; on error nothing has been modified.
  void load_state_dict(const StateDict& state);

 protected:
  Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr,
            double default_weight_decay);
  // The state buffers this optimizer may keep per parameter (what load_state_dict accepts).
  virtual std::vector<std::string> state_names() const = 0;
  // The update of one parameter whose gradient is `grad`; state.step has
  // already been incremented for this update.
  virtual void update(const Tensor& param, const Tensor& grad, ParamState& state,
                      const ParamGroup& group) = 0;
  // One parameter of a group's step, its gradient checked against it.
  struct PendingUpdate {
    Tensor param, grad;
    ParamState* state;
  };
  // The updates of one group, in parameter order. The default runs update()
  // on each; SGD and Adam hand their fused updates to the backend together
  // (Backend::sgd_update_many), one launch per group on the GPU backends.
  virtual void update_group(const std::vector<PendingUpdate>& updates, const ParamGroup& group);

 private:
  void check_group(const ParamGroup& group) const;

  std::string name_;
  double default_lr_, default_weight_decay_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace convkit::optim
