// The filter tasks inside a graph on the CPU give the library's results (pyramid: every level).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "reference.hpp"
#include "weft/exec/executor.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/tasks/filters/tasks.hpp"

namespace weft::filters {
namespace {

class Once final : public Task {
 public:
  Once(std::string name, Array a) : Task(std::move(name)), a_(std::move(a)) {}
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override {
    if (done_) return ctx.end_stream();
    done_ = true;
    ctx.put(out, a_);
  }

 private:
  Array a_;
  bool done_ = false;
};

class Keep final : public Task {
 public:
  Keep(std::string name, std::shared_ptr<std::vector<Array>> into) : Task(std::move(name)), into_(std::move(into)) {}
  In<Array> in = input<Array>("in");
  void run(Context& ctx) override { into_->push_back(ctx.take(in).to_host()); }

 private:
  std::shared_ptr<std::vector<Array>> into_;
};

void expect_equal(const Array& a, const Array& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (std::int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(test::get(a, i), test::get(b, i)) << "at " << i;
}

void run_on_cpu(Graph& g) {
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  Executor ex;
  ex.run(g, m).wait();
}

TEST(FilterTasks, PyramidAndMedianInAGraphMatchTheLibrary) {
  const Array image = test::random_array(DType::u16, Shape(45, 38), 4000.0, 21);
  Graph g;
  auto& source = g.add<Once>("source", image);
  auto& pyramid = g.add<GaussianPyramid>("pyramid", 3, 1.3, Border::mirror);
  g.connect(source.out, pyramid.in);
  std::vector<std::shared_ptr<std::vector<Array>>> kept;
  for (int i = 0; i < 3; ++i) {
    kept.push_back(std::make_shared<std::vector<Array>>());
    auto& keep = g.add<Keep>("keep" + std::to_string(i), kept.back());
    g.connect(pyramid.levels[i], keep.in);
  }
  run_on_cpu(g);
  const std::vector<Array> expect = gaussian_pyramid(image, 3, 1.3, Border::mirror);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(kept[i]->size(), 1u);
    expect_equal(kept[i]->front(), expect[i]);
  }

  const Array volume = test::random_array(DType::f32, Shape(5, 7, 9), 10.0, 22);
  Graph h;
  auto& vs = h.add<Once>("source", volume);
  auto& med = h.add<MedianFilter>("median", 3, Border::zero);
  auto out = std::make_shared<std::vector<Array>>();
  auto& keep = h.add<Keep>("keep", out);
  h.connect(vs.out, med.in);
  h.connect(med.out, keep.in);
  run_on_cpu(h);
  ASSERT_EQ(out->size(), 1u);
  expect_equal(out->front(), median(volume, 3, Border::zero));
}

}  // namespace
}  // namespace weft::filters
