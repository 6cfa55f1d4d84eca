// Checkpoints: bit-exact round trip of every field, the byte layout of
// docs/io.md, atomic replacement, and models rebuilt with no code.
#include <zlib.h>

#include "io/io_testing.h"

namespace convkit {
namespace {

using io_testing::ScratchDir;
using io_testing::same_bits;
using io_testing::throws_with;

// A few Adam steps on random data, so BatchNorm's running statistics and the
// optimizer's moments hold real values.
void train_steps(nn::Module& net, optim::Optimizer& opt, int steps, const Shape& input, std::int64_t classes) {
  std::mt19937_64 rng(testing::kSeed);
  for (int i = 0; i < steps; ++i) {
    const Tensor x = testing::random_tensor(input, rng);
    std::vector<std::int64_t> labels;
    for (std::int64_t n = 0; n < input[0]; ++n) labels.push_back(static_cast<std::int64_t>(rng() % classes));
    opt.zero_grad();
    cross_entropy(net(x), from_vector(labels, {input[0]}, DType::int64)).backward();
    opt.step();
  }
}

TEST(Checkpoint, RoundTripsEveryFieldBitExactly) {
  ScratchDir dir;
  manual_seed(7);
  auto net = models::create("fmnist-cnn-bn");
  optim::Adam opt(net->parameters(), optim::AdamOptions(1e-3).weight_decay(1e-4));
  train_steps(*net, opt, 2, {4, 1, 28, 28}, 10);

  io::Checkpoint ck = io::make_checkpoint(*net, &opt);
  ck.preprocessing = data::Preprocessing::identity().rescale(1.0 / 255).normalize({0.2860}, {0.3530});
  ck.epoch = 3;
  ck.step = 1234;
  ck.set_metadata("zoo", "fmnist-cnn-bn");
  ck.set_metadata("val_accuracy", "0.9123");
  ck.set_metadata("note", "line one\nline two, \xc3\xa9t\xc3\xa9");
  ck.set_metadata("empty", "");
  ck.set_metadata("zoo", "fmnist-cnn-bn");  // replaces, keeps its place
  const std::string path = dir.file("model.ckpt");
  io::save_checkpoint(path, ck);

  const io::Checkpoint back = io::load_checkpoint(path);
  EXPECT_EQ(back.model_spec, net->spec());
  EXPECT_TRUE(same_bits(back.model_state, net->state_dict()));
  ASSERT_TRUE(back.preprocessing.has_value());
  EXPECT_EQ(*back.preprocessing, *ck.preprocessing);
  EXPECT_EQ(back.optimizer_spec, optim::optimizer_spec(opt));
  EXPECT_TRUE(same_bits(back.optimizer_state, opt.state_dict()));
  EXPECT_EQ(back.epoch, 3);
  EXPECT_EQ(back.step, 1234);
  EXPECT_EQ(back.generator.seed, default_generator().seed);
  EXPECT_EQ(back.generator.offset, default_generator().offset);
  EXPECT_EQ(back.metadata, ck.metadata);
  EXPECT_EQ(back.metadata.size(), 4u);
  EXPECT_EQ(back.get_metadata("zoo"), "fmnist-cnn-bn");
  EXPECT_EQ(back.get_metadata("empty"), "");
  EXPECT_FALSE(back.get_metadata("missing").has_value());

  // Rebuilt with no code: same architecture, same bits, same outputs.
  auto rebuilt = io::build_model(back);
  EXPECT_EQ(rebuilt->spec(), net->spec());
  EXPECT_TRUE(same_bits(rebuilt->state_dict(), net->state_dict()));
  net->eval();
  rebuilt->eval();
  std::mt19937_64 rng(testing::kSeed + 1);
  const Tensor x = testing::random_tensor({3, 1, 28, 28}, rng);
  EXPECT_TRUE(same_bits((*rebuilt)(x), (*net)(x)));

  auto opt2 = io::build_optimizer(back, *rebuilt);
  EXPECT_EQ(optim::optimizer_spec(*opt2), optim::optimizer_spec(opt));
  EXPECT_TRUE(same_bits(opt2->state_dict(), opt.state_dict()));
}

TEST(Checkpoint, EveryDtypeAndShape) {
  ScratchDir dir;
  io::Checkpoint ck;
  ck.model_spec = "ReLU()";
  const Tensor matrix = from_vector(std::vector<float>{1, -2.5f, 3e-8f, 4, 5, 6}, {2, 3});
  ck.model_state = {
      {"f32", matrix},
      {"f64", from_vector(std::vector<double>{0.1, -1e300, 5e-324}, {3}, DType::float64)},
      {"i64", from_vector(std::vector<std::int64_t>{-9'000'000'000'000'000'000LL}, {}, DType::int64)},
      {"empty", zeros({0, 3})},
      {"transposed", matrix.t()},  // non-contiguous: saved row-major
  };
  ck.optimizer_spec = "SGD(lr=0.1)";
  ck.optimizer_state = {{"state.0.step", from_vector(std::vector<std::int64_t>{5}, {}, DType::int64)}};
  io::save_checkpoint(dir.file("a.ckpt"), ck);
  const io::Checkpoint back = io::load_checkpoint(dir.file("a.ckpt"));
  EXPECT_TRUE(same_bits(back.model_state, ck.model_state));
  EXPECT_TRUE(same_bits(back.optimizer_state, ck.optimizer_state));
  EXPECT_EQ(back.model_state[1].second.dtype(), DType::float64);
  EXPECT_EQ(back.model_state[2].second.dtype(), DType::int64);
  EXPECT_EQ(back.model_state[2].second.item<std::int64_t>(), -9'000'000'000'000'000'000LL);
  EXPECT_TRUE(back.model_state[4].second.is_contiguous());
  EXPECT_EQ(back.model_state[4].second.to_vector<float>(), matrix.t().to_vector<float>());
  EXPECT_FALSE(back.preprocessing.has_value());
  EXPECT_TRUE(back.metadata.empty());
}

// The layout docs/io.md describes, byte for byte.
TEST(Checkpoint, ByteLayout) {
  ScratchDir dir;
  io::Checkpoint ck;
  ck.model_spec = "ReLU()";
  ck.epoch = 1;
  ck.step = 2;
  ck.generator.seed = 3;
  ck.generator.offset = 4;
  ck.model_state = {{"w", from_vector(std::vector<float>{1.0f}, {1, 1})}};
  io::save_checkpoint(dir.file("a.ckpt"), ck);

  std::vector<unsigned char> want = {0x89, 'C', 'K', 'P', 'T', '\r', '\n', 0x1A, 1, 0, 0, 0};
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) want.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  auto u64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) want.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  auto section = [&](const char* tag, const std::vector<unsigned char>& payload) {
    want.insert(want.end(), tag, tag + 4);
    u64(payload.size());
    want.insert(want.end(), payload.begin(), payload.end());
    u32(static_cast<std::uint32_t>(crc32(0, payload.data(), static_cast<uInt>(payload.size()))));
  };
  section("SPEC", {'R', 'e', 'L', 'U', '(', ')'});
  // name length, name, dtype code 1 (float32), rank 2, dims 1 and 1, then 1.0f.
  section("TNSR", {1, 0, 0, 0, 'w', 1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3F});
  section("TRST", {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0});
  section("META", {0, 0, 0, 0});
  section("END ", {});
  EXPECT_EQ(io_testing::read_bytes(dir.file("a.ckpt")), want);
}

