#include "convkit/optim/optimizer_spec.h"

#include <cstdint>

#include "convkit/core/error.h"
#include "convkit/nn/model_spec.h"
#include "convkit/optim/adam.h"
#include "convkit/optim/rmsprop.h"
#include "convkit/optim/sgd.h"

namespace convkit::optim {

namespace {

std::vector<std::int64_t> group_sizes(const Optimizer& optimizer) {
  std::vector<std::int64_t> sizes;
  for (const auto& g : optimizer.param_groups()) sizes.push_back(static_cast<std::int64_t>(g.params.size()));
  return sizes;
}

// Reads one hyper-parameter that must be present: a rebuilt optimizer must not
// silently take a default that the saved one did not have.
double real_option(nn::SpecArgs& args, const char* key) {
  const nn::SpecValue* v = args.take(key);
  CK_CHECK(v != nullptr, args.where(), "missing option '", key, "'");
  return v->as_real(key);
}

bool bool_option(nn::SpecArgs& args, const char* key) {
  const nn::SpecValue* v = args.take(key);
  CK_CHECK(v != nullptr, args.where(), "missing option '", key, "'");
  return v->as_bool(key);
}

// The fused kernel and the composed ops round differently, so a resumed run
// must use the same one. Optional, so that specs written without it still load.
bool fused_option(nn::SpecArgs& args) {
  const nn::SpecValue* v = args.take("fused");
  return v ? v->as_bool("fused") : true;
}

std::vector<ParamGroup> split_groups(nn::SpecArgs& args, std::vector<Tensor> params) {
  const nn::SpecValue* groups = args.take("groups");
  CK_CHECK(groups != nullptr, args.where(), "missing option 'groups'");
  std::vector<ParamGroup> out;
  std::size_t next = 0;
  for (const auto& item : groups->as_list("groups")) {
    const std::int64_t n = item.as_int("a group size");
    CK_CHECK(n >= 0 && static_cast<std::size_t>(n) <= params.size() - next, args.where(&item),
             "the groups hold more parameters than the ", params.size(), " given");
    ParamGroup g;
    g.params.assign(params.begin() + static_cast<std::ptrdiff_t>(next),
                    params.begin() + static_cast<std::ptrdiff_t>(next + static_cast<std::size_t>(n)));
    next += static_cast<std::size_t>(n);
    out.push_back(std::move(g));
  }
  CK_CHECK(next == params.size(), args.where(groups), "the groups hold ", next, " parameters but ", params.size(),
           " were given");
  return out;
}

}  // namespace

std::string optimizer_spec(const Optimizer& optimizer) {
  // AdamW derives from Adam: test it first.
  if (const auto* adamw = dynamic_cast<const AdamW*>(&optimizer)) {
    const AdamOptions& o = adamw->options();
    return nn::SpecWriter("AdamW").key("lr").real(o.lr_).key("betas").reals({o.beta1_, o.beta2_})
        .key("eps").real(o.eps_).key("weight_decay").real(o.weight_decay_).key("fused").boolean(o.fused_)
        .key("groups").ints(group_sizes(optimizer), false).str();
  }
  if (const auto* adam = dynamic_cast<const Adam*>(&optimizer)) {
    const AdamOptions& o = adam->options();
    return nn::SpecWriter("Adam").key("lr").real(o.lr_).key("betas").reals({o.beta1_, o.beta2_})
        .key("eps").real(o.eps_).key("weight_decay").real(o.weight_decay_).key("fused").boolean(o.fused_)
        .key("groups").ints(group_sizes(optimizer), false).str();
  }
  if (const auto* sgd = dynamic_cast<const SGD*>(&optimizer)) {
    const SGDOptions& o = sgd->options();
    return nn::SpecWriter("SGD").key("lr").real(o.lr_).key("momentum").real(o.momentum_)
        .key("dampening").real(o.dampening_).key("weight_decay").real(o.weight_decay_)
        .key("nesterov").boolean(o.nesterov_).key("fused").boolean(o.fused_).key("groups")
        .ints(group_sizes(optimizer), false).str();
  }
  if (const auto* rms = dynamic_cast<const RMSprop*>(&optimizer)) {
    const RMSpropOptions& o = rms->options();
    return nn::SpecWriter("RMSprop").key("lr").real(o.lr_).key("alpha").real(o.alpha_).key("eps").real(o.eps_)
        .key("weight_decay").real(o.weight_decay_).key("momentum").real(o.momentum_)
        .key("centered").boolean(o.centered_).key("groups").ints(group_sizes(optimizer), false).str();
  }
  CK_FAIL("optimizer_spec: optimizer '", optimizer.name(), "' is not one of SGD, Adam, AdamW, RMSprop");
}

std::unique_ptr<Optimizer> build_optimizer(const std::string& spec, std::vector<Tensor> params) {
  const nn::SpecNode node = nn::parse_spec(spec);
  nn::SpecArgs args(node);
  std::unique_ptr<Optimizer> out;
  if (node.type == "Adam" || node.type == "AdamW") {
    AdamOptions o(real_option(args, "lr"));
    const nn::SpecValue* betas = args.take("betas");
    CK_CHECK(betas != nullptr, args.where(), "missing option 'betas'");
    const auto& b = betas->as_list("betas");
    CK_CHECK(b.size() == 2, args.where(betas), "betas must list 2 numbers, got ", betas->str());
    o.betas(b[0].as_real("beta1"), b[1].as_real("beta2"));
    o.eps(real_option(args, "eps")).weight_decay(real_option(args, "weight_decay"));
    o.fused(fused_option(args));
    auto groups = split_groups(args, std::move(params));
    args.finish();
    if (node.type == "AdamW") {
      out = std::make_unique<AdamW>(std::move(groups), o);
    } else {
      out = std::make_unique<Adam>(std::move(groups), o);
    }
  } else if (node.type == "SGD") {
    SGDOptions o(real_option(args, "lr"));
    o.momentum(real_option(args, "momentum")).dampening(real_option(args, "dampening"));
    o.weight_decay(real_option(args, "weight_decay")).nesterov(bool_option(args, "nesterov"));
    o.fused(fused_option(args));
    auto groups = split_groups(args, std::move(params));
    args.finish();
    out = std::make_unique<SGD>(std::move(groups), o);
  } else if (node.type == "RMSprop") {
    RMSpropOptions o(real_option(args, "lr"));
    o.alpha(real_option(args, "alpha")).eps(real_option(args, "eps")).weight_decay(real_option(args, "weight_decay"));
    o.momentum(real_option(args, "momentum")).centered(bool_option(args, "centered"));
    auto groups = split_groups(args, std::move(params));
    args.finish();
    out = std::make_unique<RMSprop>(std::move(groups), o);
  } else {
    CK_FAIL("optimizer spec: at offset ", node.position, ": unknown optimizer type '", node.type,
            "' (known: Adam, AdamW, RMSprop, SGD)");
  }
  return out;
}

}  // namespace convkit::optim
