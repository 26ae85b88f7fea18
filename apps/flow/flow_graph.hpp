#pragma once
// The flow application's graph: frame-pair source -> OpticalFlow -> flow sink.
#include <memory>
#include <string>
#include <vector>

#include "common/job_check.hpp"
#include "weft/cluster/environment.hpp"
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

/// Where the flow goes: .flo (one pair) or HDF5 /flow [T-1, H, W, 2] (u, v), optional PNG.
struct FlowOutput {
  std::string path;
  std::string png;  ///< Middlebury colour coding of the first pair's flow, empty: none
  [[nodiscard]] bool hdf5() const;
};

/// Checks input and output before any frame is read (files exist, headers agree with their files
/// and with each other, formats, the output can be written) and throws ConfigError otherwise.
/// Returns what the ranks compare (cli::check_job): each input's fingerprint.
/// `gpus`: the pairs may run on GPUs (their memory is checked too).
[[nodiscard]] cli::JobFields check(const FlowInput& in, const FlowOutput& out, bool gpus);

/// frames -> OpticalFlow "flow" -> sink; with replicas > 1 a farm "flow.0" .. "flow.<N-1>" (between
/// "flow.scatter" and "flow.gather") computes the pairs, flows still written in pair order.
[[nodiscard]] Graph build_graph(const FlowInput& in, const FlowOutput& out, const FlowParams& params, bool progress,
                                int replicas = 1);

/// frames -> FlowStrip "flow.0" .. "flow.<strips-1>" between "flow.split" and "flow.join" -> sink:
/// one pair's flow in row strips with halo exchange (weft/tasks/flow/split.hpp).
[[nodiscard]] Graph build_split_graph(const FlowInput& in, const FlowOutput& out, const FlowParams& params,
                                      bool progress, int strips);

/// Strips of --split: `requested` if > 0, else one per GPU of every rank (`use_gpus`) or per rank.
/// Throws ConfigError when the frames have fewer than split_halo_rows() rows per strip.
[[nodiscard]] int split_strips(int requested, const Cluster& cluster, bool use_gpus, const FlowInput& in);

/// Farm size: `requested` if > 0, else one replica per GPU of every rank (`use_gpus`) or per rank,
/// at most one per pair.
[[nodiscard]] int farm_replicas(int requested, const Cluster& cluster, bool use_gpus, std::int64_t pairs);

}  // namespace weft::flow::app
