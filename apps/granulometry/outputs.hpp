#pragma once
// What `weft granulometry` writes in --output DIR: curve.csv, granulometry.h5, curve.svg.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/graph/task.hpp"

namespace weft::granulometry {

struct Report {
  std::string input;
  std::string element;
  std::string shape;
  double threshold = 0;
  std::string threshold_rule;  ///< "nonzero", "otsu" or "value"
  std::int64_t max_size = -1;  ///< as asked (−1: until nothing remains)
  std::vector<std::int64_t> remaining;
  std::vector<std::int64_t> spectrum;
  Array size_map;              ///< host i32, or empty
};

/// Writes the three files (each under a temporary name, then renamed) into `dir` (created).
void write_outputs(const std::string& dir, const Report& report);
/// The CSV text: header `size,remaining,spectrum`, one row per size.
[[nodiscard]] std::string curve_csv(const Report& report);
/// The SVG text: curve and spectrum over the size, labelled axes.
[[nodiscard]] std::string curve_svg(const Report& report);

/// Sink of the graph: receives the curve, spectrum and size map, fills `report` and writes the files.
class ReportSink final : public Task {
 public:
  ReportSink(std::string name, std::string dir, std::shared_ptr<Report> report, bool size_map);
  In<std::vector<std::int64_t>> remaining = input<std::vector<std::int64_t>>("remaining");
  In<std::vector<std::int64_t>> spectrum = input<std::vector<std::int64_t>>("spectrum");
  In<Array> size_map = input<Array>("size_map", DType::i32);
  void run(Context& ctx) override;

 private:
  std::string dir_;
  std::shared_ptr<Report> report_;
  bool with_size_map_;
};

}  // namespace weft::granulometry
