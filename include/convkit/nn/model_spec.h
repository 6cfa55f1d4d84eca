#pragma once
// Model specs: a module tree written as text, so that a checkpoint can rebuild
// its model with no code.
//
//   auto net = models::create("fmnist-cnn");
//   std::string text = net->spec();
//     // Sequential(Conv2d(1, 32, 3, init=keras), ReLU(), MaxPool2d(2), ...)
//   std::shared_ptr<nn::Module> copy = nn::build_module(text);   // same architecture
//   copy->load_state_dict(net->state_dict());                   // same model
//
// Grammar (whitespace, including newlines, is free between tokens):
//   module := TYPE '(' [ arg { ',' arg } ] ')'
//   arg    := [ KEY '=' ] value
//   value  := INTEGER | REAL | true | false | WORD | '[' [ value { ',' value } ] ']' | module
// INTEGER is an optionally signed decimal int64; REAL has a '.', an exponent,
// or is inf / -inf / nan; WORD is an identifier (same, keras, none, ...). A
// module always has its parentheses, even with no arguments: ReLU().
//
// Every built-in module writes its constructor arguments, options that differ
// from their defaults by key (reals in shortest round-trip form, so a rebuilt
// model has bit-identical options), and its children. Sequential lists its
// children in order; a child whose name is not its position is written
// name=Child(...), so resnet18_cifar() keeps "layer1.0.conv1.weight".
// build_module(m.spec())->spec() == m.spec() for every built-in type.
//
// Own module types: override Module::spec() (SpecWriter helps) and register a
// builder under the same type name:
//   nn::register_module_type("TwoLayer", [](nn::SpecArgs& a) {
//     auto hidden = a.require(0, "hidden").as_int();
//     a.finish();
//     return std::make_shared<TwoLayer>(hidden);
//   });
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convkit/core/dtype.h"
#include "convkit/core/shape.h"

namespace convkit::nn {

class Module;
struct SpecNode;

// One parsed value. `position` is its byte offset in the spec text, for errors.
class SpecValue {
 public:
  enum class Kind { integer, real, boolean, word, list, module };

  static SpecValue integer(std::int64_t v, std::size_t position = 0);
  static SpecValue real(double v, std::size_t position = 0);
  static SpecValue boolean(bool v, std::size_t position = 0);
  static SpecValue word(std::string v, std::size_t position = 0);
  static SpecValue list(std::vector<SpecValue> items, std::size_t position = 0);
  static SpecValue module(SpecNode node, std::size_t position = 0);

  Kind kind() const { return kind_; }
  std::size_t position() const { return position_; }
  // Typed access; each throws Error naming `what`, the expected and the actual
  // kind and the position. as_real accepts integers too.
  std::int64_t as_int(const std::string& what) const;
  double as_real(const std::string& what) const;
  bool as_bool(const std::string& what) const;
  const std::string& as_word(const std::string& what) const;
  const std::vector<SpecValue>& as_list(const std::string& what) const;
  const SpecNode& as_module(const std::string& what) const;
  // An integer, or a list of `n` integers; a single integer is repeated n
  // times (kernel_size=3 means [3, 3]).
  std::vector<std::int64_t> as_ints(const std::string& what, std::size_t n) const;

  // Canonical text of this value (modules as their canonical spec).
  std::string str() const;

 private:
  Kind kind_ = Kind::integer;
  std::size_t position_ = 0;
  std::int64_t int_ = 0;
  double real_ = 0;
  bool bool_ = false;
  std::string word_;
  std::vector<SpecValue> items_;
  std::shared_ptr<const SpecNode> module_;
};

struct SpecArg {
  std::string key;  // empty for a positional argument
  SpecValue value;
};

// One parsed module: its type name and arguments in the order written.
struct SpecNode {
  std::string type;
  std::vector<SpecArg> args;
  std::size_t position = 0;  // byte offset of the type name in the text
  // Canonical text: build_module of it gives the same tree.
  std::string str() const;
};

// Parses a spec. Errors give the byte offset and what was expected there,
// e.g. "model spec: at offset 17: expected ')' or ',' after an argument, found 'x'".
SpecNode parse_spec(const std::string& text);

// The arguments of one node as a builder reads them. Every argument must be
// taken exactly once; finish() throws naming the first one that was not
// (an unknown option) with its position.
class SpecArgs {
 public:
  explicit SpecArgs(const SpecNode& node);
  const SpecNode& node() const { return node_; }

