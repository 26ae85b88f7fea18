// Partitions with slabs on GPUs (labels gpu, mpi): slabs on the GPUs of every rank (halo rows
// between ranks staged through pinned memory over MPI, between GPUs of one rank peer copies,
// on one GPU device copies), mixed CPU and GPU slabs, split and join on a GPU. Every result is
// compared bit for bit with the CPU whole-array reference. Skips without a GPU on every rank.
#include <gtest/gtest.h>

#include <weft/cuda.hpp>

#include "partition_fixture.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "common/mpi_main.hpp"

using namespace weft;
using weft::test::env;

namespace {


__global__ void smooth_kernel(const float* u, float* v, Slab s, std::int64_t ny, std::int64_t nx, int r,
                              std::int64_t begin, std::int64_t end) {
  std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= (end - begin) * ny * nx) return;
  std::int64_t x = idx % nx, y = (idx / nx) % ny, i = begin + idx / (nx * ny);
  v[((s.halo_before + i) * ny + y) * nx + x] =
      test::smooth_at(u, s.first_row - s.halo_before, s.global_rows, ny, nx, s.first_row + i, y, x, r);
}

void launch_smooth(const Array& u, Array& v, const Slab& s, int r, std::int64_t begin, std::int64_t end,
                   cudaStream_t stream) {
  auto [ny, nx] = test::plane(u.shape());
  std::int64_t n = (end - begin) * ny * nx;
  if (n <= 0) return;
  unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  smooth_kernel<<<blocks, 256, 0, stream>>>(u.data<float>(), v.data<float>(), s, ny, nx, r, begin, end);
  check_launch("smooth_kernel", stream);
}

class Smooth final : public SlabTask {
 public:
  Smooth(std::string name, int radius, int iterations)
      : SlabTask(std::move(name), DType::f32), radius_(radius), iterations_(iterations) {}
  bool has_cuda() const override { return true; }
  void run_slab(Context& ctx, Halo& halo) override {
    Array u = ctx.take(in), v = ctx.alloc(DType::f32, u.shape());
    const Slab& s = halo.slab();
    auto [lo, hi] = test::interior(s, radius_);
    for (int it = 0; it < iterations_; ++it) {
      test::smooth_rows(u, v, s, radius_, 0, lo);
      test::smooth_rows(u, v, s, radius_, hi, s.rows);
      halo.begin(v);
      test::smooth_rows(u, v, s, radius_, lo, hi);
      halo.end(v);
      std::swap(u, v);
    }
    ctx.put(out, std::move(u));
  }
  void run_slab_cuda(Context& ctx, Halo& halo) override {
    Array u = ctx.take(in), v = ctx.alloc(DType::f32, u.shape());
    const Slab& s = halo.slab();
    auto [lo, hi] = test::interior(s, radius_);
    cudaStream_t stream = cuda_stream(ctx);
    for (int it = 0; it < iterations_; ++it) {
      launch_smooth(u, v, s, radius_, 0, lo, stream);  // boundary rows first
      launch_smooth(u, v, s, radius_, hi, s.rows, stream);
      halo.begin(v);
      launch_smooth(u, v, s, radius_, lo, hi, stream);  // the interior overlaps the exchange
      halo.end(v);
      std::swap(u, v);
    }
    ctx.put(out, std::move(u));
  }

 private:
  int radius_, iterations_;
};

bool every_rank_has_a_gpu() {
  for (const auto& r : env->cluster().ranks)
    if (r.gpus.empty()) return false;
  return true;
}

// Places slab i with `where(i)`; split and join on `ends`.
template <class Where>
void expect_matches_reference(Shape shape, int parts, int radius, bool overlap, Where where, Place ends) {
  constexpr std::uint64_t kTokens = 4;
  constexpr int kIterations = 5;
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", kTokens, shape);
  Partition p = g.add_partition("smooth", parts, [&](int i) {
    return std::make_unique<Smooth>("smooth." + std::to_string(i), radius, kIterations);
  }, {.halo = radius});
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("sink", Place::host(0));
  m.set("smooth.split", ends);
  m.set("smooth.join", ends);
  for (int i = 0; i < parts; ++i) m.set("smooth." + std::to_string(i), where(i));
  Executor ex({.channel_capacity = 2, .overlap = overlap});
  ex.run(g, m).wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    std::vector<float> want = test::smooth_reference(test::volume(k, shape), radius, kIterations);
    ASSERT_EQ(rec->arrays[k].size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(rec->arrays[k][i], want[i]) << shape.str() << " over " << parts << " parts, halo " << radius
                                            << ", token " << k << ", element " << i;
  }
}

// Slab i on rank i mod size, on the GPUs of that rank in turn (starting from GPU `rank`, so that
// ranks which all see every GPU of a node still spread over them).
Place on_gpus(int i) {
  int rank = i % env->size();
  int gpus = static_cast<int>(env->cluster().ranks[rank].gpus.size());
  return Place::cuda((i / env->size() + rank) % gpus, rank);
}

}  // namespace

TEST(PartitionGpu, SlabsOnEveryRanksGpusMatchTheWholeArray) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << "needs a GPU on every rank";
  const int parts = 2 * env->size();
  for (bool overlap : {true, false}) {
    expect_matches_reference(Shape(301, 257), parts, 1, overlap, on_gpus, Place::host(0));
    expect_matches_reference(Shape(67, 33, 41), parts, 3, overlap, on_gpus, Place::host(0));
  }
}

TEST(PartitionGpu, CpuAndGpuSlabsSideBySide) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << "needs a GPU on every rank";
  auto mixed = [](int i) { return i % 2 ? Place::host(i % env->size()) : Place::cuda(0, i % env->size()); };
  expect_matches_reference(Shape(45, 17, 19), 5, 2, true, mixed, Place::host(0));
}

TEST(PartitionGpu, SplitAndJoinOnAGpu) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << "needs a GPU on every rank";
  expect_matches_reference(Shape(129, 65), 3, 1, true, on_gpus, Place::cuda(0, 0));
}

TEST(PartitionGpu, LargeSlabsOverlapTheirExchange) {
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << "needs a GPU on every rank";
  expect_matches_reference(Shape(1024, 1024), 2 * env->size(), 2, true, on_gpus, Place::host(0));
}
