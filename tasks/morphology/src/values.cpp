// Stored element types, the foreground rule in each type's own precision, packing to bits, Otsu.
#include "weft/tasks/morphology/values.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>  // AVX2, used only where the CPU has it (pack_u8_at_least)
#endif

#include "foreground_rule.hpp"
#include "parallel.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology {
namespace {

constexpr std::array<std::pair<ValueType, std::string_view>, 11> kNames{{{ValueType::b8, "bool"},
                                                                         {ValueType::i8, "i8"},
                                                                         {ValueType::u8, "u8"},
                                                                         {ValueType::i16, "i16"},
                                                                         {ValueType::u16, "u16"},
                                                                         {ValueType::i32, "i32"},
                                                                         {ValueType::u32, "u32"},
                                                                         {ValueType::i64, "i64"},
                                                                         {ValueType::u64, "u64"},
                                                                         {ValueType::f32, "f32"},
                                                                         {ValueType::f64, "f64"}}};

}  // namespace

std::size_t value_size(ValueType t) noexcept {
  switch (t) {
    case ValueType::b8: case ValueType::i8: case ValueType::u8: return 1;
    case ValueType::i16: case ValueType::u16: return 2;
    case ValueType::i32: case ValueType::u32: case ValueType::f32: return 4;
    case ValueType::i64: case ValueType::u64: case ValueType::f64: return 8;
  }
  return 1;
}

std::string_view value_type_name(ValueType t) noexcept {
  for (const auto& [type, name] : kNames)
    if (type == t) return name;
  return "?";
}

std::optional<ValueType> parse_value_type(std::string_view name) noexcept {
  for (const auto& [type, n] : kNames)
    if (n == name) return type;
  return std::nullopt;
}

ValueType value_type_of(DType t, std::string_view what) {
  switch (t) {
    case DType::u8: return ValueType::u8;
    case DType::u16: return ValueType::u16;
    case DType::i32: return ValueType::i32;
    case DType::f32: return ValueType::f32;
    case DType::f64: return ValueType::f64;
    case DType::f16: break;
  }
  throw ConfigError(std::string(what) + ": unsupported dtype " + std::string(dtype_name(t)) +
                    " (expected bool, i8, u8, i16, u16, i32, u32, i64, u64, f32 or f64)");
}

bool exact_in_f32(ValueType t) noexcept {
  return t == ValueType::b8 || t == ValueType::i8 || t == ValueType::u8 || t == ValueType::i16 ||
         t == ValueType::u16 || t == ValueType::f32;
}

Foreground Foreground::parse(std::string_view text, std::string_view what) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    throw ConfigError(std::string(what) + ": expected a finite number, got '" + s + "'");
  Foreground f(v);
  // An integer literal keeps its exact value: a u64 or i64 threshold beyond 2^53 is not rounded.
  std::string_view digits = text;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::uint64_t magnitude = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    if (ec == std::errc() && ptr == digits.data() + digits.size()) {
      f.integral_ = true;
      f.negative_ = negative && magnitude != 0;
      f.magnitude_ = magnitude;
    }
  }
  return f;
}

std::string Foreground::str() const {
  if (!set_) return "";
  if (integral_) return (negative_ ? "-" : "") + std::to_string(magnitude_);
  std::array<char, 64> buf{};
  const auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value_);
  return ec == std::errc() ? std::string(buf.data(), ptr) : std::to_string(value_);
}

Foreground::Cutoff Foreground::cutoff(std::int64_t lowest, std::uint64_t highest) const noexcept {
  // |lowest| as an unsigned magnitude (2^63 for the lowest i64).
  const std::uint64_t below = lowest < 0 ? static_cast<std::uint64_t>(-(lowest + 1)) + 1 : 0;
  bool negative = false;
  std::uint64_t magnitude = 0;
  if (integral_) {
    negative = negative_;
    magnitude = magnitude_;
  } else {
    if (std::isnan(value_)) return {Cutoff::none};
    const double c = std::ceil(value_);  // integers v ≥ value ⇔ v ≥ ⌈value⌉
    if (c >= 18446744073709551616.0) return {Cutoff::none};  // 2^64: above every integer type
    if (c <= -9223372036854775808.0) return {Cutoff::all};   // −2^63: below every one
    negative = c < 0;
    magnitude = static_cast<std::uint64_t>(negative ? -c : c);  // an integral double below 2^64: exact
  }
  if (negative ? magnitude >= below : (magnitude == 0 && below == 0)) return {Cutoff::all};
  if (!negative && magnitude > highest) return {Cutoff::none};
  return {Cutoff::at, negative, magnitude};
}

