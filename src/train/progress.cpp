#include "convkit/train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace convkit::train {

namespace {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::string progress_bar(std::int64_t step, std::int64_t total, int width) {
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(step) / static_cast<double>(total), 0.0, 1.0) : 0.0;
  const int done = static_cast<int>(width * fraction);
  std::string bar = "[";
  if (done > 0) {
    bar.append(static_cast<std::size_t>(done - 1), '=');
    bar.push_back(step < total ? '>' : '=');
  }
  bar.append(static_cast<std::size_t>(width - done), '.');
  bar.push_back(']');
  return bar;
}

std::string format_time_per_step(double s) {
  if (s >= 1) return printf_string("%.0fs/step", s);
  if (s >= 1e-3) return printf_string("%.0fms/step", s * 1e3);
  return printf_string("%.0fus/step", s * 1e6);
}

std::string format_eta(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  char buffer[64];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", s / 3600, (s % 3600) / 60, s % 60);
  else if (s >= 60)
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld", s / 60, s % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%llds", s);
  return buffer;
}

std::string format_metrics(const MetricList& metrics) {
  std::string out;
  for (const auto& [name, value] : metrics) {
    const bool tiny = value != 0 && std::fabs(value) < 1e-3;
    out.append(" - ").append(name).append(": ").append(printf_string(tiny ? "%.4e" : "%.4f", value));
  }
  return out;
}

std::string progress_line(std::int64_t step, std::int64_t total, double elapsed,
                          const MetricList& metrics, bool finished, double images_per_sec) {
  // Built with append: GCC 12's -Wrestrict misfires on chains of operator+.
  const std::string total_text = std::to_string(total);
  const std::string count = std::to_string(step);
  std::string line;
  if (count.size() < total_text.size()) line.append(total_text.size() - count.size(), ' ');
  line.append(count).append("/").append(total_text).append(" ").append(progress_bar(step, total));
  const double per_step = step > 0 ? elapsed / static_cast<double>(step) : 0.0;
  if (finished) {
    line.append(" - ").append(printf_string("%.0fs", elapsed)).append(" ");
    line.append(format_time_per_step(per_step));
    if (images_per_sec > 0)
      line.append(" - ").append(printf_string("%.0f", images_per_sec)).append(" images/s");
  } else {
    line.append(" - ETA: ").append(format_eta(per_step * static_cast<double>(total - step)));
  }
  line.append(format_metrics(metrics));
  return line;
}

bool is_terminal(std::FILE* stream) {
  if (stream != stdout && stream != stderr) return false;
  return ::isatty(::fileno(stream)) == 1;
}

ProgressBar::ProgressBar(std::ostream& out, std::int64_t total_steps, bool terminal)
    : out_(out), total_(total_steps), terminal_(terminal) {}

void ProgressBar::draw(const std::string& line) {
  // Pad over what the previous, possibly longer, line left on the screen.
  std::string padded = line;
  if (padded.size() < drawn_width_) padded.append(drawn_width_ - padded.size(), ' ');
  out_ << '\r' << padded << std::flush;
  drawn_width_ = line.size();
}

bool ProgressBar::due(std::int64_t step, double elapsed) const {
  return terminal_ && (last_draw_ < 0 || elapsed - last_draw_ >= 0.1 || step >= total_);
}

void ProgressBar::update(std::int64_t step, double elapsed, const MetricList& metrics) {
  if (!due(step, elapsed)) return;
  last_draw_ = elapsed;
  draw(progress_line(step, total_, elapsed, metrics, false));
}

void ProgressBar::finish(std::int64_t steps, double elapsed, const MetricList& metrics,
                         double images_per_sec) {
  const std::string line = progress_line(steps, total_, elapsed, metrics, true, images_per_sec);
  if (terminal_) {
    draw(line);
    out_ << '\n' << std::flush;
  } else {
    out_ << line << '\n' << std::flush;
  }
  drawn_width_ = 0;
}

}  // namespace convkit::train
