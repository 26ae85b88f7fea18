#include "weft/graph/place.hpp"

#include <charconv>

#include "weft/util/error.hpp"

namespace weft {

std::string Place::str() const {
  std::string d = kind == gpu ? "gpu:" + std::to_string(device) : device == 0 ? "cpu" : "cpu:" + std::to_string(device);
  return rank == 0 ? d : "rank:" + std::to_string(rank) + "/" + d;
}

namespace {
int parse_int(std::string_view s, std::string_view whole) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw ConfigError("bad place '" + std::string(whole) + "': '" + std::string(s) + "' is not a non-negative integer");
  return v;
}
}  // namespace

Place Place::parse(std::string_view text, int default_rank) {
  Place p;
  p.rank = default_rank;
  std::string_view rest = text;
  if (rest.starts_with("rank:")) {
    auto slash = rest.find('/');
    if (slash == std::string_view::npos)
      throw ConfigError("bad place '" + std::string(text) + "': expected rank:R/cpu or rank:R/gpu:K");
    p.rank = parse_int(rest.substr(5, slash - 5), text);
    rest = rest.substr(slash + 1);
  }
  if (rest == "cpu") {
    p.kind = cpu;
  } else if (rest.starts_with("cpu:")) {  // a second worker group on the same host memory
    p.kind = cpu;
    p.device = parse_int(rest.substr(4), text);
  } else if (rest.starts_with("gpu:")) {
    p.kind = gpu;
    p.device = parse_int(rest.substr(4), text);
  } else if (rest == "gpu") {
    p.kind = gpu;
  } else {
    throw ConfigError("bad place '" + std::string(text) + "': expected cpu, cpu:K, gpu:K, rank:R/cpu or rank:R/gpu:K");
  }
  return p;
}

}  // namespace weft
