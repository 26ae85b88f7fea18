#pragma once
/// How tokens travel along each edge of a mapped graph, known before running it:
///
///   const auto how = weft::edge_transports(graph, mapping, env.cluster());
///   // how[i] carries graph.edges()[i]: local, MPI, NCCL or CUDA IPC
#include <string>
#include <string_view>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft {

/// How an edge carries its tokens between the places of its two tasks.
enum class Transport {
  local,     ///< both tasks on one rank: through memory (copies between host and GPU as needed)
  mpi,       ///< between ranks: host bytes over MPI (GPU arrays staged through pinned host memory)
  nccl,      ///< between the GPUs of two ranks: arrays GPU to GPU through NCCL
  cuda_ipc,  ///< between ranks of one host: GPU arrays copied out of the sender's memory (CUDA IPC)
};
/// "local", "MPI", "NCCL" or "CUDA IPC".
[[nodiscard]] std::string_view transport_name(Transport transport) noexcept;

/// The transport of every edge of `graph` (in the order of graph.edges()) when the Executor runs
/// it with `mapping` on `cluster`: the choice the Executor makes, made without running anything,
/// the same on every rank. Arrays ride NCCL or CUDA IPC when they sit on a GPU; values that are
/// not arrays always cross ranks over MPI. A migratable task counts at its mapped place;
/// `migratable`: the globs of ExecutorOptions::migratable. Throws ConfigError as Executor::run.
[[nodiscard]] std::vector<Transport> edge_transports(const Graph& graph, const Mapping& mapping,
                                                     const Cluster& cluster,
                                                     const std::vector<std::string>& migratable = {});

}  // namespace weft
