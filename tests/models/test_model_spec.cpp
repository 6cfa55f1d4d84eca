// Model specs: the parser, the writer, and the round trip of every built-in
// module type (spec -> build_module -> the same spec, tree, parameter layout
// and, with the weights copied, the same output).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "models/models_testing.h"

namespace convkit {
namespace {

using models_testing::same_layout;
using models_testing::throws_with;

// ------------------------------------------------------------------ parser

TEST(SpecParser, ReadsEveryValueKindWithPositions) {
  const nn::SpecNode n = nn::parse_spec(
      "T(3, -7, 0.5, -1e-05, true, false, same, [1, [2, 3]], k=inf, m=C(), z=-inf, empty=[])");
  EXPECT_EQ(n.type, "T");
  ASSERT_EQ(n.args.size(), 12u);
  EXPECT_EQ(n.args[0].value.as_int("a"), 3);
  EXPECT_EQ(n.args[0].value.position(), 2u);
  EXPECT_EQ(n.args[1].value.as_int("a"), -7);
  EXPECT_EQ(n.args[2].value.as_real("a"), 0.5);
  EXPECT_EQ(n.args[3].value.as_real("a"), -1e-05);
  EXPECT_TRUE(n.args[4].value.as_bool("a"));
  EXPECT_FALSE(n.args[5].value.as_bool("a"));
  EXPECT_EQ(n.args[6].value.as_word("a"), "same");
  const auto& list = n.args[7].value.as_list("a");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].as_list("b")[1].as_int("c"), 3);
  EXPECT_EQ(n.args[8].key, "k");
  EXPECT_TRUE(std::isinf(n.args[8].value.as_real("k")));
  EXPECT_EQ(n.args[9].value.as_module("m").type, "C");
  EXPECT_EQ(n.args[10].value.as_real("z"), -INFINITY);
  EXPECT_TRUE(n.args[11].value.as_list("empty").empty());
  // An integer reads as a real, not the other way round.
  EXPECT_EQ(n.args[0].value.as_real("a"), 3.0);
  EXPECT_TRUE(throws_with([&] { n.args[2].value.as_int("stride"); }, {"offset 9", "stride must be an integer", "0.5"}));
}

TEST(SpecParser, WhitespaceAndNewlinesAreFree) {
  const nn::SpecNode n = nn::parse_spec("\n  Sequential(\n    Conv2d( 1 ,2 , 3 ),\n\tReLU ( )\n)\n");
  EXPECT_EQ(n.str(), "Sequential(Conv2d(1, 2, 3), ReLU())");
}

