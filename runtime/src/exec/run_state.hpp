#pragma once
// A run's state, shared by the executor's actors (executor.cpp) and its helpers: the control-file
// watcher and the load balancer's loop (run_control.cpp).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "migration/balancer.hpp"
#include "transport/channel.hpp"
#include "exec/control_file.hpp"
#include "exec/halo.hpp"
#include "migration/migration.hpp"
#include "transport/remote.hpp"
#include "trace/trace.hpp"
#include "weft/exec/executor.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace detail {

/// One actor: a task (or a migratable task's router, merger or instance) on this rank.
struct Node {
  Task* task = nullptr;
  Place place;
  int lane = 0;
  std::vector<Channel*> inputs;                // one per input port
  std::vector<std::vector<Channel*>> outputs;  // per output port, one per consumer
  // Per output port and consumer: a task on a CPU of this rank that reads the arrays (overlap on:
  // this GPU task issues the copy to the host with its firing instead of the consumer after it).
  std::vector<std::vector<bool>> to_host;
  TaskStats stats;
  // Migratable tasks (migration/migration.hpp): the role of this actor, its task's run-time migration
  // state, and for an instance its candidate index and whether the task runs here now.
  detail::Vertex::Role role = detail::Vertex::plain;
  detail::Migration* migration = nullptr;
  int instance = -1;
  bool active = true;
  // Counters the load balancer reads while the run goes on (the stats above are the task's own).
  int vertex = 0;
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::int64_t> busy_ns{0};  // in run()/run_cuda() (host side)
  std::atomic<std::int64_t> gpu_ns{0};   // GPU time of its firings (GPU tasks)
  std::atomic<std::uint64_t> gpu_done{0};  // firings whose GPU time is in gpu_ns (GPU tasks)
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> state_bytes{0};
};

}  // namespace detail

struct RunHandle::State {
  ExecutorOptions options;
  Graph* graph = nullptr;
  Mapping mapping;
  int rank = 0;
  std::vector<std::unique_ptr<detail::Channel>> channels;
  std::vector<std::unique_ptr<detail::Node>> nodes;
  std::vector<std::thread> threads;
  std::unique_ptr<detail::RemoteLinks> remote;
  std::unique_ptr<detail::HaloLinks> halos;  // partitions' halo exchanges (after `remote`: it uses it)
  std::unique_ptr<detail::Migrations> migrations;
  std::vector<Place> final_places;  // per migratable task, known on every rank after wait()
  std::vector<std::thread> helpers;  // control-file watcher, load balancer
  std::atomic<bool> finished{false};
  detail::RunPlan plan;
  std::mutex balance_mutex;
  std::map<int, detail::RankReport> reports;  // rank 0: the latest report of every other rank
  std::vector<BalanceDecision> decisions;      // rank 0
  detail::TraceRecorder trace;
  std::chrono::steady_clock::time_point start;
  double seconds = 0;
  bool waited = false;

  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> cancelled{false};
  int nccl_edges = 0;
  int peer_edges = 0;

  void fail(std::exception_ptr e, const detail::Node* node) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) {
        if (node) {
          try {
            std::rethrow_exception(e);
          } catch (Error& err) {
            if (err.task().empty()) err.set_context(node->task->name(), node->place.str());
            e = std::current_exception();
          } catch (...) {
          }
        }
        error = e;
        if (remote) remote->abort(encode_failure(error));
      }
    }
    cancel();
  }
  void deliver_report(std::vector<std::byte> bytes) {
    if (bytes.size() < sizeof(std::int32_t)) return;
    std::int32_t from = 0;
    std::memcpy(&from, bytes.data(), sizeof from);
    bytes.erase(bytes.begin(), bytes.begin() + sizeof from);
    auto report = detail::RankReport::decode(bytes);
    std::lock_guard lock(balance_mutex);
    reports[from] = std::move(report);
  }
  void cancel() {
    cancelled = true;
    for (auto& c : channels) c->cancel();
    if (migrations) migrations->cancel();
    if (remote) remote->cancel();
    if (halos) halos->cancel();
  }
};

namespace detail {

/// Rank 0 follows the control file until the run ends.
void watch_control_file(RunHandle::State& run, std::shared_ptr<ControlFile> file);
/// Every rank reports its counters each balance period; rank 0 decides the moves.
void run_balancer(RunHandle::State& run);

}  // namespace detail
}  // namespace weft
