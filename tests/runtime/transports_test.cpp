// weft::edge_transports: how each edge of a mapped graph travels, on clusters described by hand
// (no MPI needed: the choice depends only on the graph, the mapping and the cluster).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "weft/tasks/demo/demo.hpp"
#include "weft/util/settings.hpp"
#include "weft/weft.hpp"

using namespace weft;

namespace {

/// A copy that declares a CUDA implementation (never run here), to be placed on GPUs.
class Relay final : public Task {
 public:
  explicit Relay(std::string name) : Task(std::move(name)) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override { ctx.put(out, ctx.take(in)); }
  [[nodiscard]] bool has_cuda() const override { return true; }
};

/// source -> scale -> shift -> sink.
Graph pipeline() {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 3, 4);
  auto& scale = g.add<Relay>("scale");
  auto& shift = g.add<Relay>("shift");
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>());
  g.connect(src.out, scale.in);
  g.connect(scale.out, shift.in);
  g.connect(shift.out, sink.in);
  return g;
}

/// `ranks` ranks on `hosts` hosts (round robin), each with `gpus` GPUs of its own.
Cluster cluster(int ranks, int hosts, int gpus) {
  Cluster c;
  for (int r = 0; r < ranks; ++r) {
    RankInfo info;
    info.rank = r;
    info.host = "host" + std::to_string(r % hosts);
    for (int g = 0; g < gpus; ++g)
      info.gpus.push_back({g, "test GPU", 0, 9, 0, 0, "uuid-" + std::to_string(r) + "-" + std::to_string(g)});
    c.ranks.push_back(info);
  }
  return c;
}

Mapping place(const std::vector<std::pair<std::string, Place>>& places) {
  Mapping m;
  for (const auto& [task, p] : places) m.set(task, p);
  return m;
}

/// Sets an environment variable for one test (settings() reads the environment once: reloaded).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    ::setenv(name, value, 1);
    reload_settings();
  }
  ~ScopedEnv() {
    ::unsetenv(name_);
    reload_settings();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

using T = Transport;

TEST(EdgeTransports, OneRankIsLocal) {
  Graph g = pipeline();
  const Mapping m = place({{"source", Place::host()}, {"scale", Place::cuda(0)}, {"shift", Place::host()},
                           {"sink", Place::host()}});
  EXPECT_EQ(edge_transports(g, m, cluster(1, 1, 1)), (std::vector<T>{T::local, T::local, T::local}));
}

TEST(EdgeTransports, HostArraysBetweenRanksGoOverMpi) {
  Graph g = pipeline();
  const Mapping m = place({{"source", Place::host(0)}, {"scale", Place::host(1)}, {"shift", Place::host(1)},
                           {"sink", Place::host(0)}});
  // GPUs on both ranks of one host change nothing: the arrays sit in host memory.
  for (int gpus : {0, 1})
    EXPECT_EQ(edge_transports(g, m, cluster(2, 1, gpus)), (std::vector<T>{T::mpi, T::local, T::mpi})) << gpus;
  EXPECT_EQ(transport_name(T::mpi), "MPI");
  EXPECT_EQ(transport_name(T::cuda_ipc), "CUDA IPC");
}

TEST(EdgeTransports, GpuArraysBetweenRanksOfOneHost) {
  ScopedEnv no_nccl("WEFT_NCCL", "0");  // NCCL would take them first where it is built
  Graph g = pipeline();
  const Mapping m = place({{"source", Place::host(0)}, {"scale", Place::cuda(0, 0)}, {"shift", Place::cuda(0, 1)},
                           {"sink", Place::host(1)}});
#if defined(WEFT_HAVE_CUDA)
  const T gpu_to_gpu = T::cuda_ipc;
#else
  const T gpu_to_gpu = T::mpi;  // no CUDA IPC without CUDA
#endif
  EXPECT_EQ(edge_transports(g, m, cluster(2, 1, 1)), (std::vector<T>{T::local, gpu_to_gpu, T::local}));
  ScopedEnv no_ipc("WEFT_PEER_IPC", "0");
  EXPECT_EQ(edge_transports(g, m, cluster(2, 1, 1)), (std::vector<T>{T::local, T::mpi, T::local}));
  // Between hosts, without NCCL: MPI.
  EXPECT_EQ(edge_transports(g, m, cluster(2, 2, 1)), (std::vector<T>{T::local, T::mpi, T::local}));
}

TEST(EdgeTransports, AMigratableTaskCountsAtItsMappedPlace) {
  Graph g = pipeline();
  g.migratable(g.at("scale"), {Place::host(0), Place::host(1)});
  const Mapping m = place({{"source", Place::host(0)}, {"scale", Place::host(1)}, {"shift", Place::host(1)},
                           {"sink", Place::host(0)}});
  // The router sits with the source on rank 0; the tokens cross to the instance on rank 1.
  EXPECT_EQ(edge_transports(g, m, cluster(2, 2, 0)), (std::vector<T>{T::mpi, T::local, T::mpi}));
  const Mapping home = place({{"source", Place::host(0)}, {"scale", Place::host(0)}, {"shift", Place::host(1)},
                              {"sink", Place::host(0)}});
  EXPECT_EQ(edge_transports(g, home, cluster(2, 2, 0)), (std::vector<T>{T::local, T::mpi, T::mpi}));
}

}  // namespace
