#pragma once
// The foreground rule as a predicate on each stored type's own values (values.hpp): one
// dispatch on the type, then loops that the compiler sees whole.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "weft/tasks/morphology/values.hpp"

namespace weft::morphology::detail {

/// f(const T* values) with T the C++ type of `type` (bool as std::uint8_t).
template <class F>
void with_values(const void* values, ValueType type, F&& f) {
  switch (type) {
    case ValueType::b8:
    case ValueType::u8: return f(static_cast<const std::uint8_t*>(values));
    case ValueType::i8: return f(static_cast<const std::int8_t*>(values));
    case ValueType::i16: return f(static_cast<const std::int16_t*>(values));
    case ValueType::u16: return f(static_cast<const std::uint16_t*>(values));
    case ValueType::i32: return f(static_cast<const std::int32_t*>(values));
    case ValueType::u32: return f(static_cast<const std::uint32_t*>(values));
    case ValueType::i64: return f(static_cast<const std::int64_t*>(values));
    case ValueType::u64: return f(static_cast<const std::uint64_t*>(values));
    case ValueType::f32: return f(static_cast<const float*>(values));
    case ValueType::f64: return f(static_cast<const double*>(values));
  }
}

/// f(const T* values, keep) with keep(T) the rule: x != 0 without a threshold; else x ≥ the
/// threshold in T's own precision (integers against their cutoff, floats against the double).
template <class F>
void with_rule(const void* values, ValueType type, const Foreground& foreground, F&& f) {
  with_values(values, type, [&](const auto* v) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(v)>>;
    if (!foreground) return f(v, [](T x) { return x != T{}; });
    if constexpr (std::is_floating_point_v<T>) {
      return f(v, [t = foreground.value()](T x) { return static_cast<double>(x) >= t; });
    } else {
      const Foreground::Cutoff c = foreground.cutoff(static_cast<std::int64_t>(std::numeric_limits<T>::lowest()),
                                                     static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
      if (c.kind == Foreground::Cutoff::all) return f(v, [](T) { return true; });
      if (c.kind == Foreground::Cutoff::none) return f(v, [](T) { return false; });
      // Inside [lowest, max] of T: exact in T (−magnitude computed in T's own width, never wrapping).
      const T at = c.negative ? static_cast<T>(-static_cast<std::int64_t>(c.magnitude - 1) - 1) : static_cast<T>(c.magnitude);
      return f(v, [at](T x) { return x >= at; });
    }
  });
}

}  // namespace weft::morphology::detail
