#include "weft/data/dtype.hpp"

#include <bit>
#include <cstring>

#include "weft/util/error.hpp"

namespace weft {

std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::u8: return 1;
    case DType::u16: return 2;
    case DType::f16: return 2;
    case DType::i32: return 4;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::i32: return "i32";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

DType parse_dtype(std::string_view text, std::string_view what) {
  for (DType t : {DType::u8, DType::u16, DType::i32, DType::f16, DType::f32, DType::f64})
    if (dtype_name(t) == text) return t;
  throw ConfigError(std::string(what) + ": unknown dtype '" + std::string(text) +
                    "' (expected u8, u16, i32, f16, f32 or f64)");
}

// IEEE 754 binary16 <-> binary32, round to nearest even.
float half_to_float(Half h) noexcept {
  std::uint32_t sign = (h.bits & 0x8000u) << 16;
  std::uint32_t exp = (h.bits >> 10) & 0x1f;
  std::uint32_t man = h.bits & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

Half float_to_half(float f) noexcept {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u)  // inf or nan
    return {static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0))};
  if (absx >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // overflow
  if (absx < 0x38800000u) {  // subnormal or zero in half
    if (absx < 0x33000000u) return {sign};
    std::uint32_t man = (absx & 0x7fffffu) | 0x800000u;
    int shift = 113 - static_cast<int>(absx >> 23);
    std::uint32_t half_man = man >> (shift + 13);
    std::uint32_t rem = man & ((1u << (shift + 13)) - 1);
    std::uint32_t halfway = 1u << (shift + 12);
    if (rem > halfway || (rem == halfway && (half_man & 1))) ++half_man;
    return {static_cast<std::uint16_t>(sign | half_man)};
  }
  std::uint32_t e = (absx >> 23) - 112;
  std::uint32_t man = absx & 0x7fffffu;
  std::uint32_t h = (e << 10) | (man >> 13);
  std::uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return {static_cast<std::uint16_t>(sign | h)};
}

}  // namespace weft