TEST(Checkpoint, SaveReplacesAtomicallyAndLeavesNoTemporaries) {
  ScratchDir dir;
  const std::string path = dir.file("model.ckpt");
  io::Checkpoint a;
  a.model_spec = "ReLU()";
  a.step = 1;
  io::save_checkpoint(path, a);
  io::Checkpoint b = a;
  b.step = 2;
  io::save_checkpoint(path, b);
  EXPECT_EQ(io::load_checkpoint(path).step, 2);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.ckpt"});

  // A save that fails part way (an undefined tensor after a good one) leaves
  // the previous file as it was and no temporary behind.
  io::Checkpoint bad = a;
  bad.step = 3;
  bad.model_state = {{"ok", ones({1000})}, {"broken", Tensor()}};
  EXPECT_TRUE(throws_with([&] { io::save_checkpoint(path, bad); }, {"tensor 'broken' is undefined"}));
  EXPECT_EQ(io::load_checkpoint(path).step, 2);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.ckpt"});
}

TEST(Checkpoint, SaveErrorsNameThePath) {
  ScratchDir dir;
  io::Checkpoint ck;
  const std::string missing = dir.file("no/such/dir/model.ckpt");
  EXPECT_TRUE(throws_with([&] { io::save_checkpoint(missing, ck); },
                          {"save_checkpoint", missing, "cannot create a temporary file", "No such file"}));
  io::Checkpoint dup;
  dup.model_state = {{"w", ones({1})}, {"w", ones({1})}};
  EXPECT_TRUE(throws_with([&] { io::save_checkpoint(dir.file("d.ckpt"), dup); }, {"tensor 'w' appears twice"}));
  io::Checkpoint orphan;
  orphan.optimizer_state = {{"state.0.step", ones({1})}};
  EXPECT_TRUE(throws_with([&] { io::save_checkpoint(dir.file("o.ckpt"), orphan); }, {"optimizer_spec is empty"}));
}

