#pragma once
// Thread-local switch for graph recording, as torch.no_grad().
namespace convkit::autograd {

bool grad_enabled();
void set_grad_enabled(bool enabled);

// RAII: disables recording in its scope (optimizer steps, evaluation).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace convkit
namespace convkit { using autograd::NoGradGuard; }
