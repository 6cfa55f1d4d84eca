// Module::spec() of every built-in module type and, next to each, the builder
// that reads it back (installed in the registry by model_spec.cpp). A writer
// puts the constructor's required arguments by position and every option that
// differs from its default by key; its builder accepts either spelling of each.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/error.h"
#include "convkit/nn/activation.h"
#include "convkit/nn/batchnorm.h"
#include "convkit/nn/conv.h"
#include "convkit/nn/dropout.h"
#include "convkit/nn/flatten.h"
#include "convkit/nn/linear.h"
#include "convkit/nn/model_spec.h"
#include "convkit/nn/module.h"
#include "convkit/nn/pooling.h"
#include "convkit/nn/resnet.h"
#include "convkit/nn/sequential.h"
#include "nn/builtin_module_types.h"

namespace convkit::nn {

std::string Module::spec() const {
  CK_FAIL("Module::spec: module type '", name(),
          "' has no spec; override spec() and register a builder with "
          "nn::register_module_type (see convkit/nn/model_spec.h)");
}

namespace {

const char* init_word(Init init) { return init == Init::keras ? "keras" : "pytorch"; }

Init read_init(SpecArgs& args, const SpecValue* v) {
  if (!v) return Init::pytorch;
  const std::string& w = v->as_word("init");
  if (w == "pytorch") return Init::pytorch;
  if (w == "keras") return Init::keras;
  CK_FAIL(args.where(v), "init must be pytorch or keras, got '", w, "'");
}

std::vector<std::int64_t> pair(const std::array<std::int64_t, 2>& a) { return {a[0], a[1]}; }

// Optional: an integer or a list of `n`, else `fallback`.
std::vector<std::int64_t> ints_or(const SpecValue* v, const std::string& what, std::size_t n,
                                  std::vector<std::int64_t> fallback) {
  return v ? v->as_ints(what, n) : fallback;
}

// ---- Conv2d(in, out, kernel_size, stride=, padding=, dilation=, groups=, bias=, algo=,
//             workspace_limit=, init=)

}  // namespace

std::string Conv2d::spec() const {
  const Conv2dOptions& o = options_;
  const Conv2dOptions defaults(1, 1, 1);
  SpecWriter w("Conv2d");
  w.integer(o.in_channels_).integer(o.out_channels_).ints(pair(o.kernel_size_));
  if (o.stride_ != defaults.stride_) w.key("stride").ints(pair(o.stride_));
  const auto& p = o.padding_;
  if (o.same_) {
    w.key("padding").word("same");
  } else if (p != defaults.padding_) {
    if (p[0] == p[1] && p[2] == p[3]) {
      w.key("padding").ints({p[0], p[2]});
    } else {
      w.key("padding").ints({p[0], p[1], p[2], p[3]}, false);
    }
  }
  if (o.dilation_ != defaults.dilation_) w.key("dilation").ints(pair(o.dilation_));
  if (o.groups_ != defaults.groups_) w.key("groups").integer(o.groups_);
  if (o.bias_ != defaults.bias_) w.key("bias").boolean(o.bias_);
  if (o.algo_ != defaults.algo_) w.key("algo").word(std::string(conv_algo_name(o.algo_)));
  if (o.workspace_limit_ != defaults.workspace_limit_) {
    w.key("workspace_limit").integer(static_cast<std::int64_t>(o.workspace_limit_));
  }
  if (o.init_ != defaults.init_) w.key("init").word(init_word(o.init_));
  return w.str();
}

namespace {

std::shared_ptr<Module> build_conv2d(SpecArgs& args) {
  const auto in = args.require(0, "in_channels").as_int("in_channels");
  const auto out = args.require(1, "out_channels").as_int("out_channels");
  const auto kernel = args.require(2, "kernel_size").as_ints("kernel_size", 2);
  Conv2dOptions o(in, out, kernel[0], kernel[1]);
  const auto stride = ints_or(args.take("stride"), "stride", 2, pair(o.stride_));
  o.stride(stride[0], stride[1]);
  if (const SpecValue* p = args.take("padding")) {
    if (p->kind() == SpecValue::Kind::word) {
      const std::string& mode = p->as_word("padding");
      CK_CHECK(mode == "same" || mode == "valid", args.where(p), "padding must be same, valid, an integer or a list of 2 or 4, got '", mode, "'");
      o.padding(mode);
    } else if (p->kind() == SpecValue::Kind::list && p->as_list("padding").size() == 4) {
      const auto v = p->as_ints("padding", 4);
      o.padding(v[0], v[1], v[2], v[3]);
    } else {
      const auto v = p->as_ints("padding", 2);
      o.padding(v[0], v[1]);
    }
  }
  const auto dilation = ints_or(args.take("dilation"), "dilation", 2, pair(o.dilation_));
  o.dilation(dilation[0], dilation[1]);
  if (const SpecValue* g = args.take("groups")) o.groups(g->as_int("groups"));
  if (const SpecValue* b = args.take("bias")) o.bias(b->as_bool("bias"));
  if (const SpecValue* a = args.take("algo")) {
    try {
      o.algo(parse_conv_algo(a->as_word("algo")));
    } catch (const Error& e) {
      CK_FAIL(args.where(a), e.what());
    }
  }
  if (const SpecValue* ws = args.take("workspace_limit")) {
    const auto bytes = ws->as_int("workspace_limit");
    CK_CHECK(bytes >= 0, args.where(ws), "workspace_limit must be non-negative, got ", bytes);
    o.workspace_limit(static_cast<std::size_t>(bytes));
  }
  o.init(read_init(args, args.take("init")));
  args.finish();
  args.reserve("weight", Shape{out, o.groups_ > 0 ? in / o.groups_ : in, kernel[0], kernel[1]});
  if (o.bias_) args.reserve("bias", Shape{out});
  return std::make_shared<Conv2d>(o);
}

}  // namespace

// ---- Linear(in, out, bias=, init=)

std::string Linear::spec() const {
  SpecWriter w("Linear");
  w.integer(options_.in_features_).integer(options_.out_features_);
  if (!options_.bias_) w.key("bias").boolean(false);
  if (options_.init_ != Init::pytorch) w.key("init").word(init_word(options_.init_));
  return w.str();
}

namespace {
std::shared_ptr<Module> build_linear(SpecArgs& args) {
  LinearOptions o(args.require(0, "in_features").as_int("in_features"),
                  args.require(1, "out_features").as_int("out_features"));
  if (const SpecValue* b = args.take("bias")) o.bias(b->as_bool("bias"));
  o.init(read_init(args, args.take("init")));
  args.finish();
  args.reserve("weight", Shape{o.out_features_, o.in_features_});
  if (o.bias_) args.reserve("bias", Shape{o.out_features_});
  return std::make_shared<Linear>(o);
}
}  // namespace

// ---- BatchNorm1d / BatchNorm2d(num_features, eps=, momentum=<real>|none, affine=,
//      track_running_stats=)

std::string BatchNormBase::spec() const {
  const BatchNormOptions defaults(1);
  SpecWriter w(name());
  w.integer(options_.num_features_);
  if (options_.eps_ != defaults.eps_) w.key("eps").real(options_.eps_);
  if (options_.momentum_ != defaults.momentum_) {
    if (options_.momentum_) {
      w.key("momentum").real(*options_.momentum_);
    } else {
      w.key("momentum").word("none");
    }
  }
  if (options_.affine_ != defaults.affine_) w.key("affine").boolean(options_.affine_);
  if (options_.track_running_stats_ != defaults.track_running_stats_) {
    w.key("track_running_stats").boolean(options_.track_running_stats_);
  }
  return w.str();
}

namespace {
template <typename BN>
std::shared_ptr<Module> build_batchnorm(SpecArgs& args) {
  BatchNormOptions o(args.require(0, "num_features").as_int("num_features"));
  if (const SpecValue* e = args.take("eps")) o.eps(e->as_real("eps"));
  if (const SpecValue* m = args.take("momentum")) {
    if (m->kind() == SpecValue::Kind::word) {
      CK_CHECK(m->as_word("momentum") == "none", args.where(m),
               "momentum must be a number or none (cumulative average), got '", m->as_word("momentum"), "'");
      o.cumulative_average();
    } else {
      o.momentum(m->as_real("momentum"));
    }
  }
  if (const SpecValue* a = args.take("affine")) o.affine(a->as_bool("affine"));
  if (const SpecValue* t = args.take("track_running_stats")) {
    o.track_running_stats(t->as_bool("track_running_stats"));
  }
  args.finish();
  // weight, bias, running_mean and running_var, as many as are kept.
  const std::int64_t vectors = (o.affine_ ? 2 : 0) + (o.track_running_stats_ ? 2 : 0);
  args.reserve("parameters and running statistics", Shape{vectors, o.num_features_});
  return std::make_shared<BN>(o);
}
}  // namespace

// ---- Dropout(p)

std::string Dropout::spec() const { return SpecWriter("Dropout").real(p_).str(); }

namespace {
std::shared_ptr<Module> build_dropout(SpecArgs& args) {
  const SpecValue* p = args.take(0, "p");
  const double prob = p ? p->as_real("p") : 0.5;
  args.finish();
  return std::make_shared<Dropout>(prob);
}
}  // namespace

// ---- MaxPool2d / AvgPool2d(kernel_size, stride=, padding=, ceil_mode=, count_include_pad=)

namespace {

std::string pool_spec(const char* type, const Pool2dParams& o, bool average) {
  const Pool2dParams defaults;
  SpecWriter w(type);
  w.ints(pair(o.kernel_));
  if (o.stride_ != defaults.stride_) w.key("stride").ints(pair(o.stride_));
  if (o.padding_ != defaults.padding_) w.key("padding").ints(pair(o.padding_));
  if (o.ceil_mode_ != defaults.ceil_mode_) w.key("ceil_mode").boolean(o.ceil_mode_);
  if (average && o.count_include_pad_ != defaults.count_include_pad_) {
    w.key("count_include_pad").boolean(o.count_include_pad_);
  }
  return w.str();
}

template <typename Pool>
std::shared_ptr<Module> build_pool(SpecArgs& args, bool average) {
  const auto kernel = args.require(0, "kernel_size").as_ints("kernel_size", 2);
  Pool2dParams o(kernel[0], kernel[1]);
  const auto stride = ints_or(args.take("stride"), "stride", 2, pair(o.stride_));
  o.stride(stride[0], stride[1]);
  const auto padding = ints_or(args.take("padding"), "padding", 2, pair(o.padding_));
  o.padding(padding[0], padding[1]);
  if (const SpecValue* c = args.take("ceil_mode")) o.ceil_mode(c->as_bool("ceil_mode"));
  if (average) {
    if (const SpecValue* c = args.take("count_include_pad")) o.count_include_pad(c->as_bool("count_include_pad"));
  }
  args.finish();
  return std::make_shared<Pool>(o);
}

}  // namespace

std::string MaxPool2d::spec() const { return pool_spec("MaxPool2d", options_, false); }
std::string AvgPool2d::spec() const { return pool_spec("AvgPool2d", options_, true); }
std::string GlobalAvgPool2d::spec() const { return SpecWriter("GlobalAvgPool2d").str(); }

// ---- Flatten(start_dim=1, end_dim=-1)

std::string Flatten::spec() const {
  SpecWriter w("Flatten");
  if (start_dim_ != 1 || end_dim_ != -1) w.integer(start_dim_).integer(end_dim_);
  return w.str();
}

namespace {
std::shared_ptr<Module> build_flatten(SpecArgs& args) {
  const SpecValue* start = args.take(0, "start_dim");
  const SpecValue* end = args.take(1, "end_dim");
  auto m = std::make_shared<Flatten>(start ? start->as_int("start_dim") : 1, end ? end->as_int("end_dim") : -1);
  args.finish();
  return m;
}
}  // namespace

// ---- activations

std::string ReLU::spec() const { return SpecWriter("ReLU").str(); }
std::string Sigmoid::spec() const { return SpecWriter("Sigmoid").str(); }
std::string Tanh::spec() const { return SpecWriter("Tanh").str(); }
std::string SiLU::spec() const { return SpecWriter("SiLU").str(); }

std::string LeakyReLU::spec() const {
  SpecWriter w("LeakyReLU");
  if (negative_slope_ != 0.01) w.real(negative_slope_);
  return w.str();
}

std::string ELU::spec() const {
  SpecWriter w("ELU");
  if (alpha_ != 1.0) w.real(alpha_);
  return w.str();
}

std::string Softmax::spec() const { return SpecWriter("Softmax").integer(dim_).str(); }
std::string LogSoftmax::spec() const { return SpecWriter("LogSoftmax").integer(dim_).str(); }

namespace {

template <typename M>
std::shared_ptr<Module> build_plain(SpecArgs& args) {
  args.finish();
  return std::make_shared<M>();
}

template <typename M>
std::shared_ptr<Module> build_with_real(SpecArgs& args, const char* key, double fallback) {
  const SpecValue* v = args.take(0, key);
  const double value = v ? v->as_real(key) : fallback;
  args.finish();
  return std::make_shared<M>(value);
}

template <typename M>
std::shared_ptr<Module> build_with_dim(SpecArgs& args) {
  const auto dim = args.require(0, "dim").as_int("dim");
  args.finish();
  return std::make_shared<M>(dim);
}

}  // namespace

// ---- Sequential(child, ..., name=child, ...)

std::string Sequential::spec() const {
  SpecWriter w("Sequential");
  const auto& children = named_children();
  for (std::size_t i = 0; i < children.size(); ++i) {
    // A child pushed without a name is called by its position; write a key
    // only for the others, so "layer1.0.conv1.weight" survives a rebuild.
    if (children[i].first != std::to_string(i)) w.key(children[i].first);
    w.child(children[i].second->spec());
  }
  return w.str();
}

namespace {
std::shared_ptr<Module> build_sequential(SpecArgs& args) {
  auto seq = std::make_shared<Sequential>();
  for (const SpecArg* arg : args.take_rest()) {
    const std::string what = arg->key.empty() ? "child " + std::to_string(seq->size()) : "child '" + arg->key + "'";
    const SpecNode& child = arg->value.as_module("Sequential " + what);
    if (arg->key.empty()) {
      seq->push_back(build_module(child));
    } else {
      // Names that are digits but not the position would collide with later
      // positional children; Module's own checks reject them.
      seq->push_back(arg->key, build_module(child));
    }
  }
  return seq;
}
}  // namespace

// ---- BasicBlock(in, out, stride=1, init=pytorch)

std::string BasicBlock::spec() const {
  const Conv2dOptions& o = conv1->options();
  SpecWriter w("BasicBlock");
  w.integer(o.in_channels_).integer(o.out_channels_);
  if (o.stride_[0] != 1) w.key("stride").integer(o.stride_[0]);
  if (o.init_ != Init::pytorch) w.key("init").word(init_word(o.init_));
  return w.str();
}

namespace {
std::shared_ptr<Module> build_basic_block(SpecArgs& args) {
  const auto in = args.require(0, "in_channels").as_int("in_channels");
  const auto out = args.require(1, "out_channels").as_int("out_channels");
  const SpecValue* stride = args.take(2, "stride");
  const Init init = read_init(args, args.take("init"));
  args.finish();
  // Two 3x3 convolutions, a 1x1 shortcut convolution, and three batch norms'
  // four vectors each (the shortcut's only when there is one).
  args.reserve("conv1.weight", Shape{out, in, 3, 3});
  args.reserve("conv2.weight", Shape{out, out, 3, 3});
  args.reserve("downsample.0.weight", Shape{out, in});
  args.reserve("batch norm vectors", Shape{12, out});
  return std::make_shared<BasicBlock>(in, out, stride ? stride->as_int("stride") : 1, init);
}
}  // namespace

void register_builtin_module_types(
    const std::function<void(const std::string& type, ModuleBuilder builder)>& add) {
  add("Conv2d", build_conv2d);
  add("Linear", build_linear);
  add("BatchNorm1d", build_batchnorm<BatchNorm1d>);
  add("BatchNorm2d", build_batchnorm<BatchNorm2d>);
  add("Dropout", build_dropout);
  add("MaxPool2d", [](SpecArgs& a) { return build_pool<MaxPool2d>(a, false); });
  add("AvgPool2d", [](SpecArgs& a) { return build_pool<AvgPool2d>(a, true); });
  add("GlobalAvgPool2d", build_plain<GlobalAvgPool2d>);
  add("Flatten", build_flatten);
  add("ReLU", build_plain<ReLU>);
  add("Sigmoid", build_plain<Sigmoid>);
  add("Tanh", build_plain<Tanh>);
  add("SiLU", build_plain<SiLU>);
  add("LeakyReLU", [](SpecArgs& a) { return build_with_real<LeakyReLU>(a, "negative_slope", 0.01); });
  add("ELU", [](SpecArgs& a) { return build_with_real<ELU>(a, "alpha", 1.0); });
  add("Softmax", build_with_dim<Softmax>);
  add("LogSoftmax", build_with_dim<LogSoftmax>);
  add("Sequential", build_sequential);
  add("BasicBlock", build_basic_block);
}

}  // namespace convkit::nn