namespace {

/// Packs keep(v[0..n)) into ⌈n/8⌉ bytes, least significant bit first, the last byte's unused bits 0.
template <class T, class Keep>
void pack_where(const T* v, std::int64_t n, Keep keep, std::uint8_t* out) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    unsigned b = 0;
    for (int k = 0; k < 8; ++k) b |= static_cast<unsigned>(keep(v[i + k])) << k;
    out[i / 8] = static_cast<std::uint8_t>(b);
  }
  if (i < n) {
    unsigned b = 0;
    for (int k = 0; i + k < n; ++k) b |= static_cast<unsigned>(keep(v[i + k])) << k;
    out[i / 8] = static_cast<std::uint8_t>(b);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
/// pack_u8_at_least 32 at a time, for CPUs with AVX2 (chosen at run time: the build targets any
/// x86-64). A 64³ chunk's row piece is two steps. On the development machine 1024³ u8 in 64³
/// chunks were read and packed at 7.4–7.6 GB/s with it, 7.1 GB/s with the SSE2 loop below (one
/// thread; a probe, printed, not kept).
__attribute__((target("avx2"))) std::int64_t pack_u8_at_least_avx2(const std::uint8_t* v, std::int64_t n, unsigned t,
                                                                     std::uint8_t* out) {
  const __m256i threshold = _mm256_set1_epi8(static_cast<char>(t));
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i));
    const auto bits = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(x, threshold), x)));
    std::memcpy(out + i / 8, &bits, sizeof bits);  // least significant bit first, as pack_where
  }
  return i;
}
const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

/// u8 values ≥ t (1 ≤ t ≤ 255): 32 at a time with AVX2, else 16 where SSE2 is there (max(v, t) ==
/// v, then the sign bits).
void pack_u8_at_least(const std::uint8_t* v, std::int64_t n, unsigned t, std::uint8_t* out) {
  std::int64_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (kHaveAvx2) i = pack_u8_at_least_avx2(v, n, t, out);
#endif
#if defined(__SSE2__)
  const __m128i threshold = _mm_set1_epi8(static_cast<char>(t));
  for (; i + 16 <= n; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i));
    const auto bits = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(x, threshold), x)));
    out[i / 8] = static_cast<std::uint8_t>(bits & 0xFFu);
    out[i / 8 + 1] = static_cast<std::uint8_t>(bits >> 8);
  }
#endif
  pack_where(v + i, n - i, [t](std::uint8_t x) { return x >= t; }, out + i / 8);
}

}  // namespace

void pack_foreground(const void* values, ValueType type, std::int64_t n, const Foreground& foreground,
                     std::uint8_t* bits) {
  if (type == ValueType::u8 || type == ValueType::b8) {  // the common masks: the vector loops
    const auto* v = static_cast<const std::uint8_t*>(values);
    if (!foreground) return pack_u8_at_least(v, n, 1, bits);
    const Foreground::Cutoff c = foreground.cutoff(0, 255);
    if (c.kind == Foreground::Cutoff::at) return pack_u8_at_least(v, n, static_cast<unsigned>(c.magnitude), bits);
  }
  detail::with_rule(values, type, foreground, [&](const auto* v, auto keep) { pack_where(v, n, keep, bits); });
}

void values_to_f32(const void* values, ValueType type, std::int64_t n, float* to) {
  if (!exact_in_f32(type))
    throw ConfigError("values of " + std::string(value_type_name(type)) + " are not all floats exactly");
  detail::with_values(values, type, [&](const auto* v) {
    detail::parallel_for(n, [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i) to[i] = static_cast<float>(v[i]);
    });
  });
}