TEST(SpecParser, Int64ExtremesAndOverflow) {
  EXPECT_EQ(nn::parse_spec("T(-9223372036854775808)").args[0].value.as_int("x"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(nn::parse_spec("T(9223372036854775807)").args[0].value.as_int("x"), std::numeric_limits<std::int64_t>::max());
  EXPECT_TRUE(throws_with([] { nn::parse_spec("T(9223372036854775808)"); }, {"offset 2", "int64 range"}));
}

TEST(SpecParser, MalformedTextNamesTheOffset) {
  EXPECT_TRUE(throws_with([] { nn::parse_spec(""); }, {"offset 0", "expected a module type"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("ReLU"); }, {"offset 4", "expected '('"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("Conv2d(1, 2 3)"); }, {"offset 12", "expected ','", "found '3'"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("Conv2d(1, 2, 3"); }, {"offset 14", "found the end"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("ReLU() x"); }, {"offset 7", "end of the spec"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("T(1.2.3)"); }, {"offset 2", "malformed number"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("T(3x)"); }, {"offset 2", "malformed number"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("T(a=1, a=2)"); }, {"offset 7", "'a'", "given twice"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("T([1, 2)"); }, {"offset 7", "']'"}));
  EXPECT_TRUE(throws_with([] { nn::parse_spec("T(?)"); }, {"offset 2", "expected a value"}));
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "S(";
  EXPECT_TRUE(throws_with([&] { nn::parse_spec(deep); }, {"nested"}));
}

TEST(SpecWriter, RealsAreShortestRoundTripAndStayReal) {
  EXPECT_EQ(nn::format_spec_real(1.0), "1.0");
  EXPECT_EQ(nn::format_spec_real(0.1), "0.1");
  EXPECT_EQ(nn::format_spec_real(1e-05), "1e-05");
  EXPECT_EQ(nn::format_spec_real(-2.5), "-2.5");
  EXPECT_EQ(nn::format_spec_real(1e20), "1e+20");
  EXPECT_EQ(nn::format_spec_real(INFINITY), "inf");
  EXPECT_EQ(nn::format_spec_real(-INFINITY), "-inf");
  std::mt19937_64 rng(testing::kSeed);
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t bits = rng();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    if (std::isnan(v)) continue;
    const double back = nn::parse_spec("T(" + nn::format_spec_real(v) + ")").args[0].value.as_real("v");
    EXPECT_EQ(std::memcmp(&back, &v, sizeof v), 0) << nn::format_spec_real(v);
  }
}

TEST(SpecWriter, RejectsBadWordsAndKeys) {
  EXPECT_TRUE(throws_with([] { nn::SpecWriter("T").word("two words"); }, {"not a valid word"}));
  EXPECT_TRUE(throws_with([] { nn::SpecWriter("T").word("true"); }, {"not a valid word"}));
  EXPECT_TRUE(throws_with([] { nn::SpecWriter("T").key("1x"); }, {"not a valid option name"}));
}

// ------------------------------------------------------------------ builders

TEST(BuildModule, UnknownTypeListsTheKnownOnes) {
  EXPECT_TRUE(throws_with([] { nn::build_module("Sequential(ReLU(), Conv3d(1, 2, 3))"); },
                          {"offset 19", "unknown module type 'Conv3d'", "Conv2d", "BasicBlock"}));
}

TEST(BuildModule, BadOptionsNameTheTypeOptionAndOffset) {
  EXPECT_TRUE(throws_with([] { nn::build_module("Conv2d(1, 2, 3, strides=2)"); },
                          {"offset 24", "Conv2d", "no option 'strides'"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Conv2d(1, 2)"); }, {"offset 0", "Conv2d", "missing argument 'kernel_size'"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Linear(1, 2, 3)"); }, {"offset 13", "positional argument #3"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Linear(1.5, 2)"); }, {"offset 7", "in_features must be an integer"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Conv2d(1, 2, [3, 3, 3])"); }, {"kernel_size must list 2 integers"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Conv2d(1, 2, 3, padding=full)"); }, {"offset 24", "padding must be same, valid"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Conv2d(1, 2, 3, algo=magic)"); }, {"offset 21", "magic"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Linear(1, 2, init=tf)"); }, {"init must be pytorch or keras"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("BatchNorm2d(4, momentum=fast)"); }, {"momentum must be a number or none"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Linear(1, 2, in_features=1)"); }, {"both by position and by name"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Sequential(3)"); }, {"Sequential child 0 must be a module"}));
  // Constructor checks get the position of the module they reject.
  EXPECT_TRUE(throws_with([] { nn::build_module("Sequential(ReLU(), Conv2d(0, 2, 3))"); },
                          {"offset 19", "Conv2d", "channels must be positive"}));
}

