#include <convkit/data/dataset.h>
#include <convkit/data/preprocessing.h>

#include <type_traits>

#include "data_files.h"

namespace convkit::testing {
namespace {

using data::Preprocessing;

// Forgetting the preprocessing must not compile into "no preprocessing".
static_assert(!std::is_default_constructible_v<Preprocessing>);

TEST(Preprocessing, TextFormIsSmallAndRoundTripsExactly) {
  Preprocessing p = Preprocessing::identity();
  p.channels(3).resize(32, 24, data::Interpolation::nearest).rescale(1.0 / 255);
  p.normalize({0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616});
  const std::string text = p.to_string();
  EXPECT_EQ(text,
            "convkit-preprocessing 1\nchannels=3\nresize=32x24\ninterpolation=nearest\n"
            "rescale=0.00392156862745098\nmean=0.4914,0.4822,0.4465\nstd=0.247,0.2435,0.2616\n");
  const Preprocessing back = Preprocessing::parse(text);
  EXPECT_TRUE(back == p);
  EXPECT_EQ(back.scale(), 1.0 / 255);  // bit-exact
  EXPECT_EQ(Preprocessing::parse(Preprocessing::identity().to_string()), Preprocessing::identity());
  EXPECT_EQ(Preprocessing::identity().to_string(), "convkit-preprocessing 1\nrescale=1\n");
  // Comments, blank lines and CRLF are tolerated; order does not matter.
  EXPECT_EQ(Preprocessing::parse("# saved by fit\r\nconvkit-preprocessing 1\r\n\r\nmean=0.5\nrescale=0.5\nstd=2\n"),
            Preprocessing::identity().rescale(0.5).normalize({0.5}, {2}));
}

TEST(Preprocessing, ParseErrorsNameTheLine) {
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("rescale=1\n"), "line 1", "convkit-preprocessing 1");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse(""), "empty");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nscale=2\n"), "line 2",
                        "unknown key 'scale'");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nrescale=2\nrescale=3\n"),
                        "line 3", "twice");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nrescale=1/255\n"), "line 2",
                        "'1/255' is not a finite number");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nmean=1,2\n"), "line 2",
                        "together");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nresize=32\n"), "line 2",
                        "HEIGHTxWIDTH");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nchannels=2\n"), "line 2",
                        "1 or 3");
  // Issue 22: 23 bytes of a checkpoint made predict allocate 24 GB.
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nresize=4294967296x4294967296\n"),
                        "line 2", "4294967296x4294967296", "kMaxResizePixels");
  EXPECT_ERROR_MENTIONS(Preprocessing::identity().resize(4097, 4096), "4097x4096", "kMaxResizePixels");
  EXPECT_EQ(Preprocessing::identity().resize(4096, 4096).height(), 4096);
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nmean=1\nstd=0\n"), "line 2",
                        "positive");
  EXPECT_ERROR_MENTIONS(Preprocessing::parse("convkit-preprocessing 1\nrescale\n"), "line 2",
                        "key=value");
}

TEST(Preprocessing, AppliesResizeRescaleNormalizeInOrder) {
  Preprocessing p = Preprocessing::identity();
  p.resize(1, 4).rescale(1.0 / 255).normalize({0.5}, {0.25});
  // [0, 255] -> resize [0, 63.75, 191.25, 255] -> /255 -> [0, .25, .75, 1] -> [-2, -1, 1, 2]
  const Tensor one = from_vector(std::vector<float>{0, 255}, Shape{1, 1, 2});
  EXPECT_TRUE(all_close(p.apply(one), {-2, -1, 1, 2}, 1e-6, 0));
  // A batch, in float64: each image alike, the result float32.
  const Tensor batch = from_vector(std::vector<double>{0, 255, 255, 0}, Shape{2, 1, 1, 2});
  const Tensor out = p.apply(batch);
  EXPECT_EQ(out.shape(), (Shape{2, 1, 1, 4}));
  EXPECT_EQ(out.dtype(), DType::float32);
  EXPECT_TRUE(all_close(out, {-2, -1, 1, 2, 2, 1, -1, -2}, 1e-6, 0));
  EXPECT_EQ(p.output_shape(Shape{1, 28, 28}), (Shape{1, 1, 4}));
  // Grayscale model, RGB input.
  Preprocessing gray = Preprocessing::identity();
  gray.channels(1);
  EXPECT_EQ(gray.apply(ones({3, 2, 2})).shape(), (Shape{1, 2, 2}));
  EXPECT_ERROR_MENTIONS(p.apply(ones({2, 2})), "Preprocessing::apply", "[2, 2]");
  // Identity still returns a new tensor, never a view of the caller's.
  const Tensor raw = ones({1, 2, 2});
  EXPECT_FALSE(Preprocessing::identity().apply(raw).storage() == raw.storage());
  EXPECT_ERROR_MENTIONS(Preprocessing::identity().normalize({1, 2}, {1, 2, 3}), "2 means", "3 stds");
}

class PreprocessingDevice : public ::testing::TestWithParam<Device> {};

TEST_P(PreprocessingDevice, ResultStaysOnTheInputsDevice) {
  const Tensor x = full({2, 3, 4, 4}, 51.0, TensorOptions().device(GetParam()));
  const Tensor y = Preprocessing::identity().rescale(1.0 / 51).apply(x);
  EXPECT_EQ(y.device(), GetParam());
  EXPECT_TRUE(all_close(y, std::vector<double>(96, 1.0), 1e-6, 0));
}

INSTANTIATE_TEST_SUITE_P(Devices, PreprocessingDevice, ::testing::ValuesIn(test_devices()),
                         device_name);

TEST(ChannelStats, MeanAndStdAfterRescale) {
  // Channel 0 holds {0, 2, 4, 6} (x 255), channel 1 holds 255 everywhere.
  const Tensor images = from_vector(std::vector<float>{0, 510, 255, 255, 1020, 1530, 255, 255},
                                    Shape{2, 2, 1, 2});
  const auto ds = data::TensorDataset(images, from_vector(std::vector<std::int64_t>{0, 1}, Shape{2}, DType::int64), 2);
  const data::ChannelStats s = data::channel_stats(ds, Preprocessing::identity().rescale(1.0 / 255));
  ASSERT_EQ(s.mean.size(), 2u);
  EXPECT_NEAR(s.mean[0], 3, 1e-6);  // float32 pixels
  EXPECT_NEAR(s.std[0], std::sqrt(5.0), 1e-6);  // population std of 0, 2, 4, 6
  EXPECT_NEAR(s.mean[1], 1, 1e-6);
  EXPECT_NEAR(s.std[1], 0, 1e-6);
  EXPECT_ERROR_MENTIONS(data::channel_stats(ds, Preprocessing::identity().normalize({0}, {1})),
                        "already normalises");
}

}  // namespace
}  // namespace convkit::testing
