#pragma once
// The Keras-style progress line fit() prints for each epoch:
//
//   Epoch 1/5
//   469/469 [==============================] - 21s 45ms/step - 2843 images/s - loss: 0.4012 - accuracy: 0.8563 - val_loss: 0.3310 - val_accuracy: 0.8801
//
// On a terminal the line is redrawn in place ('\r') while the epoch runs, at
// most every 0.1 s, showing an ETA:
//    87/469 [=====>........................] - ETA: 17s - loss: 0.7021 - accuracy: 0.7513
// When the output is not a terminal (a log file, a pipe) only the final line
// of each epoch is printed, so logs carry one line per epoch.
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace convkit::train {

using MetricList = std::vector<std::pair<std::string, double>>;

// The bar for `step` of `total` steps: 30 characters, '=' done, '>' the head,
// '.' to go, exactly as Keras draws it.
std::string progress_bar(std::int64_t step, std::int64_t total, int width = 30);
// "45ms/step", "2s/step", "310us/step".
std::string format_time_per_step(double seconds_per_step);
// "17s", "3:05", "1:02:07".
std::string format_eta(double seconds);
// " - loss: 0.4012 - accuracy: 0.8563" (values below 1e-3 in scientific form).
std::string format_metrics(const MetricList& metrics);

// A line as the bar shows it. `finished` selects the final form (elapsed time
// and time per step, and images/s when images_per_sec > 0) over the running
// form (ETA extrapolated from elapsed_seconds).
std::string progress_line(std::int64_t step, std::int64_t total, double elapsed_seconds,
                          const MetricList& metrics, bool finished, double images_per_sec = 0);

// True when `stream` is stdout or stderr and that descriptor is a terminal.
bool is_terminal(std::FILE* stream);

class ProgressBar {
 public:
  // terminal: redraw in place while running; otherwise print the final line only.
  ProgressBar(std::ostream& out, std::int64_t total_steps, bool terminal);
  // Whether update() would redraw now: on a terminal, when 0.1 s have passed
  // since the last redraw or `step` is the last. Lets the caller skip
  // gathering metrics (a device sync) for a line that would not be drawn.
  bool due(std::int64_t step, double elapsed_seconds) const;
  // After `step` steps: redraws when due().
  void update(std::int64_t step, double elapsed_seconds, const MetricList& metrics);
  // The final line (replacing the running one on a terminal), then a newline.
  void finish(std::int64_t steps, double elapsed_seconds, const MetricList& metrics,
              double images_per_sec);

 private:
  void draw(const std::string& line);
  std::ostream& out_;
  std::int64_t total_;
  bool terminal_;
  double last_draw_ = -1;
  std::size_t drawn_width_ = 0;
};

}  // namespace convkit::train
