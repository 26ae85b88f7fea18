// weft demo: the demo graph source → affine → affine → collect, on CPUs or GPUs.
#include <cmath>
#include <cstdio>

#include "common/cli.hpp"
#include "weft/exec/environment.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

Graph demo_graph(std::uint64_t tokens, std::int64_t length, std::shared_ptr<tasks::Collect::Record> record) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", tokens, length);
  auto& scale = g.add<tasks::Affine>("scale", 2.0f, 1.0f);
  auto& shift = g.add<tasks::Affine>("shift", 0.5f, -0.5f);
  auto& sink = g.add<tasks::Collect>("sink", std::move(record), false);
  g.connect(src.out, scale.in);
  g.connect(scale.out, shift.in);
  g.connect(shift.out, sink.in);
  return g;
}

int demo_main(int argc, char** argv) {
  CommonOptions common;
  std::uint64_t tokens = 0;
  std::int64_t length = 0;
  po::options_description desc("Demo options");
  desc.add_options()("tokens", po::value(&tokens)->default_value(1000), "number of tokens")
      ("length", po::value(&length)->default_value(1 << 16), "floats per token");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft demo [--tokens N] [--length L] [--devices cpu|gpu|all] [--mapping FILE]\n"
             "Runs source -> scale -> shift -> sink and checks every token."))
    return 0;
  if (length < 1) throw ConfigError("--length must be at least 1, got " + std::to_string(length));
  auto record = std::make_shared<tasks::Collect::Record>();
  Graph g = demo_graph(tokens, length, record);
  RunStats stats = run_graph(g, common);
  const Environment* env = Environment::current();
  if (!env || env->rank() == 0) {
    std::printf("demo: %llu tokens of %lld floats in %.3f s\n", static_cast<unsigned long long>(tokens),
                static_cast<long long>(length), stats.seconds);
    for (const auto& t : stats.tasks)
      std::printf("  %-8s on %-14s %8llu tokens  busy %.3f s\n", t.task.c_str(), t.place.str().c_str(),
                  static_cast<unsigned long long>(t.tokens), t.busy_seconds);
  }
  return 0;
}

const Registrar reg{{"demo", "run the demo graph (source -> scale -> shift -> sink)", &demo_main}};
const GraphRegistrar graph{{"demo", [] { return demo_graph(1, 1, std::make_shared<tasks::Collect::Record>()); }}};

}  // namespace
}  // namespace weft::cli
