#include "convkit/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace convkit::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (const auto& g : optimizer_.param_groups()) base_lrs_.push_back(*g.lr);
}

void LRScheduler::apply() {
  auto& groups = optimizer_.param_groups();
  CK_CHECK(groups.size() == base_lrs_.size(), "LRScheduler: the optimizer has ", groups.size(),
           " parameter groups but the scheduler was built when it had ", base_lrs_.size());
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g].lr = lr_at(base_lrs_[g], last_epoch_);
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

void LRScheduler::set_last_epoch(std::int64_t epoch) {
  CK_CHECK(epoch >= 0, "LRScheduler::set_last_epoch: epoch must be non-negative, got ", epoch);
  last_epoch_ = epoch;
  apply();
}

std::vector<double> LRScheduler::get_lr() const {
  std::vector<double> out;
  for (double base : base_lrs_) out.push_back(lr_at(base, last_epoch_));
  return out;
}

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  CK_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  CK_CHECK(gamma > 0, "StepLR: gamma must be positive, got ", gamma);
  apply();
}

double StepLR::lr_at(double base_lr, std::int64_t epoch) const {
  return base_lr * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  CK_CHECK(gamma > 0, "MultiStepLR: gamma must be positive, got ", gamma);
  for (auto m : milestones_) CK_CHECK(m >= 0, "MultiStepLR: milestones must be non-negative, got ", m);
  std::sort(milestones_.begin(), milestones_.end());
  apply();
}

double MultiStepLR::lr_at(double base_lr, std::int64_t epoch) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base_lr * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  CK_CHECK(gamma > 0, "ExponentialLR: gamma must be positive, got ", gamma);
  apply();
}

double ExponentialLR::lr_at(double base_lr, std::int64_t epoch) const {
  return base_lr * std::pow(gamma_, static_cast<double>(epoch));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  CK_CHECK(t_max > 0, "CosineAnnealingLR: t_max must be positive, got ", t_max);
  CK_CHECK(eta_min >= 0, "CosineAnnealingLR: eta_min must be non-negative, got ", eta_min);
  apply();
}

double CosineAnnealingLR::lr_at(double base_lr, std::int64_t epoch) const {
  const double phase = std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(t_max_);
  return eta_min_ + (base_lr - eta_min_) * (1.0 + std::cos(phase)) / 2.0;
}

LinearWarmup::LinearWarmup(Optimizer& optimizer, std::int64_t warmup_steps, double start_factor,
                           std::unique_ptr<LRScheduler> after)
    : LRScheduler(optimizer), warmup_steps_(warmup_steps), start_factor_(start_factor), after_(std::move(after)) {
  CK_CHECK(warmup_steps > 0, "LinearWarmup: warmup_steps must be positive, got ", warmup_steps);
  CK_CHECK(start_factor > 0 && start_factor <= 1, "LinearWarmup: start_factor must be in (0, 1], got ",
           start_factor);
  if (after_)
    CK_CHECK(after_->base_lrs() == base_lrs(), "LinearWarmup: the wrapped scheduler was built with other "
             "base rates (another optimizer, or after the rates changed); build it on the same optimizer "
             "just before the warmup");
  apply();
}

double LinearWarmup::lr_at(double base_lr, std::int64_t epoch) const {
  if (epoch < warmup_steps_) {
    const double progress = static_cast<double>(epoch) / static_cast<double>(warmup_steps_);
    return base_lr * (start_factor_ + (1.0 - start_factor_) * progress);
  }
  return after_ ? after_->lr_at(base_lr, epoch - warmup_steps_) : base_lr;
}

}  // namespace convkit::optim