  // The argument given at positional `index` or by `key` (either spelling,
  // not both), or null when absent.
  const SpecValue* take(std::size_t index, const std::string& key);
  // Keyword only.
  const SpecValue* take(const std::string& key);
  // As take, but throws naming the type and the missing argument.
  const SpecValue& require(std::size_t index, const std::string& key);
  // Every positional argument not taken yet, in order (for containers).
  std::vector<const SpecArg*> take_rest();
  // Throws on any argument not taken: "model spec: at offset 31: Conv2d has no
  // option 'strides'". Call after taking everything the builder knows.
  void finish() const;
  // Error text prefixed with this node's type and position.
  std::string where(const SpecValue* value = nullptr) const;
  // Counts a tensor the module will allocate against the build's byte
  // budget (BuildOptions::max_bytes), before it is allocated: a spec of a
  // few bytes must not take gigabytes. Throws naming `what`, its shape and
  // the budget. Shapes with a negative dimension are left to the
  // constructor's own checks. Builders of own types should call it too.
  void reserve(const std::string& what, const Shape& shape, DType dtype = DType::float32);

 private:
  const SpecNode& node_;
  std::vector<bool> taken_;
};

// Builds the module a node describes, via the registry. Throws naming unknown
// types (and listing the known ones), bad or missing options, with positions.
using ModuleBuilder = std::function<std::shared_ptr<Module>(SpecArgs& args)>;
void register_module_type(const std::string& type, ModuleBuilder builder);
bool is_registered_module_type(const std::string& type);
std::vector<std::string> registered_module_types();  // sorted

// Limits on what building a spec may allocate, in the libtorch style:
//   nn::build_module(text, nn::BuildOptions().max_bytes(std::uint64_t{8} << 30));
// The default, 1 GiB of parameters and buffers, holds every zoo model many
// times over (VGG-16 would take 528 MB).
struct BuildOptions {
  BuildOptions& max_bytes(std::uint64_t bytes) { max_bytes_ = bytes; return *this; }

  std::uint64_t max_bytes_ = std::uint64_t{1} << 30;
};

// A build_module called by a builder (a container building its children)
// shares the budget of the outermost call, whose options count.
std::shared_ptr<Module> build_module(const SpecNode& node, const BuildOptions& options = {});
std::shared_ptr<Module> build_module(const std::string& spec, const BuildOptions& options = {});
// The spec in the text file `path`, where '#' starts a comment that runs to
// the end of its line. Errors name the file, line and column, as a compiler's
// do: "net.spec:3:5: Conv2d: has no option 'strides'".
std::shared_ptr<Module> build_module_from_file(const std::string& path, const BuildOptions& options = {});

// Writes one module's spec, for Module::spec() overrides:
//   return SpecWriter("Conv2d").integer(in).integer(out).ints(kernel)
//       .key("bias").boolean(false).str();
class SpecWriter {
 public:
  explicit SpecWriter(std::string type);
  SpecWriter& integer(std::int64_t v);
  SpecWriter& real(double v);
  SpecWriter& boolean(bool v);
  // An integer list, written as a single integer when all entries are equal
  // and `collapse` is set (kernel_size 3 rather than [3, 3]).
  SpecWriter& ints(const std::vector<std::int64_t>& v, bool collapse = true);
  SpecWriter& reals(const std::vector<double>& v);
  SpecWriter& word(const std::string& v);
  // A module's spec, pasted as it is.
  SpecWriter& child(const std::string& spec);
  // The next value written is keyword `key`: .key("stride").integer(2).
  SpecWriter& key(const std::string& key);
  std::string str() const;

 private:
  void begin_arg();
  std::string type_;
  std::string args_;
  std::string pending_key_;
};

// The canonical text of a real in spec syntax: shortest round trip, always
// with a '.' or exponent ("1.0", "1e-05", "inf").
std::string format_spec_real(double v);

}  // namespace convkit::nn
