#include "convkit/nn/summary.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "convkit/autograd/grad_mode.h"
#include "convkit/core/error.h"
#include "convkit/nn/module.h"
#include "convkit/nn/sequential.h"
#include "convkit/ops/factory.h"

namespace convkit::nn {

ParameterCount count_parameters(const Module& module) {
  ParameterCount count;
  for (const auto& [name, p] : module.named_parameters()) {
    (p.requires_grad() ? count.trainable : count.non_trainable) += p.numel();
  }
  for (const auto& [name, b] : module.named_buffers()) {
    if (is_floating(b.dtype())) count.non_trainable += b.numel();
  }
  return count;
}

namespace {

// 1234567 -> "1,234,567", as Keras prints counts.
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// Each row's output for an input x; walks into Sequentials, whose children run in order.
Tensor walk(Module& module, const std::string& path, const Tensor& x, std::vector<LayerSummary>& rows) {
  if (auto* seq = dynamic_cast<Sequential*>(&module)) {
    Tensor y = x;
    for (const auto& [name, child] : seq->named_children()) {
      y = walk(*child, path.empty() ? name : path + "." + name, y, rows);
    }
    return y;
  }
  Tensor y;
  try {
    y = module.forward(x);
  } catch (const Error& e) {
    CK_FAIL("summary: layer '", path, "' (", module.name(), ") rejects its input of shape ", x.shape(), ": ",
            e.what());
  }
  LayerSummary row;
  row.name = path.empty() ? "(model)" : path;
  row.type = module.name();
  row.output_shape = y.shape();
  if (row.output_shape.rank() > 0) row.output_shape[0] = -1;
  row.params = count_parameters(module);
  rows.push_back(std::move(row));
  return y;
}

}  // namespace

ModelSummary summarize(Module& model, const Shape& input_shape) {
  CK_CHECK(input_shape.rank() >= 1, "summary: input_shape must hold the dims after the batch dim, e.g. [1, 28, 28], got ",
           input_shape);
  for (auto d : input_shape) CK_CHECK(d > 0, "summary: input_shape must be positive, got ", input_shape);

  // The input takes the model's device and dtype, so that a moved model works.
  TensorOptions opts;
  const auto params = model.parameters();
  if (!params.empty()) opts.dtype(params[0].dtype()).device(params[0].device());
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), input_shape.begin(), input_shape.end());

  // Eval mode: BatchNorm must not update its running statistics and Dropout
  // must not draw from the generator. Restore each module's own mode after.
  std::vector<std::pair<Module*, bool>> modes;
  model.apply([&](Module& m) { modes.emplace_back(&m, m.is_training()); });
  model.eval();

  ModelSummary summary;
  summary.input_shape = input_shape;
  try {
    NoGradGuard no_grad;
    walk(model, "", zeros(Shape(dims), opts), summary.layers);
  } catch (...) {
    for (auto& [m, training] : modes) m->train(training);
    throw;
  }
  for (auto& [m, training] : modes) m->train(training);
  summary.params = count_parameters(model);
  return summary;
}

std::string ModelSummary::str() const {
  std::size_t name_width = std::string("Layer (type)").size();
  std::size_t shape_width = std::string("Output Shape").size();
  std::size_t param_width = std::string("Param #").size();
  std::vector<std::string> names, shapes, counts;
  for (const auto& row : layers) {
    names.push_back(row.name + " (" + row.type + ")");
    shapes.push_back(row.output_shape.str());
    counts.push_back(grouped(row.params.total()));
    name_width = std::max(name_width, names.back().size());
    shape_width = std::max(shape_width, shapes.back().size());
    param_width = std::max(param_width, counts.back().size());
  }
  // Keras-like minimum widths, wider when a name or shape needs it.
  name_width = std::max<std::size_t>(name_width + 3, 30);
  shape_width = std::max<std::size_t>(shape_width + 3, 24);
  param_width = std::max<std::size_t>(param_width, 10);
  const std::size_t width = name_width + shape_width + param_width;

  std::ostringstream os;
  auto pad = [](const std::string& s, std::size_t w) { return s + std::string(w - std::min(w, s.size()), ' '); };
  auto rpad = [](const std::string& s, std::size_t w) { return std::string(w - std::min(w, s.size()), ' ') + s; };
  os << "Input shape: " << input_shape.str() << " (per example)\n";
  os << std::string(width, '_') << "\n";
  os << pad("Layer (type)", name_width) << pad("Output Shape", shape_width) << rpad("Param #", param_width) << "\n";
  os << std::string(width, '=') << "\n";
  for (std::size_t i = 0; i < layers.size(); ++i) {
    os << pad(names[i], name_width) << pad(shapes[i], shape_width) << rpad(counts[i], param_width) << "\n";
  }
  os << std::string(width, '=') << "\n";
  os << "Total params: " << grouped(params.total()) << "\n";
  os << "Trainable params: " << grouped(params.trainable) << "\n";
  os << "Non-trainable params: " << grouped(params.non_trainable) << "\n";
  os << std::string(width, '_') << "\n";
  return os.str();
}

std::string summary(Module& model, const Shape& input_shape) { return summarize(model, input_shape).str(); }

}  // namespace convkit::nn
