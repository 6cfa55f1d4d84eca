#include "cli/summary_json.h"

#include <array>
#include <map>
#include <vector>

#include "cli/cli_common.h"
#include "convkit/nn/batchnorm.h"
#include "convkit/nn/conv.h"
#include "convkit/nn/dropout.h"
#include "convkit/nn/flatten.h"
#include "convkit/nn/linear.h"
#include "convkit/nn/module.h"
#include "convkit/nn/pooling.h"
#include "convkit/nn/sequential.h"
#include "convkit/nn/summary.h"
#include "convkit/ops/conv.h"

namespace convkit::cli {

namespace {

template <typename Ints>
std::string json_ints(const Ints& values) {
  std::string out = "[";
  for (const auto v : values) out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "]";
}

// Rows are named by their dotted path through Sequentials, as nn::summarize names them.
void index_rows(nn::Module& module, const std::string& path, std::map<std::string, nn::Module*>& rows) {
  if (dynamic_cast<nn::Sequential*>(&module)) {
    for (const auto& [name, child] : module.named_children())
      index_rows(*child, path.empty() ? name : path + "." + name, rows);
    return;
  }
  rows[path.empty() ? "(model)" : path] = &module;
}

void add_pool(const Pool2dParams& o, JsonLine& row) {
  // A stride of 0 means the kernel (PyTorch's default).
  const std::array<std::int64_t, 2> stride{o.stride_[0] ? o.stride_[0] : o.kernel_[0],
                                           o.stride_[1] ? o.stride_[1] : o.kernel_[1]};
  row.add_raw("kernel_size", json_ints(o.kernel_)).add_raw("stride", json_ints(stride));
  row.add_raw("padding", json_ints(o.padding_)).add("ceil_mode", o.ceil_mode_);
}

// The options that make a layer's structure, for the types the zoo uses;
// other types are compared by type, shapes and parameter counts alone.
void add_options(const nn::Module& m, const Shape& input, JsonLine& row) {
  if (const auto* conv = dynamic_cast<const nn::Conv2d*>(&m)) {
    const auto& o = conv->options();
    // The weight shape is all make_conv2d_desc reads of it.
    const Shape weight({o.out_channels_, o.in_channels_ / o.groups_, o.kernel_size_[0], o.kernel_size_[1]});
    const Conv2dDesc d = make_conv2d_desc(input, weight, o.params());
    row.add("in_channels", o.in_channels_).add("out_channels", o.out_channels_);
    row.add_raw("kernel_size", json_ints(o.kernel_size_)).add_raw("stride", json_ints(o.stride_));
    row.add_raw("padding", json_ints(std::vector<std::int64_t>{d.pad_top, d.pad_bottom, d.pad_left, d.pad_right}));
    row.add_raw("dilation", json_ints(o.dilation_)).add("groups", o.groups_).add("bias", o.bias_);
  } else if (const auto* max = dynamic_cast<const nn::MaxPool2d*>(&m)) {
    add_pool(max->options(), row);
  } else if (const auto* avg = dynamic_cast<const nn::AvgPool2d*>(&m)) {
    add_pool(avg->options(), row);
    row.add("count_include_pad", avg->options().count_include_pad_);
  } else if (const auto* drop = dynamic_cast<const nn::Dropout*>(&m)) {
    row.add("p", drop->p());
  } else if (const auto* bn = dynamic_cast<const nn::BatchNormBase*>(&m)) {
    const auto& o = bn->options();
    row.add("num_features", o.num_features_).add("eps", o.eps_);
    if (o.momentum_) {
      row.add("momentum", *o.momentum_);
    } else {
      row.add_raw("momentum", "null");
    }
    row.add("affine", o.affine_).add("track_running_stats", o.track_running_stats_);
  } else if (const auto* linear = dynamic_cast<const nn::Linear*>(&m)) {
    const auto& o = linear->options();
    row.add("in_features", o.in_features_).add("out_features", o.out_features_).add("bias", o.bias_);
  } else if (const auto* flatten = dynamic_cast<const nn::Flatten*>(&m)) {
    row.add("start_dim", flatten->start_dim()).add("end_dim", flatten->end_dim());
  }
}

}  // namespace

std::string summary_json(const std::string& title, nn::Module& model, const Shape& input) {
  const nn::ModelSummary summary = nn::summarize(model, input);
  std::map<std::string, nn::Module*> modules;
  index_rows(model, "", modules);

  std::vector<std::int64_t> in_dims{-1};
  in_dims.insert(in_dims.end(), input.begin(), input.end());
  Shape row_input(in_dims);  // rows run in order, each on the previous one's output
  std::string layers = "[";
  for (const nn::LayerSummary& layer : summary.layers) {
    JsonLine row;
    row.add("name", layer.name).add("type", layer.type);
    row.add_raw("input_shape", json_ints(row_input)).add_raw("output_shape", json_ints(layer.output_shape));
    row.add("trainable", layer.params.trainable).add("non_trainable", layer.params.non_trainable);
    Shape one = row_input;
    one[0] = 1;
    add_options(*modules.at(layer.name), one, row);
    layers += (layers.size() > 1 ? ", " : "") + row.str();
    row_input = layer.output_shape;
  }
  JsonLine out;
  out.add("title", title).add_raw("input", json_ints(input));
  out.add("trainable", summary.params.trainable).add("non_trainable", summary.params.non_trainable);
  out.add_raw("layers", layers + "]");
  return out.str();
}

}  // namespace convkit::cli
