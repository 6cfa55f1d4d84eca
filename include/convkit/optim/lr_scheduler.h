#pragma once
// Learning-rate schedulers, matching the closed forms of torch.optim.lr_scheduler.
// A scheduler remembers each group's rate when it was built (base_lr) and, on
// every step(), writes lr_at(base_lr, epoch) into the optimizer's groups:
//   for (epoch ...) { train_one_epoch(opt); sched.step(); }
// "Epoch" is whatever unit step() is called at (epochs or iterations).
#include <cstdint>
#include <memory>
#include <vector>

#include "convkit/optim/optimizer.h"

namespace convkit::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances the epoch counter by one and writes the new rates.
  void step();
  // The rates of the current epoch, one per group (what was last written).
  std::vector<double> get_lr() const;
  std::int64_t last_epoch() const { return last_epoch_; }
  // Jumps to `epoch` (e.g. when resuming) and writes its rates.
  void set_last_epoch(std::int64_t epoch);
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  // The closed form: the rate at `epoch` of a group whose base rate is base_lr.
  virtual double lr_at(double base_lr, std::int64_t epoch) const = 0;

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Writes the current epoch's rates; each concrete constructor ends with it
  // (it calls lr_at, which the base constructor cannot).
  void apply();

 private:
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::int64_t last_epoch_ = 0;
};

// base_lr * gamma^floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);
  double lr_at(double base_lr, std::int64_t epoch) const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

// base_lr * gamma^(number of milestones <= epoch); a milestone listed twice counts twice.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma = 0.1);
  double lr_at(double base_lr, std::int64_t epoch) const override;

 private:
  std::vector<std::int64_t> milestones_;  // sorted
  double gamma_;
};

// base_lr * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(double base_lr, std::int64_t epoch) const override;

 private:
  double gamma_;
};

// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / t_max)) / 2
// (SGDR without restarts; past t_max it follows the cosine back up, as PyTorch's closed form).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min = 0.0);
  double lr_at(double base_lr, std::int64_t epoch) const override;

 private:
  std::int64_t t_max_;
  double eta_min_;
};

// Linear warmup from start_factor * base_lr to base_lr over warmup_steps:
//   epoch < warmup_steps:  base_lr * (start_factor + (1 - start_factor) * epoch / warmup_steps)
// and afterwards either base_lr (standalone; PyTorch's LinearLR(start_factor,
// end_factor = 1, total_iters = warmup_steps)) or the wrapped scheduler from
// its own epoch 0: after.lr_at(base_lr, epoch - warmup_steps) (PyTorch's
// SequentialLR([LinearLR, after], milestones = [warmup_steps])). The wrapped
// scheduler must be built on the same optimizer; the warmup owns and drives it.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, std::int64_t warmup_steps, double start_factor = 1.0 / 3.0,
               std::unique_ptr<LRScheduler> after = nullptr);
  double lr_at(double base_lr, std::int64_t epoch) const override;

 private:
  std::int64_t warmup_steps_;
  double start_factor_;
  std::unique_ptr<LRScheduler> after_;
};

}  // namespace convkit::optim
