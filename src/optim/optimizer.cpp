#include "convkit/optim/optimizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "convkit/autograd/grad_mode.h"
#include "convkit/ops/factory.h"

namespace convkit::optim {

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr,
                     double default_weight_decay)
    : name_(std::move(name)), default_lr_(default_lr), default_weight_decay_(default_weight_decay) {
  CK_CHECK(!groups.empty(), name_, ": got no parameter groups");
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::check_group(const ParamGroup& group) const {
  const std::size_t index = groups_.size();
  CK_CHECK(!group.params.empty(), name_, ": parameter group ", index, " is empty");
  std::set<const TensorImpl*> seen;
  for (const auto& g : groups_)
    for (const auto& p : g.params) seen.insert(p.impl());
  for (std::size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    CK_CHECK(p.defined(), name_, ": parameter ", i, " of group ", index, " is undefined");
    CK_CHECK(is_floating(p.dtype()), name_, ": parameter ", i, " of group ", index,
             " must be float32 or float64, got ", p.dtype(), " of shape ", p.shape());
    CK_CHECK(p.is_leaf(), name_, ": parameter ", i, " of group ", index, " (shape ", p.shape(),
             ") is not a leaf tensor; optimizers update leaves (parameters), not computed tensors");
    CK_CHECK(seen.insert(p.impl()).second, name_, ": parameter ", i, " of group ", index, " (shape ",
             p.shape(), ") appears more than once across the parameter groups");
  }
  CK_CHECK(!group.lr || (std::isfinite(*group.lr) && *group.lr >= 0), name_,
           ": the learning rate of group ", index, " must be finite and non-negative, got ", *group.lr);
  CK_CHECK(!group.weight_decay || *group.weight_decay >= 0, name_, ": the weight decay of group ", index,
           " must be non-negative, got ", *group.weight_decay);
}

void Optimizer::add_param_group(ParamGroup group) {
  check_group(group);
  if (!group.lr) group.lr = default_lr_;
  if (!group.weight_decay) group.weight_decay = default_weight_decay_;
  groups_.push_back(std::move(group));
}

const ParamState* Optimizer::state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        Tensor grad = p.grad();
        grad.zero_();
      }
    }
}

namespace {
// State made before Module::to() moved the parameter follows it here.
void follow_param(const Tensor& param, ParamState& state) {
  for (auto& [key, t] : state.tensors) {
    if (!t.defined()) continue;
    if (t.device() != param.device()) t = t.to(param.device());
    if (t.dtype() != param.dtype()) t = t.to(param.dtype());
  }
}
}  // namespace

void Optimizer::update_group(const std::vector<PendingUpdate>& updates, const ParamGroup& group) {
  for (const PendingUpdate& u : updates) update(u.param, u.grad, *u.state, group);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  std::vector<PendingUpdate> updates;
  for (const auto& group : groups_) {
    updates.clear();
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      CK_CHECK(grad.shape() == p.shape() && grad.device() == p.device() && grad.dtype() == p.dtype(), name_,
               ".step: the gradient (", grad.shape(), ", ", grad.dtype(), ", ", grad.device(),
               ") does not match its parameter (", p.shape(), ", ", p.dtype(), ", ", p.device(), ")");
      ParamState& st = state_[p.impl()];
      follow_param(p, st);
      ++st.step;
      updates.push_back({p, grad, &st});
    }
    if (!updates.empty()) update_group(updates, group);
  }
}

StateDict Optimizer::state_dict() const {
  StateDict out;
  const TensorOptions host64 = TensorOptions().dtype(DType::float64);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    out.emplace_back(prefix + "lr", scalar_tensor(*groups_[g].lr, host64));
    out.emplace_back(prefix + "weight_decay", scalar_tensor(*groups_[g].weight_decay, host64));
  }
  std::size_t index = 0;
  for (const auto& group : groups_) {
    for (const Tensor& p : group.params) {
      const ParamState* st = state(p);
      if (st) {
        const std::string prefix = "state." + std::to_string(index) + ".";
        out.emplace_back(prefix + "step",
                         scalar_tensor(static_cast<double>(st->step), TensorOptions().dtype(DType::int64)));
        for (const auto& [key, t] : st->tensors)
          if (t.defined()) out.emplace_back(prefix + key, t.detach());
      }
      ++index;
    }
  }
  return out;
}

namespace {
// Splits "a.b.c" at the first two dots; false when there are fewer.
bool split3(const std::string& key, std::string& a, std::string& b, std::string& c) {
  const auto d1 = key.find('.');
  if (d1 == std::string::npos) return false;
  const auto d2 = key.find('.', d1 + 1);
  if (d2 == std::string::npos) return false;
  a = key.substr(0, d1);
  b = key.substr(d1 + 1, d2 - d1 - 1);
  c = key.substr(d2 + 1);
  return true;
}

bool parse_index(const std::string& text, std::size_t limit, std::size_t& out) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return false;
  out = std::stoul(text);
  return out < limit;
}
}  // namespace

void Optimizer::load_state_dict(const StateDict& dict) {
  std::vector<Tensor> params;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params) params.push_back(p);
  const auto names = state_names();

  struct Loaded {
    std::map<std::size_t, double> lr, weight_decay;
    std::map<std::size_t, ParamState> state;
  } loaded;
  std::vector<std::string> problems;
  for (const auto& [key, t] : dict) {
    std::string head, index_text, field;
    std::size_t i = 0;
    if (!t.defined()) {
      problems.push_back(key + " is an undefined tensor");
    } else if (!split3(key, head, index_text, field)) {
      problems.push_back("unexpected key " + key);
    } else if (head == "param_groups" && parse_index(index_text, groups_.size(), i) &&
               (field == "lr" || field == "weight_decay") && t.numel() == 1) {
      (field == "lr" ? loaded.lr : loaded.weight_decay)[i] = t.item();
    } else if (head == "state" && parse_index(index_text, params.size(), i) && field == "step" &&
               t.numel() == 1) {
      loaded.state[i].step = t.item<std::int64_t>();
    } else if (head == "state" && parse_index(index_text, params.size(), i) &&
               std::find(names.begin(), names.end(), field) != names.end()) {
      if (t.shape() != params[i].shape()) {
        problems.push_back(key + " has shape " + t.shape().str() + " but parameter " + index_text +
                           " has shape " + params[i].shape().str());
      } else {
        loaded.state[i].tensors[field] = t;
      }
    } else {
      problems.push_back("unexpected key " + key + " (" + name_ + " has " + std::to_string(groups_.size()) +
                         " groups, " + std::to_string(params.size()) + " parameters)");
    }
  }
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += "\n  " + p;
    CK_FAIL(name_, ".load_state_dict: the state does not fit this optimizer; nothing was loaded", text);
  }

  NoGradGuard no_grad;
  for (const auto& [g, v] : loaded.lr) groups_[g].lr = v;
  for (const auto& [g, v] : loaded.weight_decay) groups_[g].weight_decay = v;
  state_.clear();
  for (auto& [i, st] : loaded.state) {
    const Tensor& p = params[i];
    for (auto& [key, t] : st.tensors) t = t.to(p.device()).to(p.dtype()).clone();
    state_[p.impl()] = std::move(st);
  }
}

}  // namespace convkit::optim
