#include "cli/train_start.h"

#include <algorithm>
#include <cstdint>

#include "convkit/core/error.h"

namespace convkit::cli {

namespace {

// The module path of a dotted tensor name: "classifier.3.weight" -> "classifier.3".
std::string owner_of(const std::string& key) {
  const std::size_t dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

// Parameters counted (in named_parameters order) through the end of the
// subtree at `target`, or -1 when `target` is not below `m`.
std::int64_t count_through(const nn::Module& m, const std::string& path, const std::string& target,
                           std::int64_t& count) {
  count += static_cast<std::int64_t>(m.named_parameters(false).size());
  for (const auto& [name, child] : m.named_children()) {
    const std::int64_t found = count_through(*child, path.empty() ? name : path + "." + name, target, count);
    if (found >= 0) return found;
  }
  return path == target ? count : -1;
}

bool is_index(const std::string& text) {
  return !text.empty() && text.size() < 10 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void load_start_weights(nn::Module& model, const io::Checkpoint& checkpoint, const std::string& source,
                        HeadMismatch on_head) {
  const StateDict own = model.state_dict();
  const StateDict params = model.named_parameters();
  const std::string head = params.empty() ? std::string() : owner_of(params.back().first);

  std::string head_mismatches;
  bool other_mismatch = false;
  for (const auto& [key, t] : own) {
    const Tensor saved = find_tensor(checkpoint.model_state, key);
    if (!saved.defined() || saved.shape() == t.shape()) continue;
    if (owner_of(key) == head) {
      head_mismatches += (head_mismatches.empty() ? "" : "; ") + key + ": checkpoint " + saved.shape().str() +
                         ", model " + t.shape().str();
    } else {
      other_mismatch = true;
    }
  }

  StateDict state = checkpoint.model_state;
  if (!head_mismatches.empty() && !other_mismatch && on_head != HeadMismatch::refuse) {
    CK_CHECK(on_head == HeadMismatch::replace, source, ": the last layer '", head, "' does not fit this model (",
             head_mismatches, "), as when the data has another number of classes; pass --new-head to start "
             "that layer afresh and load the rest");
    for (auto& [key, t] : state)
      if (owner_of(key) == head) t = find_tensor(own, key);
  }
  try {
    model.load_state_dict(state);
  } catch (const Error& e) {
    // The tool reports an error on one line; load_state_dict lists its problems on several.
    std::string what = e.what();
    for (std::size_t at = what.find("\n  "); at != std::string::npos; at = what.find("\n  ", at))
      what.replace(at, 3, "; ");
    throw Error(source + ": " + what);
  }
}

std::vector<std::string> freeze_through(nn::Module& model, const std::string& layer) {
  std::string target = layer;
  const auto& top = model.named_children();
  std::int64_t count = 0;
  std::int64_t through = count_through(model, "", target, count);
  if (through < 0 && is_index(layer)) {
    const auto index = static_cast<std::size_t>(std::stoll(layer));
    CK_CHECK(index < top.size(), "--freeze ", layer, ": the model has ", top.size(), " top-level layers (0 to ",
             top.empty() ? std::size_t{0} : top.size() - 1, ")");
    target = top[index].first;
    count = 0;
    through = count_through(model, "", target, count);
  }
  if (through < 0) {
    std::string names;
    for (const auto& [name, child] : top) names += (names.empty() ? "" : ", ") + name;
    CK_FAIL("--freeze ", layer, ": the model has no such layer (its top-level layers: ", names,
            "; a nested one is named by its path, as in state_dict keys)");
  }
  const StateDict params = model.named_parameters();
  CK_CHECK(through < static_cast<std::int64_t>(params.size()), "--freeze ", layer,
           ": that would freeze every parameter, leaving nothing to train");
  std::vector<std::string> frozen;
  for (std::int64_t i = 0; i < through; ++i) {
    Tensor p = params[static_cast<std::size_t>(i)].second;
    p.requires_grad_(false);
    frozen.push_back(params[static_cast<std::size_t>(i)].first);
  }
  return frozen;
}

std::vector<Tensor> trainable_parameters(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const Tensor& p : model.parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

}  // namespace convkit::cli
