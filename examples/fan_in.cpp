// Fan-out and fan-in: one source feeds two transforms whose results are summed token by token.
#include <cstdio>

#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

int main(int argc, char** argv) {
  weft::Environment env(argc, argv);
  weft::Graph g;
  auto record = std::make_shared<weft::tasks::Collect::Record>();
  auto& src = g.add<weft::tasks::ArraySource>("source", 100, 1024);
  auto& twice = g.add<weft::tasks::Affine>("twice", 2.0f, 0.0f);
  auto& negate = g.add<weft::tasks::Affine>("negate", -1.0f, 0.0f);
  auto& sum = g.add<weft::tasks::Add>("sum");
  auto& sink = g.add<weft::tasks::Collect>("sink", record, false);
  g.connect(src.out, twice.in);
  g.connect(src.out, negate.in);
  g.connect(twice.out, sum.lhs);
  g.connect(negate.out, sum.rhs);
  g.connect(sum.out, sink.in);
  weft::AutoMapper automatic;
  weft::Executor executor;
  weft::RunHandle run = executor.run(g, weft::map_graph(g, env.cluster(), {&automatic}));
  run.wait();
  if (env.rank() == 0) std::printf("%zu tokens summed in %.3f s\n", record->indices.size(), run.stats().seconds);
  return 0;
}
