#pragma once
// What `weft granulometry` writes in --output DIR: curve.csv, granulometry.h5, curve.svg.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/output.hpp"

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
};

/// Writes the three files into `stage` and commits it: they appear in the output folder together
/// (the size map, when asked, was written into the stage's granulometry.h5 as slabs finished).
/// `h5`, if given, is the writer of the stage's granulometry.h5 already holding the size map.
void write_outputs(OutputStage& stage, const Report& report, io::H5Writer* h5 = nullptr);
/// The CSV text: header `size,remaining,spectrum`, one row per size.
[[nodiscard]] std::string curve_csv(const Report& report);
/// The SVG text: curve and spectrum over the size, labelled axes.
[[nodiscard]] std::string curve_svg(const Report& report);

}  // namespace weft::granulometry
