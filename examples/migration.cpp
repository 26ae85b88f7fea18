// Live migration: a stateful running sum moves to another place while tokens flow, and its sum
// carries on where it was (`mpirun -np 2` moves it to rank 1; alone, to a second CPU thread group).
#include <cstdio>

#include "weft/tasks/demo/demo.hpp"
#include "weft/tasks/demo/running_sum.hpp"
#include "weft/weft.hpp"

int main(int argc, char** argv) {
  weft::Environment env(argc, argv);
  weft::Graph g;
  auto record = std::make_shared<weft::tasks::Collect::Record>();
  auto& src = g.add<weft::tasks::ArraySource>("source", 2000, 256);
  auto& sum = g.add<weft::tasks::RunningSum>("sum");
  auto& sink = g.add<weft::tasks::Collect>("sink", record);
  g.connect(src.out, sum.in);
  g.connect(sum.out, sink.in);
  weft::Place here = weft::Place::host(0);
  weft::Place there = env.size() > 1 ? weft::Place::host(1) : weft::Place{weft::Place::cpu, 1, 0};
  g.migratable(sum, {here, there});
  weft::Mapping mapping;
  for (const auto& t : g.tasks()) mapping.set(t->name(), here);
  weft::Executor executor;
  weft::RunHandle run = executor.run(g, mapping);
  if (env.rank() == 0) run.migrate("sum", there);  // from any rank, while running
  run.wait();
  if (env.rank() == 0)
    std::printf("%zu tokens; sum now on %s; last value %g\n", record->indices.size(),
                run.effective_mapping().at("sum").str().c_str(), record->arrays.back()[0]);
  return 0;
}
