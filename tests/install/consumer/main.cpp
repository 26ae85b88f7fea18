// A project outside Weft: one source and one sink of integers through the installed package.
#include <cstdio>

#include <weft/weft.hpp>

class Numbers : public weft::Task {
 public:
  Numbers() : Task("numbers") {}
  weft::Out<std::int64_t> out = output<std::int64_t>("out");
  void run(weft::Context& ctx) override {
    if (ctx.index() == 3) return ctx.end_stream();
    ctx.put(out, static_cast<std::int64_t>(ctx.index()) + 3);
  }
};

class Last : public weft::Task {
 public:
  explicit Last(std::int64_t* last) : Task("last"), last_(last) {}
  weft::In<std::int64_t> in = input<std::int64_t>("in");
  void run(weft::Context& ctx) override { *last_ = ctx.take(in); }

 private:
  std::int64_t* last_;
};

int main() {
  std::int64_t last = -1;
  weft::Graph g;
  auto& a = g.add<Numbers>();
  auto& b = g.add<Last>(&last);
  g.connect(a.out, b.in);
  weft::Mapping m;
  m.set("numbers", weft::Place::host());
  m.set("last", weft::Place::host());
  weft::Executor().run(g, m).wait();
  std::printf("consumer: 3 tokens, last %lld\n", static_cast<long long>(last));
  return last == 5 ? 0 : 1;
}
