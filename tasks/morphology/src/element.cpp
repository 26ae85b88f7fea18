#include "weft/tasks/morphology/element.hpp"

#include "weft/util/error.hpp"

namespace weft::morphology {

Element parse_element(std::string_view text, std::string_view what) {
  if (text == "octahedron") return Element::octahedron;
  if (text == "cube") return Element::cube;
  if (text == "ball") return Element::ball;
  throw ConfigError(std::string(what) + ": unknown structuring element '" + std::string(text) +
                    "' (expected octahedron, cube or ball)");
}

std::string_view element_name(Element e) noexcept {
  switch (e) {
    case Element::octahedron: return "octahedron";
    case Element::cube: return "cube";
    case Element::ball: return "ball";
  }
  return "?";
}

}  // namespace weft::morphology