// A module of the user's own, without spec().
struct Affine : nn::Module {
  Tensor w;
  Affine() : Module("Affine") { w = register_parameter("w", ones({3})); }
  Tensor forward(const Tensor& x) override { return x * w; }
};

TEST(Checkpoint, ModelWithoutSpecKeepsItsWeights) {
  ScratchDir dir;
  Affine net;
  io::Checkpoint ck = io::make_checkpoint(net);
  EXPECT_TRUE(ck.model_spec.empty());
  EXPECT_TRUE(ck.optimizer_spec.empty());
  io::save_checkpoint(dir.file("a.ckpt"), ck);
  const io::Checkpoint back = io::load_checkpoint(dir.file("a.ckpt"));
  EXPECT_TRUE(throws_with([&] { io::build_model(back); }, {"no model spec", "load_state_dict"}));
  EXPECT_TRUE(throws_with([&] { io::build_optimizer(back, net); }, {"holds no optimizer"}));
  Affine other;
  other.load_state_dict(back.model_state);
  EXPECT_TRUE(same_bits(other.state_dict(), net.state_dict()));
}

TEST(Checkpoint, BuildingAModelLeavesTheGeneratorAlone) {
  io::Checkpoint ck = io::make_checkpoint(*models::create("fmnist-cnn"));
  manual_seed(99);
  default_generator().reserve(12345);
  const Generator before = default_generator();
  io::build_model(ck);
  EXPECT_EQ(default_generator().seed, before.seed);
  EXPECT_EQ(default_generator().offset, before.offset);

  ck.generator.seed = 5;
  ck.generator.offset = 640;
  io::restore_generator(ck);
  EXPECT_EQ(default_generator().seed, 5u);
  EXPECT_EQ(default_generator().offset, 640u);
}

TEST(Checkpoint, BuildModelRejectsWeightsThatDoNotFit) {
  io::Checkpoint ck = io::make_checkpoint(*models::create("fmnist-cnn"));
  ck.model_state[0].second = zeros({2, 2});
  EXPECT_THROW(io::build_model(ck), Error);
  ck.model_spec = "Conv2d(1, 2, kernel=3)";
  EXPECT_TRUE(throws_with([&] { io::build_model(ck); }, {"missing argument 'kernel_size'"}));
}

}  // namespace
}  // namespace convkit