namespace {

/// Index of the last bin of the background class maximising the between-class variance.
int otsu_bin(const std::vector<double>& hist) {
  double total = 0, weighted = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) {
    total += hist[i];
    weighted += static_cast<double>(i) * hist[i];
  }
  double w0 = 0, sum0 = 0, best = -1;
  int best_bin = 0;
  for (std::size_t i = 0; i + 1 < hist.size(); ++i) {
    w0 += hist[i];
    sum0 += static_cast<double>(i) * hist[i];
    const double w1 = total - w0;
    if (w0 <= 0 || w1 <= 0) continue;
    const double m0 = sum0 / w0, m1 = (weighted - sum0) / w1;
    const double between = w0 * w1 * (m0 - m1) * (m0 - m1);
    if (between > best) {
      best = between;
      best_bin = static_cast<int>(i);
    }
  }
  return best_bin;
}

/// Counts of bin(v[i]) over the volume, one histogram per core, summed.
template <class T, class Bin>
std::vector<double> histogram(const T* v, std::int64_t n, int bins, Bin bin) {
  const int workers = detail::worker_count_hint();
  std::vector<std::vector<std::int64_t>> parts(static_cast<std::size_t>(workers));
  detail::parallel_for(n, [&](std::int64_t b, std::int64_t e, int w) {
    auto& h = parts[static_cast<std::size_t>(w)];
    h.assign(static_cast<std::size_t>(bins), 0);
    for (std::int64_t i = b; i < e; ++i) ++h[static_cast<std::size_t>(bin(v[i]))];
  }, std::int64_t{1} << 16);
  std::vector<double> total(static_cast<std::size_t>(bins), 0.0);
  for (const auto& h : parts)
    for (std::size_t i = 0; i < h.size(); ++i) total[i] += static_cast<double>(h[i]);
  return total;
}

/// Otsu over 1024 bins between the extremes, the values taken as doubles (f32 widens exactly).
template <class T>
double otsu_binned(const T* v, std::int64_t n) {
  // The extremes per core, then over the cores (in order, as one pass would meet them).
  const int workers = detail::worker_count_hint();
  std::vector<std::pair<T, T>> ends(static_cast<std::size_t>(workers), {T{}, T{}});
  std::vector<char> used(static_cast<std::size_t>(workers), 0);
  detail::parallel_for(n, [&](std::int64_t b, std::int64_t e, int w) {
    const auto [lo_it, hi_it] = std::minmax_element(v + b, v + e);
    ends[static_cast<std::size_t>(w)] = {*lo_it, *hi_it};
    used[static_cast<std::size_t>(w)] = 1;
  }, std::int64_t{1} << 16);
  double lo = 0, hi = 0;
  bool first = true;
  for (std::size_t w = 0; w < ends.size(); ++w) {
    if (!used[w]) continue;
    const auto a = static_cast<double>(ends[w].first), z = static_cast<double>(ends[w].second);
    if (first || a < lo) lo = a;
    if (first || !(z < hi)) hi = z;
    first = false;
  }
  if (!(hi > lo)) return std::nextafter(hi, std::numeric_limits<double>::infinity());
  constexpr int kBins = 1024;
  const double scale = kBins / (hi - lo);
  const std::vector<double> hist = histogram(v, n, kBins, [&](T x) {
    return std::min(kBins - 1, static_cast<int>((static_cast<double>(x) - lo) * scale));
  });
  return lo + (otsu_bin(hist) + 1) / scale;
}

}  // namespace

double otsu_threshold(const void* values, ValueType type, std::int64_t n) {
  if (n <= 0) throw ConfigError("otsu threshold: empty volume");
  switch (type) {
    case ValueType::b8:
    case ValueType::u8: {
      const auto* v = static_cast<const std::uint8_t*>(values);
      return otsu_bin(histogram(v, n, 256, [](std::uint8_t x) { return x; })) + 1.0;
    }
    case ValueType::i8: {
      const auto* v = static_cast<const std::int8_t*>(values);
      return otsu_bin(histogram(v, n, 256, [](std::int8_t x) { return x + 128; })) + 1.0 - 128;
    }
    case ValueType::u16: {
      const auto* v = static_cast<const std::uint16_t*>(values);
      return otsu_bin(histogram(v, n, 65536, [](std::uint16_t x) { return x; })) + 1.0;
    }
    case ValueType::i16: {
      const auto* v = static_cast<const std::int16_t*>(values);
      return otsu_bin(histogram(v, n, 65536, [](std::int16_t x) { return x + 32768; })) + 1.0 - 32768;
    }
    default: break;
  }
  double t = 0;
  detail::with_values(values, type, [&](const auto* v) { t = otsu_binned(v, n); });
  return t;
}

}  // namespace weft::morphology
