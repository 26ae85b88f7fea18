#pragma once
/// The values a volume is stored in and the rule that makes them foreground. Files hold more
/// element types than the runtime's DType (boolean masks, i8, i16, u32, i64, u64 from numpy and
/// h5py, reconstructions in int16): they are read in their own type and compared with the
/// threshold there, never converted first, so that no rounding changes which voxels pass.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/data/dtype.hpp"

namespace weft::morphology {

/// A stored element type, in this host's byte order. b8 is a boolean (h5py's enum of int8, numpy's bool).
enum class ValueType : std::uint8_t { b8, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };

[[nodiscard]] std::size_t value_size(ValueType t) noexcept;
/// "bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64".
[[nodiscard]] std::string_view value_type_name(ValueType t) noexcept;
/// The type of that name (value_type_name's); none for any other name.
[[nodiscard]] std::optional<ValueType> parse_value_type(std::string_view name) noexcept;
/// The ValueType of a DType's values (u8, u16, i32, f32, f64); ConfigError naming `what` for f16.
[[nodiscard]] ValueType value_type_of(DType t, std::string_view what = "values");
/// Whether every value of `t` is a float exactly (bool, i8, u8, i16, u16, f32): those may go
/// through filters that work on u8, u16 and f32 (the median) without changing any value.
[[nodiscard]] bool exact_in_f32(ValueType t) noexcept;

/// What counts as foreground: value ≥ a threshold, or any non-zero value when there is none
/// (an empty Foreground, as a default-constructed std::optional). The threshold is compared in
/// the values' own type: against integers as the smallest integer not below it (for a threshold
/// written as an integer, that integer exactly, also beyond 2^53 where a double cannot hold it),
/// against floats as a double (a float widens to a double exactly). NaN values are foreground
/// under the non-zero rule and never pass a threshold.
class Foreground {
 public:
  Foreground() = default;
  Foreground(std::nullopt_t) {}  // NOLINT: an empty rule, as for the std::optional<double> it replaces
  Foreground(double threshold) : set_(true), value_(threshold) {}  // NOLINT: implicit, as above
  /// "" (non-zero) or a finite number; an integer text is kept exactly. ConfigError naming `what`.
  [[nodiscard]] static Foreground parse(std::string_view text, std::string_view what = "--threshold");

  [[nodiscard]] bool has_value() const noexcept { return set_; }
  explicit operator bool() const noexcept { return set_; }
  /// The threshold as a double (the nearest one to an integer beyond 2^53).
  [[nodiscard]] double operator*() const noexcept { return value_; }
  [[nodiscard]] double value() const noexcept { return value_; }
  /// The threshold as written, for reports: the integer exactly, else the double's shortest text.
  [[nodiscard]] std::string str() const;

  /// Integer values v pass when v ≥ cutoff: `all` (every value passes), `none`, or the cutoff as
  /// a signed or unsigned 64-bit integer inside [lowest, highest] of the type.
  struct Cutoff {
    enum Kind : std::uint8_t { all, none, at } kind = all;
    bool negative = false;        ///< at: the cutoff is −magnitude
    std::uint64_t magnitude = 0;  ///< at: |cutoff|
  };
  /// The cutoff for integers in [lowest, highest] (lowest ≤ 0 ≤ highest, of a 64-bit-or-smaller type).
  [[nodiscard]] Cutoff cutoff(std::int64_t lowest, std::uint64_t highest) const noexcept;

 private:
  bool set_ = false;
  double value_ = 0;
  bool integral_ = false;       ///< parsed from an integer text within ±(2^64 − 1)
  bool negative_ = false;
  std::uint64_t magnitude_ = 0;
};

/// Packs foreground(v[0..n)) of `n` values of `type` at `values` into ⌈n/8⌉ bytes at `bits`, least
/// significant bit first, the last byte's unused bits 0 (threshold.hpp's foreground bits).
void pack_foreground(const void* values, ValueType type, std::int64_t n, const Foreground& foreground,
                     std::uint8_t* bits);

/// Otsu's threshold of `n` values of `type`: 256 bins for bool, u8 and i8, 65536 for u16 and
/// i16 (one per value), 1024 between the minimum and the maximum for the others (as doubles);
/// returns the smallest value counted as foreground. ConfigError for no values.
[[nodiscard]] double otsu_threshold(const void* values, ValueType type, std::int64_t n);

/// `n` values of `type` as f32 (exactly: exact_in_f32(type) must hold, ConfigError otherwise).
void values_to_f32(const void* values, ValueType type, std::int64_t n, float* to);

}  // namespace weft::morphology
