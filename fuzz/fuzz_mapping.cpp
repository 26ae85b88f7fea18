// Mapping files (runtime/src/mapping/file_mapper.cpp): parsed, then checked against a small graph
// and cluster. Any weft::Error is a refusal, as the program makes; anything else is a finding.
#include <cstdint>

#include "fuzz_common.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/util/error.hpp"

namespace {

class Source final : public weft::Task {
 public:
  Source() : Task("source") {}
  weft::Out<std::int64_t> out = output<std::int64_t>("out");
  void run(weft::Context& ctx) override { ctx.end_stream(); }
};
class Scale final : public weft::Task {
 public:
  explicit Scale(std::string name) : Task(std::move(name)) {}
  weft::In<std::int64_t> in = input<std::int64_t>("in");
  weft::Out<std::int64_t> out = output<std::int64_t>("out");
  void run(weft::Context& ctx) override { ctx.put(out, ctx.take(in)); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = weft::fuzz::write_input("mapping.yaml", data, size);
  static weft::Graph graph = [] {
    weft::Graph g;
    auto& source = g.add<Source>();
    auto& a = g.add<Scale>("scale");
    auto& b = g.add<Scale>("shift.0");
    g.connect(source.out, a.in);
    g.connect(a.out, b.in);
    return g;
  }();
  static const weft::Cluster cluster = [] {
    weft::Cluster c;
    for (int r = 0; r < 2; ++r) {
      weft::RankInfo info;
      info.rank = r;
      info.cpu_cores = 4;
      info.gpus.push_back({0, "fuzz GPU", 1u << 30, 9, 0, 100, "GPU-" + std::to_string(r)});
      c.ranks.push_back(info);
    }
    return c;
  }();
  try {
    weft::FileMapper mapper(path);
    mapper.check(graph, cluster, true);
    weft::ApiMapper api;
    weft::AutoMapper automatic(weft::DeviceChoice::cpu);
    (void)weft::map_graph(graph, cluster, {&api, &mapper, &automatic});
  } catch (const weft::Error&) {
  }
  return 0;
}
