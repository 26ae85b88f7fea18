#pragma once
// Internal: how each link of a run carries its tokens between ranks. Every rank derives the same
// choice from the same plan and cluster, so the executor needs no exchange to agree on it, and
// weft::edge_transports (weft/transport/transports.hpp) shows it without running anything.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <vector>

#include "weft/cluster/environment.hpp"

namespace weft::detail {

struct RunPlan;  // mapping/plan.hpp

/// How a cross-rank edge carries device arrays; every rank derives it alike from the plan.
struct EdgeTransport {
  bool nccl = false;  ///< GPU to GPU through NCCL
  bool peer = false;  ///< through CUDA IPC (ranks of one host, transport/peer.hpp)
  /// With `peer`: the sender's GPUs whose arrays go through CUDA IPC (those physically distinct
  /// from `device`); arrays elsewhere are staged through the host.
  std::vector<int> ipc_devices;
  int device = -1;       ///< with `peer`: the receiving rank's GPU that copies the arrays in
  bool to_host = false;  ///< with `peer`: the arrays land in host memory (a consumer on a CPU)
};

/// The transport of every link of a plan.
struct LinkTransports {
  std::vector<EdgeTransport> links;  ///< per link of the plan (links within a rank: the default)
  /// Per rank, the GPU its NCCL communicator uses; empty when NCCL carries no link.
  std::vector<int> device_of_rank;
  int nccl_edges = 0;  ///< links NCCL carries
  int peer_edges = 0;  ///< links that hand GPU arrays over CUDA IPC
};

/// Chooses, for a run of `plan` over `cluster`, which cross-rank links NCCL carries and which
/// CUDA IPC; with one rank every link is local. Depends on the build (NCCL, CUDA) and on the
/// variables WEFT_NCCL and WEFT_PEER_IPC.
[[nodiscard]] LinkTransports plan_transports(const RunPlan& plan, const Cluster& cluster);

}  // namespace weft::detail
