#pragma once
// What `weft granulometry` writes in --output DIR: curve.csv, granulometry.h5, curve.svg.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "provenance.hpp"
#include "weft/data/array.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/output.hpp"

namespace weft::granulometry {

struct Report {
  std::string input;
  std::string element;
  std::string shape;
  std::int64_t voxels = 0;     ///< Z · Y · X, the volume fractions' denominator
  double threshold = 0;
  std::string threshold_rule;  ///< "nonzero", "otsu" or "value"
  std::int64_t max_size = -1;  ///< as asked (−1: until nothing remains)
  std::vector<std::int64_t> remaining;
  std::vector<std::int64_t> spectrum;
  VoxelSize voxel;
  Provenance provenance;
};

/// The columns of curve.csv and granulometry.h5, per size n = 0..N:
/// radius n · voxel, diameter (2n + 1) · voxel (the element's extent along an axis), the volume
/// fraction remaining[n] / voxels, and the cumulative distribution 1 − remaining[n + 1] /
/// remaining[0] (the share of the foreground that openings of sizes up to n + 1 remove).
struct Columns {
  std::vector<double> radius, diameter, volume_fraction, cumulative;
};
[[nodiscard]] Columns columns(const Report& report);

/// Writes the three files into `stage` and commits it: they appear in the output folder together
/// (the size map, when asked, was written into the stage's granulometry.h5 as slabs finished).
/// `h5`, if given, is the writer of the stage's granulometry.h5 already holding the size map.
void write_outputs(OutputStage& stage, const Report& report, io::H5Writer* h5 = nullptr);
/// The CSV text: '#' lines (what the columns mean, the provenance), then the header
/// `size,radius_UNIT,diameter_UNIT,remaining,volume_fraction,spectrum,cumulative` and a row per size.
[[nodiscard]] std::string curve_csv(const Report& report);
/// The SVG text: curve and spectrum (negative values below the zero line) over the size,
/// labelled axes, the provenance as a caption.
[[nodiscard]] std::string curve_svg(const Report& report);
/// Writes the root attributes every granulometry.h5 carries (input, element, units, provenance).
void write_attributes(io::H5Writer& h5, const Report& report);

}  // namespace weft::granulometry
