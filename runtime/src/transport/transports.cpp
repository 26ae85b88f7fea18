// Which transport carries each link of a run (transport/transports.hpp), and the public view of it
// per graph edge (weft/transport/transports.hpp).
#include "transport/transports.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "mapping/plan.hpp"
#include "transport/nccl.hpp"
#include "transport/peer.hpp"
#include "weft/transport/transports.hpp"
#include "weft/util/settings.hpp"

namespace weft {
namespace detail {
namespace {

// Which cross-rank edges NCCL carries: both ends on GPUs, distinct physical GPUs, one device per
// rank for the communicator, every rank with a GPU (NCCL's bootstrap is collective), no cycle
// between ranks, and no edge closing a loop among the pairs of ranks already chosen (it goes
// through MPI). A rank's NCCL calls run in order on one stream and a large send ends only once
// its peer's stream reached the matching receive: with 0->1, 1->2 and 0->2 through NCCL, rank 0
// sending to 1 then 2, rank 1 sending to 2 before receiving from 0 and rank 2 receiving from 0
// before 1 would each wait for the next; along a forest of pairs every chain of waits ends.
// (Sending the way back of a cycle through MPI instead of giving up NCCL hung the migration GPU
// test; why is not understood.) Several edges between two ranks keep one order of sends
// and receives (remote.cpp, NcclOrder).
std::set<std::ptrdiff_t> choose_nccl_edges(const RunPlan& plan, const Cluster& cluster,
                                           std::vector<int>& device_of_rank) {
  std::set<std::ptrdiff_t> chosen;
  device_of_rank.assign(cluster.size(), -1);
  if (!nccl_compiled() || !settings().nccl) return chosen;
  for (const auto& r : cluster.ranks)
    if (r.gpus.empty()) return chosen;
  std::map<std::pair<int, int>, bool> links;
  std::vector<int> parent(cluster.size());  // union-find over the ranks the chosen pairs connect
  for (int r = 0; r < cluster.size(); ++r) parent[r] = r;
  auto root = [&](int r) {
    while (parent[r] != r) r = parent[r] = parent[parent[r]];
    return r;
  };
  for (std::size_t i = 0; i < plan.links.size(); ++i) {
    const Vertex& from = plan.vertices[plan.links[i].from];
    const Vertex& to = plan.vertices[plan.links[i].to];
    Place a = from.place, b = to.place;
    if (!a.is_gpu() || !b.is_gpu() || a.rank == b.rank) continue;
    // Arrays on the GPU of each end: a computing task's, or those a migratable task's router or
    // merger forwards on a GPU (its producer's or consumer's). A token found elsewhere when it is
    // sent goes through the host (remote.cpp checks each one).
    auto on_gpu = [](const Vertex& v) {
      return v.role == Vertex::router || v.role == Vertex::merger ? v.place.is_gpu() : v.moves_data();
    };
    if (!on_gpu(from) || !on_gpu(to)) continue;
    const auto& ga = cluster.ranks[a.rank].gpus.at(a.device);
    const auto& gb = cluster.ranks[b.rank].gpus.at(b.device);
    if (ga.uuid == gb.uuid && cluster.ranks[a.rank].host == cluster.ranks[b.rank].host) continue;  // one GPU, two ranks
    const bool known = links.count({a.rank, b.rank}) || links.count({b.rank, a.rank});
    if (!known && root(a.rank) == root(b.rank)) continue;  // would close a loop of ranks: MPI
    auto bind = [&](int rank, int device) {
      if (device_of_rank[rank] < 0) device_of_rank[rank] = device;
      return device_of_rank[rank] == device;
    };
    if (!bind(a.rank, a.device) || !bind(b.rank, b.device)) continue;
    chosen.insert(static_cast<std::ptrdiff_t>(i));
    links[{a.rank, b.rank}] = true;
    parent[root(a.rank)] = root(b.rank);
  }
  // No cycle between ranks (depth-first search over the rank graph).
  std::vector<int> colour(cluster.size(), 0);
  std::function<bool(int)> cyclic = [&](int r) {
    colour[r] = 1;
    for (const auto& [link, _] : links)
      if (link.first == r && (colour[link.second] == 1 || (colour[link.second] == 0 && cyclic(link.second)))) return true;
    colour[r] = 2;
    return false;
  };
  for (int r = 0; r < cluster.size(); ++r)
    if (colour[r] == 0 && cyclic(r)) {
      chosen.clear();
      break;
    }
  if (chosen.empty()) return chosen;
  // Every rank joins the communicator, each on its own physical GPU (NCCL refuses two ranks on one
  // GPU: "invalid usage"): ranks without NCCL edges take a GPU no other rank uses, else no NCCL.
  std::set<std::pair<std::string, std::string>> used;  // (host, GPU UUID)
  auto key = [&](int rank, int device) {
    return std::make_pair(cluster.ranks[rank].host, cluster.ranks[rank].gpus.at(device).uuid);
  };
  for (int r = 0; r < cluster.size(); ++r)
    if (device_of_rank[r] >= 0 && !used.insert(key(r, device_of_rank[r])).second) return {};
  for (int r = 0; r < cluster.size(); ++r) {
    if (device_of_rank[r] >= 0) continue;
    for (int d = 0; d < static_cast<int>(cluster.ranks[r].gpus.size()) && device_of_rank[r] < 0; ++d)
      if (used.insert(key(r, d)).second) device_of_rank[r] = d;
    if (device_of_rank[r] < 0) return {};
  }
  return chosen;
}

// How cross-rank link `link` carries device arrays (the same on both ends). Where NCCL
// does not carry it, CUDA IPC does (transport/peer.hpp) between two ranks of one host whose
// receiving rank has a GPU: no host staging, no MPI payload, and, unlike NCCL, nothing to match
// between the ranks, so loops of ranks (a farm's items out and results back) qualify. Any array
// the sender finds on a GPU goes so, whatever the ends' places (a farm's scatter and gather on a
// CPU forward GPU arrays): onto the receiving task's GPU, or, for a task on a CPU, into host
// memory through a GPU of the receiving rank (the first its tasks use). Arrays on the very GPU
// that receives them (ranks sharing one GPU) are staged through the host as before: with CUDA IPC
// there, runtime_migration_gpu_test_np2 hung once (4xH200, CUDA_VISIBLE_DEVICES=0) and failed once
// on rank 1 (one H200), while between distinct GPUs every GPU test passed.
// WEFT_PEER_IPC=0 turns it off.
EdgeTransport edge_transport(const RunPlan& plan, const Cluster& cluster, std::size_t link, bool nccl) {
  EdgeTransport how;
  how.nccl = nccl;
  const Vertex& to = plan.vertices[plan.links[link].to];
  const int sending = plan.vertices[plan.links[link].from].place.rank, receiving = to.place.rank;
  if (nccl || !peer_ipc_enabled() || sending == receiving) return how;
  const RankInfo& sender = cluster.ranks.at(sending);
  const RankInfo& receiver = cluster.ranks.at(receiving);
  if (sender.host != receiver.host || receiver.gpus.empty()) return how;
  if (to.place.is_gpu()) {
    how.device = to.place.device;
  } else {
    how.to_host = true;
    for (const Vertex& v : plan.vertices)
      if (v.place.rank == receiving && v.place.is_gpu() && (how.device < 0 || v.place.device < how.device))
        how.device = v.place.device;
    if (how.device < 0) how.device = receiving % static_cast<int>(receiver.gpus.size());  // no GPU task there
  }
  const std::string& uuid = receiver.gpus.at(how.device).uuid;
  for (const GpuInfo& g : sender.gpus)
    if (g.uuid != uuid) how.ipc_devices.push_back(g.index);
  how.peer = !how.ipc_devices.empty();
  return how;
}

}  // namespace

LinkTransports plan_transports(const RunPlan& plan, const Cluster& cluster) {
  LinkTransports chosen;
  chosen.links.resize(plan.links.size());
  if (cluster.size() <= 1) return chosen;
  std::vector<int> device_of_rank;
  const std::set<std::ptrdiff_t> nccl = choose_nccl_edges(plan, cluster, device_of_rank);
  for (std::size_t id = 0; id < plan.links.size(); ++id) {
    chosen.links[id] = edge_transport(plan, cluster, id, nccl.count(static_cast<std::ptrdiff_t>(id)) != 0);
    chosen.peer_edges += chosen.links[id].peer ? 1 : 0;
  }
  chosen.nccl_edges = static_cast<int>(nccl.size());
  if (!nccl.empty()) chosen.device_of_rank = std::move(device_of_rank);
  return chosen;
}

}  // namespace detail

std::string_view transport_name(Transport transport) noexcept {
  switch (transport) {
    case Transport::local: return "local";
    case Transport::mpi: return "MPI";
    case Transport::nccl: return "NCCL";
    case Transport::cuda_ipc: return "CUDA IPC";
  }
  return "?";
}

namespace {

/// The GPU holding the arrays each vertex sends, -1 for host memory: a computing task's own place;
/// for one that only forwards (a router, a merger, a farm's scatter or gather), where its
/// producers' arrays are.
std::vector<int> array_devices(const detail::RunPlan& plan) {
  std::vector<int> device(plan.vertices.size(), -2);  // -2: not known yet
  std::function<int(int)> of = [&](int v) {
    if (device[v] != -2) return device[v];
    device[v] = -1;  // the plan has no cycle; this only guards the recursion
    const detail::Vertex& x = plan.vertices[v];
    if (x.moves_data()) return device[v] = x.place.is_gpu() ? x.place.device : -1;
    for (const detail::Link& l : plan.links)
      if (l.to == v && of(l.from) >= 0) return device[v] = of(l.from);
    return device[v] = -1;
  };
  for (std::size_t v = 0; v < plan.vertices.size(); ++v) (void)of(static_cast<int>(v));
  return device;
}

}  // namespace

std::vector<Transport> edge_transports(const Graph& graph, const Mapping& mapping, const Cluster& cluster,
                                       const std::vector<std::string>& migratable) {
  const detail::RunPlan plan = detail::plan_run(graph, mapping, migratable, cluster);
  const detail::LinkTransports chosen = detail::plan_transports(plan, cluster);
  const std::vector<int> device = array_devices(plan);
  auto link_transport = [&](std::size_t id, bool arrays) {
    const detail::Link& l = plan.links[id];
    const detail::EdgeTransport& how = chosen.links[id];
    if (plan.vertices[l.from].place.rank == plan.vertices[l.to].place.rank) return Transport::local;
    const int from = device[l.from];
    if (arrays && how.nccl && from >= 0) return Transport::nccl;
    if (arrays && how.peer && std::find(how.ipc_devices.begin(), how.ipc_devices.end(), from) != how.ipc_devices.end())
      return Transport::cuda_ipc;
    return Transport::mpi;
  };
  // The link from a migratable task's router to its mapped instance (input `port`), or from that
  // instance to its merger (output `port`): where the tokens of the graph's edge go on.
  auto group_link = [&](const Task* task, int port, bool into) -> std::ptrdiff_t {
    for (const detail::GroupPlan& g : plan.groups) {
      if (g.task != task) continue;
      const int instance = g.instances[static_cast<std::size_t>(g.initial)];
      const int nin = static_cast<int>(task->inputs().size()), nout = static_cast<int>(task->outputs().size());
      for (std::size_t id = 0; id < plan.links.size(); ++id) {
        const detail::Link& l = plan.links[id];
        if (into && l.from == g.router && l.to == instance && l.to_port == port && l.from_port == g.initial * nin + port)
          return static_cast<std::ptrdiff_t>(id);
        if (!into && l.from == instance && l.to == g.merger && l.from_port == port &&
            l.to_port == g.initial * nout + port)
          return static_cast<std::ptrdiff_t>(id);
      }
    }
    return -1;
  };
  std::vector<Transport> result;
  const auto& edges = graph.edges();
  for (std::size_t e = 0; e < edges.size(); ++e) {  // plan_run makes link e of edge e
    const Edge& edge = edges[e];
    const bool arrays = edge.from->outputs()[static_cast<std::size_t>(edge.from_port)].kind == ValueKind<Array>::index;
    // The links the tokens take with every task at its mapped place: the first that leaves its
    // rank says how they travel.
    Transport how = Transport::local;
    for (const std::ptrdiff_t id : {group_link(edge.from, edge.from_port, false), static_cast<std::ptrdiff_t>(e),
                                    group_link(edge.to, edge.to_port, true)})
      if (id >= 0 && how == Transport::local) how = link_transport(static_cast<std::size_t>(id), arrays);
    result.push_back(how);
  }
  return result;
}

}  // namespace weft
