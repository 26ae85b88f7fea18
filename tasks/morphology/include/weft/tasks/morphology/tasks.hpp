#pragma once
/// Graph tasks of the granulometry: volume → Threshold → Granulometry → (curve, spectrum, size map).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weft/graph/task.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/values.hpp"

namespace weft::morphology {

/// How the foreground is chosen: non-zero voxels, value ≥ a fixed threshold, or Otsu's threshold.
struct ThresholdRule {
  enum Kind : std::uint8_t { nonzero, value, otsu } kind = nonzero;
  double threshold = 0;  ///< value: the number given (as a double); otsu: 0 until resolved
  Foreground exact;      ///< value: the number as parsed (an integer exactly, values.hpp)
  /// Parses "" (non-zero), "otsu" or a finite number; throws ConfigError naming --threshold.
  [[nodiscard]] static ThresholdRule parse(const std::string& text);
  /// The rule for a value (exact for integer texts) or a resolved Otsu threshold; none for nonzero.
  [[nodiscard]] Foreground foreground() const {
    if (kind == nonzero) return {};
    return kind == value && exact ? exact : Foreground(threshold);
  }
};

/// Volume (any dtype but f16) → u8 0/1 mask (CPU). The threshold used is reported through `on_threshold`.
class Threshold final : public Task {
 public:
  Threshold(std::string name, ThresholdRule rule, std::function<void(double)> on_threshold = {});
  In<Array> in = input<Array>("in", std::nullopt, 3);
  Out<Array> out = output<Array>("out", DType::u8, 3);
  void run(Context& ctx) override;

 private:
  ThresholdRule rule_;
  std::function<void(double)> on_threshold_;
};

/// u8 mask → remaining(n), spectrum(n) and the size map (a 1-element i32 array when not asked).
/// CPU and CUDA implementations give identical results.
class Granulometry final : public Task {
 public:
  Granulometry(std::string name, GranulometryOptions options);
  In<Array> in = input<Array>("in", DType::u8, 3);
  Out<std::vector<std::int64_t>> remaining = output<std::vector<std::int64_t>>("remaining");
  Out<std::vector<std::int64_t>> spectrum = output<std::vector<std::int64_t>>("spectrum");
  Out<Array> size_map;  ///< in options.size_map_form
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override { return 100.0; }

 private:
  void put(Context& ctx, GranulometryResult result);
  GranulometryOptions options_;
};

}  // namespace weft::morphology
