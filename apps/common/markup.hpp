#pragma once
// Text placed inside XML or an HTML-like label (SVG captions, graphviz labels).
#include <string>
#include <string_view>

namespace weft::cli {

/// `text` with &, <, > and " written as entities.
inline std::string xml_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace weft::cli
