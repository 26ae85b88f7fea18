#pragma once
/// Element types of arrays.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

enum class DType : std::uint8_t { u8, u16, i32, f16, f32, f64 };

[[nodiscard]] std::size_t dtype_size(DType t) noexcept;
[[nodiscard]] std::string_view dtype_name(DType t) noexcept;
/// Parses "u8", "u16", "i32", "f16", "f32", "f64"; throws ConfigError naming `what` otherwise.
[[nodiscard]] DType parse_dtype(std::string_view text, std::string_view what = "dtype");

/// IEEE half precision storage on the host (arithmetic is done in float).
struct Half {
  std::uint16_t bits = 0;
};
[[nodiscard]] float half_to_float(Half h) noexcept;
[[nodiscard]] Half float_to_half(float f) noexcept;

template <class T> struct DTypeOf;
template <> struct DTypeOf<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct DTypeOf<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::f16; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::f32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::f64; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace weft
