// A three-task pipeline on the host: source -> affine -> collect. Prints the first values.
#include <cstdio>

#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

int main(int argc, char** argv) {
  weft::Environment env(argc, argv);
  weft::Graph g;
  auto record = std::make_shared<weft::tasks::Collect::Record>();
  auto& src = g.add<weft::tasks::ArraySource>("source", 10, 4);
  auto& scale = g.add<weft::tasks::Affine>("scale", 2.0f, 1.0f);
  auto& sink = g.add<weft::tasks::Collect>("sink", record);
  g.connect(src.out, scale.in);
  g.connect(scale.out, sink.in);
  weft::ApiMapper api;
  weft::AutoMapper automatic;
  weft::Mapping mapping = weft::map_graph(g, env.cluster(), {&api, &automatic});
  weft::Executor executor({.channel_capacity = 2});
  executor.run(g, mapping).wait();
  if (env.rank() == 0)
    for (std::size_t k = 0; k < record->arrays.size(); ++k)
      std::printf("token %zu: %g %g %g %g\n", k, record->arrays[k][0], record->arrays[k][1], record->arrays[k][2],
                  record->arrays[k][3]);
  return 0;
}
