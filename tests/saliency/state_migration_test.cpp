// The fused saliency graph with its two stateful tasks (motion.input, motion.median) moving while
// the frames flow: between the thread groups cpu and cpu:1 of each rank and, under mpiexec -n 2
// and -n 4, between ranks. The dynamic and fused maps must be those of the run without moves, bit
// for bit, and those of the direct CPU calls. Each move is made at a chosen frame: the source
// waits there until every earlier frame's maps reached the sinks and both moves were commanded.
//
// Built a second time with WEFT_MIGRATION_ON_GPU (saliency_state_migration_gpu_test, label gpu):
// the moves then also go to and from the GPU of each rank, so the state crosses host and device
// memory both ways (and ranks under mpiexec). motion.input's GPU downsampling differs from the
// CPU's by under 1e-6 (saliency_dynamic_gpu_test), so the maps are compared to the run without
// moves within 1e-4 of the map's maximum rather than bit for bit (measured on an H100: at most
// 2.1e-7 on the frames whose state went through the GPU, 0 on the others); a lost, repeated or
// reordered frame or state changes the moving patch's maps by far more.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/mpi_main.hpp"
#include "motion_frames.hpp"
#include "weft/exec/executor.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/tasks/saliency/tasks.hpp"

namespace weft::saliency {
namespace {

using weft::test::env;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kH = 48, kW = 64;
constexpr int kFrames = 18;
/// Frames before which both stateful tasks move: right after the first frame (median history of
/// one), before the history is full, then with a full one, at varying distances.
constexpr int kMoves[] = {1, 2, 4, 6, 9, 12, 15};

Array pan_frame(int t) { return test::moving_patch_frame(kH, kW, t, 1.0, 0.5, 1.5, -1.0, 14, 16, 10); }

/// Progress shared by the source, the sinks and the thread that commands the moves (rank 0).
struct Progress {
  std::atomic<int> allowed{kFrames};  ///< the source puts frames below this one
  std::atomic<int> produced{0};
};

class GatedFrames final : public Task {
 public:
  explicit GatedFrames(std::shared_ptr<Progress> progress) : Task("read"), progress_(std::move(progress)) {}
  Out<Array> out = output<Array>("out", DType::u8, 2);
  void run(Context& ctx) override {
    if (next_ == kFrames) return ctx.end_stream();
    // Waits for the moves commanded before this frame (at most 60 s: a stuck run then fails the checks).
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (next_ >= progress_->allowed && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(100));
    const int t = next_++;
    progress_->produced = next_;
    ctx.put(out, pan_frame(t));
  }

 private:
  std::shared_ptr<Progress> progress_;
  int next_ = 0;
};

/// Keeps every map it receives, in order.
struct Maps {
  std::mutex mutex;
  std::vector<Array> maps;
  std::atomic<int> count{0};
};
class Keep final : public Task {
 public:
  Keep(std::string name, std::shared_ptr<Maps> maps) : Task(std::move(name)), maps_(std::move(maps)) {}
  In<Array> in = input<Array>("in", DType::f32, 2);
  void run(Context& ctx) override {
    std::lock_guard lock(maps_->mutex);
    maps_->maps.push_back(ctx.take(in));
    ++maps_->count;
  }

