// Rendering sim check reports. See finding.h.
#include "sim/check/finding.h"

#include "sim/check/symbolize.h"

namespace convkit::sim::detail {

Finding& Finding::text(std::string s) {
  pieces_.push_back(Piece{Kind::text, std::move(s), nullptr});
  return *this;
}

Finding& Finding::site(const void* return_address) {
  pieces_.push_back(Piece{Kind::site, {}, return_address});
  return *this;
}

Finding& Finding::function(const void* function) {
  pieces_.push_back(Piece{Kind::function, {}, function});
  return *this;
}

std::string Finding::render() const {
  std::vector<const void*> sites, functions;
  for (const Piece& p : pieces_) {
    if (p.kind == Kind::site) sites.push_back(p.address);
    if (p.kind == Kind::function) functions.push_back(p.address);
  }
  const std::vector<CodeLocation> site_lines = symbolize(sites, true);
  const std::vector<CodeLocation> function_names = symbolize(functions, false);
  std::string out;
  std::size_t next_site = 0, next_function = 0;
  for (const Piece& p : pieces_) {
    switch (p.kind) {
      case Kind::text: out += p.text; break;
      case Kind::site: out += site_lines[next_site++].site(); break;
      case Kind::function: out += function_names[next_function++].function; break;
    }
  }
  return out;
}

}  // namespace convkit::sim::detail
