// The Keras-style progress line, character for character.
#include "support/support.h"

#include <sstream>

namespace convkit {
namespace {

TEST(Progress, BarAsKerasDrawsIt) {
  EXPECT_EQ(train::progress_bar(469, 469), "[==============================]");
  EXPECT_EQ(train::progress_bar(0, 469), "[..............................]");
  EXPECT_EQ(train::progress_bar(87, 469), "[====>.........................]");  // 30 * 87/469 = 5.6
  EXPECT_EQ(train::progress_bar(1, 2, 10), "[====>.....]");
}

TEST(Progress, TimesAndMetrics) {
  EXPECT_EQ(train::format_time_per_step(0.045), "45ms/step");
  EXPECT_EQ(train::format_time_per_step(2.2), "2s/step");
  EXPECT_EQ(train::format_time_per_step(0.00031), "310us/step");
  EXPECT_EQ(train::format_eta(17.4), "17s");
  EXPECT_EQ(train::format_eta(185), "3:05");
  EXPECT_EQ(train::format_eta(3727), "1:02:07");
  EXPECT_EQ(train::format_metrics({{"loss", 0.40123}, {"accuracy", 0.85634}}),
            " - loss: 0.4012 - accuracy: 0.8563");
  EXPECT_EQ(train::format_metrics({{"loss", 0.000012}}), " - loss: 1.2000e-05");
}

TEST(Progress, FinalAndRunningLines) {
  EXPECT_EQ(train::progress_line(469, 469, 21.1, {{"loss", 0.4012}, {"accuracy", 0.8563},
                                                  {"val_loss", 0.331}, {"val_accuracy", 0.8801}},
                                 true, 2843.2),
            "469/469 [==============================] - 21s 45ms/step - 2843 images/s - loss: "
            "0.4012 - accuracy: 0.8563 - val_loss: 0.3310 - val_accuracy: 0.8801");
  EXPECT_EQ(train::progress_line(87, 469, 4.0, {{"loss", 0.7021}}, false),
            " 87/469 [====>.........................] - ETA: 18s - loss: 0.7021");
}

TEST(Progress, NotATerminalPrintsOnlyTheFinalLine) {
  std::ostringstream out;
  train::ProgressBar bar(out, 3, /*terminal=*/false);
  bar.update(1, 0.5, {{"loss", 1}});
  bar.update(2, 1.0, {{"loss", 1}});
  bar.finish(3, 1.5, {{"loss", 0.5}}, 0);
  EXPECT_EQ(out.str(), "3/3 [==============================] - 2s 500ms/step - loss: 0.5000\n");
}

TEST(Progress, TerminalRedrawsInPlace) {
  std::ostringstream out;
  train::ProgressBar bar(out, 3, /*terminal=*/true);
  bar.update(1, 0.0, {{"loss", 1.23456}});
  bar.update(2, 0.05, {{"loss", 1}});  // within 0.1 s of the last redraw: skipped
  bar.finish(3, 0.3, {{"loss", 0.5}}, 0);
  const std::string s = out.str();
  EXPECT_EQ(s.substr(0, 1), "\r");
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 2) << s;
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_NE(s.find("1/3 [=========>....................] - ETA: 0s - loss: 1.2346"), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
}

}  // namespace
}  // namespace convkit