 private:
  std::shared_ptr<Maps> maps_;
};

#if defined(WEFT_MIGRATION_ON_GPU)
constexpr bool kOnGpu = true;
#else
constexpr bool kOnGpu = false;
#endif

/// The places the stateful tasks move over: both thread groups of every rank, and with
/// WEFT_MIGRATION_ON_GPU a GPU of each rank after its CPUs: GPU r (mod the rank's GPUs), so that
/// ranks of a host with several GPUs move the state between distinct GPUs.
std::vector<Place> move_places() {
  std::vector<Place> places;
  for (int r = 0; r < env->size(); ++r) {
    places.push_back(Place::host(r));
    places.push_back(Place{Place::cpu, 1, r});
    const auto gpus = static_cast<int>(env->cluster().ranks[static_cast<std::size_t>(r)].gpus.size());
    if (kOnGpu && gpus > 0) places.push_back(Place::cuda(r % gpus, r));
  }
  return places;
}

/// Where each stateful task goes at the i-th move (i from 1): never where it already is.
Place input_place(int i) {
  const auto places = move_places();
  return places[static_cast<std::size_t>(i) % places.size()];
}
Place median_place(int i) {
  const auto places = move_places();
  return places[(places.size() - static_cast<std::size_t>(i) % places.size()) % places.size()];
}

struct Outcome {
  std::shared_ptr<Maps> dynamic = std::make_shared<Maps>(), fused = std::make_shared<Maps>();
  std::uint64_t migrations = 0;
  Mapping effective;
};

/// read → {StaticSaliency, dynamic pathway} → fusion → fused; motion.map → dynamic. Everything on
/// rank 0's cpu; with `moves`, motion.input and motion.median migrate before each frame of kMoves.
Outcome run_fused(bool moves) {
  const MotionParams params = [] {
    MotionParams p;
    p.median_frames = 3;
    return p;
  }();
  auto progress = std::make_shared<Progress>();
  Outcome result;
  Graph g;
  auto& read = g.add<GatedFrames>(progress);
  auto& ms = g.add<StaticSaliency>("static");
  const DynamicPathway d = add_dynamic_pathway(g, params, kH, kW);
  auto& fusion = g.add<Fusion>("fusion");
  auto& dynamic = g.add<Keep>("dynamic", result.dynamic);
  auto& fused = g.add<Keep>("fused", result.fused);
  g.connect(read.out, ms.in);
  g.connect(read.out, d.input->in);
  g.connect(ms.out, fusion.static_map);
  g.connect(d.map->out, fusion.dynamic_map);
  g.connect(d.map->out, dynamic.in);
  g.connect(fusion.out, fused.in);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  if (moves) {
    g.migratable(*d.input, move_places());
    g.migratable(*d.median, move_places());
    progress->allowed = kMoves[0];
  }
  Executor executor({.channel_capacity = 2});
  RunHandle run = executor.run(g, m);
  if (moves && env->rank() == 0) {
    // The routers sit on rank 0 (with read and motion.flow): commands go straight to them.
    int i = 0;
    for (int at : kMoves) {
      ++i;
      const auto deadline = Clock::now() + std::chrono::seconds(60);
      while ((result.dynamic->count < at || result.fused->count < at) && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      EXPECT_EQ(progress->produced, at) << "the source passed the move before frame " << at;
      run.migrate("motion.input", input_place(i));
      run.migrate("motion.median", median_place(i));
      const int next = i < static_cast<int>(std::size(kMoves)) ? kMoves[i] : kFrames;
      progress->allowed = next;
    }
  }
  run.wait();
  result.migrations = run.stats().migrations;
  result.effective = run.effective_mapping();
  return result;
}

::testing::AssertionResult same_bits(const Array& got, const Array& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "dtype or shape differ";
  if (std::memcmp(got.raw(), want.raw(), want.bytes()) != 0) return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

/// Largest |got − want| over the largest |want| (the maps' scale).
double relative_difference(const Array& got, const Array& want) {
  double diff = 0, scale = 0;
  for (std::int64_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(got.data<float>()[i] - want.data<float>()[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want.data<float>()[i])));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(SaliencyStateMigration, MapsUnchangedWhenTheStatefulTasksMoveMidStream) {
  if (kOnGpu)
    for (const auto& r : env->cluster().ranks)
      if (r.gpus.empty()) GTEST_SKIP() << "rank " << r.rank << " has no GPU";
  const Outcome still = run_fused(false);
  const Outcome moved = run_fused(true);
  if (env->rank() != 0) return;  // the sinks and the routers are on rank 0
  // Direct CPU calls, frame by frame: the run without moves gives them exactly.
  std::vector<Array> frames;
  for (int t = 0; t < kFrames; ++t) frames.push_back(pan_frame(t));
  MotionParams params;
  params.median_frames = 3;
  const test::ChainMaps want = test::chain_cpu(frames, params);
  ASSERT_EQ(still.dynamic->maps.size(), static_cast<std::size_t>(kFrames));
  ASSERT_EQ(still.fused->maps.size(), static_cast<std::size_t>(kFrames));
  ASSERT_EQ(moved.dynamic->maps.size(), static_cast<std::size_t>(kFrames));
  ASSERT_EQ(moved.fused->maps.size(), static_cast<std::size_t>(kFrames));
  for (int t = 0; t < kFrames; ++t) {
    EXPECT_TRUE(same_bits(still.dynamic->maps[t], want.dynamics[t])) << "without moves, Md of frame " << t;
    EXPECT_TRUE(same_bits(still.fused->maps[t], want.fused[t])) << "without moves, Mf of frame " << t;
    if (kOnGpu) {
      ASSERT_EQ(moved.dynamic->maps[t].shape(), still.dynamic->maps[t].shape());
      ASSERT_EQ(moved.fused->maps[t].shape(), still.fused->maps[t].shape());
      const double md = relative_difference(moved.dynamic->maps[t], still.dynamic->maps[t]);
      const double mf = relative_difference(moved.fused->maps[t], still.fused->maps[t]);
      std::printf("frame %2d: moved vs still, Md %.2e, Mf %.2e of the map's maximum\n", t, md, mf);
      EXPECT_LT(md, 1e-4) << "with moves, Md of frame " << t;
      EXPECT_LT(mf, 1e-4) << "with moves, Mf of frame " << t;
    } else {
      EXPECT_TRUE(same_bits(moved.dynamic->maps[t], still.dynamic->maps[t])) << "with moves, Md of frame " << t;
      EXPECT_TRUE(same_bits(moved.fused->maps[t], still.fused->maps[t])) << "with moves, Mf of frame " << t;
    }
  }
  // The pan moves the patch: the dynamic maps after the first frame are not all zero.
  float peak = 0;
  for (int t = 1; t < kFrames; ++t)
    for (std::int64_t i = 0; i < still.dynamic->maps[t].size(); ++i) peak = std::max(peak, still.dynamic->maps[t].data<float>()[i]);
  EXPECT_GT(peak, 0.0f);
  // Every command moved a task; both ended where the last move sent them.
  EXPECT_EQ(still.migrations, 0u);
  EXPECT_EQ(moved.migrations, 2 * std::size(kMoves));
  const int last = static_cast<int>(std::size(kMoves));
  EXPECT_EQ(moved.effective.at("motion.input"), input_place(last));
  EXPECT_EQ(moved.effective.at("motion.median"), median_place(last));
}

}  // namespace
}  // namespace weft::saliency