// Issue 22: a spec of a few bytes read from a file asked for 2^62 elements
// (a 4-byte buffer, then a write past it), 2^64 bytes (a null buffer), an
// overflowing weight shape, or gigabytes. Each is refused before allocating.
TEST(BuildModule, SizesThatOverflowAreRefusedNamingTheShape) {
  EXPECT_TRUE(throws_with([] { nn::build_module("BatchNorm1d(4611686018427387905)"); },
                          {"offset 0", "BatchNorm1d", "[4, 4611686018427387905]", "2^62"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Linear(2147483648, 2147483648, bias=false)"); },
                          {"Linear", "weight [2147483648, 2147483648]", "budget"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Sequential(ReLU(), Conv2d(1, 3, 10000000003))"); },
                          {"offset 19", "Conv2d", "weight", "[3, 1, 10000000003, 10000000003]", "2^62"}));
}

TEST(BuildModule, ABudgetBoundsWhatASpecAllocatesAndCanBeRaised) {
  EXPECT_TRUE(throws_with([] { nn::build_module("BatchNorm2d(222222222)"); },
                          {"BatchNorm2d", "[4, 222222222]", "budget of 1073741824 bytes", "max_bytes"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("Linear(100000, 100000)"); }, {"Linear", "weight [100000, 100000]"}));
  // The budget is the whole model's: children of a Sequential share it.
  const std::string two = "Sequential(Linear(100, 100), Linear(100, 100, bias=false))";  // 40400 + 40000 bytes
  EXPECT_NO_THROW(nn::build_module(two, nn::BuildOptions().max_bytes(80400)));
  EXPECT_TRUE(throws_with([&] { nn::build_module(two, nn::BuildOptions().max_bytes(80399)); },
                          {"offset 29", "weight [100, 100]", "39999 bytes left"}));
  EXPECT_TRUE(throws_with([] { nn::build_module("BasicBlock(64, 128)", nn::BuildOptions().max_bytes(1000)); },
                          {"BasicBlock", "conv1.weight [128, 64, 3, 3]"}));
  EXPECT_NO_THROW(nn::build_module("BatchNorm2d(1000)", nn::BuildOptions().max_bytes(16000)));
  EXPECT_THROW(nn::build_module("BatchNorm2d(1000)", nn::BuildOptions().max_bytes(15999)), Error);
}

TEST(BuildModule, ArgumentsByNameEqualArgumentsByPosition) {
  EXPECT_EQ(nn::build_module("Conv2d(in_channels=3, out_channels=8, kernel_size=[3, 3])")->spec(), "Conv2d(3, 8, 3)");
  EXPECT_EQ(nn::build_module("Dropout(p=0.5)")->spec(), "Dropout(0.5)");
  EXPECT_EQ(nn::build_module("Dropout()")->spec(), "Dropout(0.5)");
  EXPECT_EQ(nn::build_module("Conv2d(3, 8, 3, padding=valid)")->spec(), "Conv2d(3, 8, 3)");
  EXPECT_EQ(nn::build_module("Flatten(start_dim=1, end_dim=-1)")->spec(), "Flatten()");
}

TEST(BuildModule, CanonicalTextOfCommonLayers) {
  nn::Conv2dOptions o(3, 32, 3);
  o.stride(2).padding("same").init(nn::Init::keras);
  EXPECT_EQ(nn::Conv2d(o).spec(), "Conv2d(3, 32, 3, stride=2, padding=same, init=keras)");
  EXPECT_EQ(nn::BatchNorm2d(nn::BatchNormOptions(16).eps(1e-3).momentum(0.01)).spec(),
            "BatchNorm2d(16, eps=0.001, momentum=0.01)");
  EXPECT_EQ(nn::MaxPool2d(2).spec(), "MaxPool2d(2)");
  EXPECT_EQ(nn::Linear(nn::LinearOptions(128, 10).bias(false)).spec(), "Linear(128, 10, bias=false)");
}

// A module of a type convkit does not know.
struct Scale : nn::Module {
  double factor;
  explicit Scale(double f) : Module("Scale"), factor(f) {}
  Tensor forward(const Tensor& x) override { return x * factor; }
};
struct SpeccedScale : Scale {
  using Scale::Scale;
  std::string spec() const override { return nn::SpecWriter("SpeccedScale").real(factor).str(); }
};

TEST(BuildModule, OwnTypesNeedSpecAndARegisteredBuilder) {
  Scale plain(2.0);
  EXPECT_TRUE(throws_with([&] { (void)plain.spec(); }, {"'Scale' has no spec", "register_module_type"}));
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<Scale>(2.0));
  EXPECT_TRUE(throws_with([&] { (void)seq->spec(); }, {"'Scale'"}));

  EXPECT_FALSE(nn::is_registered_module_type("SpeccedScale"));
  nn::register_module_type("SpeccedScale", [](nn::SpecArgs& args) {
    const double f = args.require(0, "factor").as_real("factor");
    args.finish();
    return std::make_shared<SpeccedScale>(f);
  });
  EXPECT_TRUE(nn::is_registered_module_type("SpeccedScale"));
  auto built = nn::build_module("Sequential(SpeccedScale(3.0), ReLU())");
  EXPECT_EQ(built->spec(), "Sequential(SpeccedScale(3.0), ReLU())");
  EXPECT_EQ((*built)(from_vector(std::vector<float>{-1, 2}, {2})).to_vector<float>(), (std::vector<float>{0, 6}));
  EXPECT_TRUE(throws_with([] { nn::register_module_type("bad name", [](nn::SpecArgs&) { return nullptr; }); },
                          {"not a valid type name"}));
}

// ------------------------------------------------------------------ round trips

struct Specimen {
  std::shared_ptr<nn::Module> module;
  Shape input;  // empty: not run forward
};

// Built once: ResNet takes a moment to initialise.
const std::vector<Specimen>& specimens() {
  static const std::vector<Specimen> all = [] {
    using namespace nn;
    std::vector<Specimen> s;
    auto add = [&](std::shared_ptr<Module> m, Shape input = {}) { s.push_back({std::move(m), std::move(input)}); };
    add(std::make_shared<Conv2d>(3, 4, 3), {2, 3, 7, 6});
    add(std::make_shared<Conv2d>(Conv2dOptions(4, 6, 3, 5).stride(2, 1).padding(1, 2).dilation(2, 1).groups(2).bias(false)
                                     .algo(ConvAlgo::im2col_gemm).init(Init::keras).workspace_limit(1 << 20)),
        {1, 4, 9, 11});
    add(std::make_shared<Conv2d>(Conv2dOptions(2, 3, 2).padding(0, 1, 2, 3)), {2, 2, 5, 5});
    add(std::make_shared<Conv2d>(Conv2dOptions(2, 3, 3).padding("same").stride(2)), {1, 2, 7, 8});
    add(std::make_shared<Linear>(5, 3), {4, 5});
    add(std::make_shared<Linear>(LinearOptions(5, 3).bias(false).init(Init::keras)), {4, 5});
    add(std::make_shared<BatchNorm1d>(5), {4, 5});
    add(std::make_shared<BatchNorm1d>(BatchNormOptions(3).cumulative_average().eps(1e-3)), {4, 3, 2});
    add(std::make_shared<BatchNorm2d>(BatchNormOptions(3).momentum(0.01).affine(false)), {2, 3, 4, 4});
    add(std::make_shared<BatchNorm2d>(BatchNormOptions(3).track_running_stats(false)), {2, 3, 4, 4});
    add(std::make_shared<Dropout>(), {3, 4});
    add(std::make_shared<Dropout>(0.125), {3, 4});
    add(std::make_shared<MaxPool2d>(2), {1, 2, 6, 6});
    add(std::make_shared<MaxPool2d>(MaxPool2dOptions(3, 2).stride(2, 1).padding(1, 1).ceil_mode()), {1, 2, 7, 6});
    add(std::make_shared<AvgPool2d>(AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false)), {1, 2, 7, 7});
    add(std::make_shared<GlobalAvgPool2d>(), {2, 3, 4, 5});
    add(std::make_shared<Flatten>(), {2, 3, 4});
    add(std::make_shared<Flatten>(0, 1), {2, 3, 4});
    add(std::make_shared<ReLU>(), {5});
    add(std::make_shared<Sigmoid>(), {5});
    add(std::make_shared<Tanh>(), {5});
    add(std::make_shared<SiLU>(), {5});
    add(std::make_shared<LeakyReLU>(), {5});
    add(std::make_shared<LeakyReLU>(0.2), {5});
    add(std::make_shared<ELU>(), {5});
    add(std::make_shared<ELU>(0.5), {5});
    add(std::make_shared<Softmax>(1), {2, 5});
    add(std::make_shared<LogSoftmax>(-1), {2, 5});
    add(std::make_shared<BasicBlock>(4, 4), {2, 4, 6, 6});
    add(std::make_shared<BasicBlock>(4, 8, 2, Init::keras), {2, 4, 6, 6});
    auto seq = std::make_shared<Sequential>();
    seq->push_back(std::make_shared<Conv2d>(1, 2, 3));
    seq->push_back("act", std::make_shared<ReLU>());
    auto inner = std::make_shared<Sequential>();
    inner->push_back(std::make_shared<Flatten>());
    inner->push_back(std::make_shared<Linear>(2 * 3 * 3, 4));
    seq->push_back("head", inner);
    add(seq, {2, 1, 5, 5});
    add(std::make_shared<Sequential>());
    // BasicBlock's outputs are compared above; ResNet's tree and layout here.
    add(resnet18_cifar(7, Init::keras));
    return s;
  }();
  return all;
}

