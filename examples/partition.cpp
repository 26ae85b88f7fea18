// Partition with halos: 1D Jacobi smoothing of each token split over 4 slabs (spread over the
// ranks under mpirun), halo rows exchanged every iteration while the interior is computed, and
// the slabs' sums reduced across ranks without gathering the arrays.
#include <cstdio>

#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

class Jacobi final : public weft::SlabTask {
 public:
  explicit Jacobi(std::string name) : SlabTask(std::move(name), weft::DType::f32) {}
  weft::Out<double> sum = output<double>("sum");
  void run_slab(weft::Context& ctx, weft::Halo& halo) override {
    weft::Array u = ctx.take(in), v = ctx.alloc(weft::DType::f32, u.shape());
    const weft::Slab& s = halo.slab();  // owned rows start at s.halo_before in the slab array
    auto step = [&](std::int64_t from, std::int64_t to) {  // owned rows [from, to), ends clamped
      const float* a = u.data<float>();
      for (std::int64_t i = s.halo_before + from; i < s.halo_before + to; ++i) {
        bool first = s.first_row + i - s.halo_before == 0, last = s.first_row + i - s.halo_before == s.global_rows - 1;
        v.data<float>()[i] = (a[first ? i : i - 1] + a[i] + a[last ? i : i + 1]) / 3.0f;
      }
    };
    for (int it = 0; it < 100; ++it) {
      step(0, 1), step(s.rows - 1, s.rows);  // the rows the neighbours need, first,
      halo.begin(v);                         // sent to them while
      step(1, s.rows - 1);                   // the interior is computed;
      halo.end(v);                           // v's halo rows now hold theirs
      std::swap(u, v);
    }
    double total = 0;
    for (std::int64_t i = 0; i < s.rows; ++i) total += u.data<float>()[s.halo_before + i];
    ctx.put(sum, total);
    ctx.put(out, std::move(u));
  }
};

class Print final : public weft::Task {
 public:
  Print() : Task("print") {}
  weft::In<double> in = input<double>("in");
  void run(weft::Context& ctx) override { std::printf("token %llu: sum %.3f\n", (unsigned long long)ctx.index(), ctx.take(in)); }
};

int main(int argc, char** argv) {
  weft::Environment env(argc, argv);
  weft::Graph g;
  auto& src = g.add<weft::tasks::ArraySource>("source", 3, 1000);
  weft::Partition p = g.add_partition("jacobi", 4, [](int i) { return std::make_unique<Jacobi>("jacobi." + std::to_string(i)); },
                                      {.halo = 1});
  auto& sink = g.add<weft::tasks::Collect>("sink", std::make_shared<weft::tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  std::vector<std::pair<weft::Task*, int>> sums;
  for (int i = 0; i < 4; ++i) sums.push_back(p.slab_out(i, 1));
  g.connect(g.add_reduce("total", sums, weft::ReduceOp::sum).out(), g.add<Print>().in);
  weft::AutoMapper automatic(weft::DeviceChoice::cpu);  // slabs spread over the ranks' CPUs
  weft::Executor executor;
  executor.run(g, weft::map_graph(g, env.cluster(), {&automatic})).wait();
  return 0;
}
