#pragma once
/// The graph of a job as a picture (`weft graph`, --write-graph): graphviz DOT text, or SVG drawn
/// from it by graphviz's `dot` program.
#include <string>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/transport/transports.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft::cli {

/// DOT text of `graph` as `mapping` places it on `cluster`: a box per task, its input ports above
/// and output ports below, filled with the colour of its place, the boxes of each rank in a frame;
/// an arrow per edge from port to port, labelled and coloured by its transport (`transports`, in
/// the order of graph.edges()); a legend of the places and transports used.
[[nodiscard]] std::string graph_dot(const Graph& graph, const Mapping& mapping, const Cluster& cluster,
                                    const std::vector<Transport>& transports, const std::string& title);

/// Throws ConfigError naming `option` unless `path` ends in .dot or .svg and can be written
/// (check_output), and, for .svg, unless graphviz's `dot` program is on PATH.
void check_graph_output(const std::string& path, const std::string& option);

/// Writes `dot_text` to `path`, whole or not at all (OutputStage): as it is for .dot, drawn by
/// `dot -Tsvg` for .svg. Throws IoError naming `option` when either fails.
void write_graph(const std::string& path, const std::string& dot_text, const std::string& option);

}  // namespace weft::cli
