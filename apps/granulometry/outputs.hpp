#pragma once
// What `weft granulometry` writes in --output DIR: curve.csv, granulometry.h5, curve.svg.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/graph/task.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/slabs.hpp"
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

/// Writes the three files into `stage` and commits it: they appear in the output folder together.
/// `h5`, if given, is the writer of the stage's granulometry.h5 already holding the size map.
void write_outputs(OutputStage& stage, const Report& report, io::H5Writer* h5 = nullptr);
/// The CSV text: header `size,remaining,spectrum`, one row per size.
[[nodiscard]] std::string curve_csv(const Report& report);
/// The SVG text: curve and spectrum over the size, labelled axes.
[[nodiscard]] std::string curve_svg(const Report& report);

/// Sink of the graph: receives the summed curve of every round of slabs and each worker's size
/// map of its slab, writes the size map slab by slab into granulometry.h5 in a private folder
/// beside the output (OutputStage) and, after the last round, the curve, the CSV and the SVG, then
/// moves the three into the output folder together. A failed run leaves the folder as it was.
class ReportSink final : public Task {
 public:
  ReportSink(std::string name, std::string dir, std::shared_ptr<Report> report, morphology::SlabPlan plan,
             bool size_map, std::function<void(int round, int rounds)> on_round = {});
  In<std::vector<std::int64_t>> remaining = input<std::vector<std::int64_t>>("remaining");
  In<std::vector<std::int64_t>> spectrum = input<std::vector<std::int64_t>>("spectrum");
  std::vector<In<Array>> size_maps;  ///< one per worker
  void run(Context& ctx) override;

 private:
  std::string dir_;
  std::shared_ptr<Report> report_;
  morphology::SlabPlan plan_;
  bool with_size_map_;
  std::function<void(int, int)> on_round_;
  OutputStage& stage();
  std::unique_ptr<OutputStage> stage_;  ///< declared before h5_: the file closes before its folder goes
  std::unique_ptr<io::H5Writer> h5_;
  int round_ = 0;
};

}  // namespace weft::granulometry
