#pragma once
/// Structuring elements of the granulometry and the distance each one is a ball of.
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::morphology {

/// octahedron: L1 ball of radius n (n-fold dilation of the 6-connected cross);
/// cube: L∞ ball (side 2n+1); ball: Euclidean, every integer offset d with |d|² ≤ n².
enum class Element : std::uint8_t { octahedron, cube, ball };

/// Parses "octahedron", "cube" or "ball"; throws ConfigError naming `what` otherwise.
[[nodiscard]] Element parse_element(std::string_view text, std::string_view what = "--element");
[[nodiscard]] std::string_view element_name(Element e) noexcept;

/// The element of size n is {d : distance(d) ≤ radius_limit(n)} in the element's metric
/// (squared Euclidean distances for balls, so that every comparison stays an exact integer).
[[nodiscard]] constexpr std::int64_t radius_limit(Element e, std::int64_t n) noexcept {
  return e == Element::ball ? n * n : n;
}

}  // namespace weft::morphology
