#pragma once
/// What travels on an edge: an array or a small value. Every kind can cross ranks.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "weft/data/array.hpp"

namespace weft {

using Value = std::variant<std::monostate, Array, std::int64_t, double, std::string,
                           std::vector<double>, std::vector<std::int64_t>>;

/// The port type names used in messages ("array", "int64", ...).
template <class T> struct ValueKind;
template <> struct ValueKind<Array> { static constexpr int index = 1; static constexpr const char* name = "array"; };
template <> struct ValueKind<std::int64_t> { static constexpr int index = 2; static constexpr const char* name = "int64"; };
template <> struct ValueKind<double> { static constexpr int index = 3; static constexpr const char* name = "double"; };
template <> struct ValueKind<std::string> { static constexpr int index = 4; static constexpr const char* name = "string"; };
template <> struct ValueKind<std::vector<double>> { static constexpr int index = 5; static constexpr const char* name = "vector<double>"; };
template <> struct ValueKind<std::vector<std::int64_t>> { static constexpr int index = 6; static constexpr const char* name = "vector<int64>"; };
[[nodiscard]] const char* value_kind_name(int index) noexcept;

}  // namespace weft
