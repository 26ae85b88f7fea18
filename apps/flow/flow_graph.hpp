#pragma once
// The flow application's graph: frame-pair source -> OpticalFlow -> flow sink.
#include <memory>
#include <string>
#include <vector>

#include "weft/graph/graph.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow::app {

/// Where frames come from: a list of image files, or an HDF5 video [T,H,W] ("file.h5:/path").
struct FlowInput {
  std::vector<std::string> frames;
  std::string video;
  [[nodiscard]] std::int64_t frame_count() const;
  [[nodiscard]] std::int64_t pair_count() const { return frame_count() - 1; }
};

/// Where the flow goes: .flo (one pair) or HDF5 [T-1, H, 2W] (u, v interleaved), optional PNG.
struct FlowOutput {
  std::string path;
  std::string png;  ///< Middlebury colour coding of the first pair's flow, empty: none
  [[nodiscard]] bool hdf5() const;
};

/// Checks input and output (files exist, sizes agree, formats) and throws ConfigError otherwise.
void check(const FlowInput& in, const FlowOutput& out);

[[nodiscard]] Graph build_graph(const FlowInput& in, const FlowOutput& out, const FlowParams& params, bool progress);

}  // namespace weft::flow::app