TEST(SpecRoundTrip, EveryRegisteredTypeHasASpecimen) {
  std::set<std::string> covered;
  std::function<void(const nn::SpecNode&)> collect = [&](const nn::SpecNode& n) {
    covered.insert(n.type);
    for (const auto& a : n.args) {
      if (a.value.kind() == nn::SpecValue::Kind::module) collect(a.value.as_module("child"));
    }
  };
  for (const auto& s : specimens()) collect(nn::parse_spec(s.module->spec()));
  for (const auto& type : nn::registered_module_types()) {
    if (type == "SpeccedScale") continue;  // registered by the test above
    EXPECT_TRUE(covered.count(type)) << type << " has no round-trip specimen";
  }
}

TEST(SpecRoundTrip, EveryModuleRebuildsToTheSameTreeAndOutput) {
  std::mt19937_64 rng(testing::kSeed);
  for (const auto& s : specimens()) {
    const std::string text = s.module->spec();
    SCOPED_TRACE(text.substr(0, 200));
    auto built = nn::build_module(text);
    EXPECT_EQ(built->spec(), text);
    EXPECT_EQ(nn::parse_spec(text).str(), text);
    EXPECT_EQ(built->str(), s.module->str());
    EXPECT_TRUE(same_layout(built->state_dict(), s.module->state_dict()));
    if (s.input.empty()) continue;
    built->load_state_dict(s.module->state_dict());
    s.module->eval();
    built->eval();
    const Tensor x = testing::random_tensor(s.input, rng);
    const auto want = (*s.module)(x).to_vector<double>();
    const auto got = (*built)(x).to_vector<double>();
    EXPECT_EQ(got, want);
  }
}

TEST(SpecRoundTrip, ResNetKeepsTorchvisionNames) {
  auto net = nn::build_module(nn::resnet18_cifar(10)->spec());
  EXPECT_TRUE(find_tensor(net->state_dict(), "layer2.0.downsample.0.weight").defined());
  EXPECT_TRUE(find_tensor(net->state_dict(), "layer4.1.bn2.running_var").defined());
  EXPECT_EQ(net->parameter_count(), 11'173'962);
}

}  // namespace
}  // namespace convkit
