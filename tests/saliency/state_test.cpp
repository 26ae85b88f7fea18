// State of the dynamic pathway's two stateful tasks (motion.input: the previous working frame;
// motion.median: the last n residual flows), handed over by save() and load() as a migration does:
// fired directly on synthetic frames, the state saved after frame k and loaded into a fresh object
// (another rank's instance) and into the same object after stop() and start() (an instance of the
// same rank), then every later output compared bit for bit with an object that never moved.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "motion_frames.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

constexpr std::int64_t kH = 48, kW = 64;
constexpr int kFrames = 9;

/// A context to fire a task outside a graph: the given inputs, one slot per output.
class DirectContext final : public Context {
 public:
  DirectContext(const Task& task, std::vector<Value> inputs)
      : task_(task), in_(std::move(inputs)), out_(task.outputs().size()) {}
  Array alloc(DType type, Shape shape) override { return Array::host(type, shape); }
  void end_stream() override {}
  [[nodiscard]] std::uint64_t index() const override { return 0; }
  [[nodiscard]] const Place& place() const override { return place_; }
  [[nodiscard]] void* stream() const override { return nullptr; }
  [[nodiscard]] const Task& task() const override { return task_; }
  [[nodiscard]] Array output(std::size_t i) const { return std::get<Array>(out_.at(i)); }

 protected:
  Value& input_value(int i) override { return in_.at(static_cast<std::size_t>(i)); }
  void put_value(int i, Value v) override { out_.at(static_cast<std::size_t>(i)) = std::move(v); }

 private:
  const Task& task_;
  Place place_ = Place::host();
  std::vector<Value> in_, out_;
};

/// Fires `task` once on `input`; its outputs, in port order.
std::vector<Array> fire(Task& task, const Array& input) {
  DirectContext ctx(task, {Value(input)});
  task.run(ctx);
  std::vector<Array> out;
  for (std::size_t i = 0; i < task.outputs().size(); ++i) out.push_back(ctx.output(i));
  return out;
}
void start(Task& task) {
  DirectContext ctx(task, {});
  task.start(ctx);
}
void stop(Task& task) {
  DirectContext ctx(task, {});
  task.stop(ctx);
}
std::vector<std::byte> saved(const Task& task) {
  std::vector<std::byte> state;
  task.save(state);
  return state;
}

/// Same dtype, shape and bytes.
::testing::AssertionResult same_bits(const Array& got, const Array& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "dtype or shape differ";
  if (std::memcmp(got.raw(), want.raw(), want.bytes()) != 0) {
    std::size_t first = 0;  // first differing byte
    while (static_cast<const unsigned char*>(got.raw())[first] == static_cast<const unsigned char*>(want.raw())[first])
      ++first;
    return ::testing::AssertionFailure() << "values differ from byte " << first << " of " << want.bytes();
  }
  return ::testing::AssertionSuccess();
}

/// u8 frames [48, 64] of a patch moving under a camera pan: consecutive frames all differ.
std::vector<Array> pan_frames() {
  std::vector<Array> frames;
  for (int t = 0; t < kFrames; ++t) frames.push_back(test::moving_patch_frame(kH, kW, t, 1.0, 0.5, 1.5, -1.0, 14, 16, 10));
  return frames;
}

/// Outputs of every firing of a task over `inputs`, by a task that is saved after input `k` (k = -1:
/// before any) and whose state goes on in a fresh object (`fresh`) or in itself after stop, start
/// and load (`same`), next to those of a task that never moves (`still`).
struct Handover {
  std::vector<std::vector<Array>> still, fresh, same;
  std::vector<std::byte> state, state_after_load;
  std::vector<Array> unloaded;  ///< the first firing after k by a fresh object that loaded nothing
};
template <class Make> Handover hand_over_after(const Make& make, const std::vector<Array>& inputs, int k) {
  Handover h;
  auto still = make(), moved = make(), fresh = make(), unloaded = make();
  for (const Array& in : inputs) h.still.push_back(fire(*still, in));
  for (int t = 0; t <= k; ++t) (void)fire(*moved, inputs[t]);
  h.state = saved(*moved);
  // Another rank's instance: a fresh object, started then loaded.
  start(*fresh);
  fresh->load(h.state);
  h.state_after_load = saved(*fresh);
  // An instance of the same rank: the same object, stopped then started and loaded.
  stop(*moved);
  start(*moved);
  moved->load(h.state);
  for (std::size_t t = static_cast<std::size_t>(k + 1); t < inputs.size(); ++t) {
    h.fresh.push_back(fire(*fresh, inputs[t]));
    h.same.push_back(fire(*moved, inputs[t]));
  }
  h.unloaded = fire(*unloaded, inputs[static_cast<std::size_t>(k + 1)]);
  return h;
}

/// Every output after the hand-over equals the still task's, bit for bit; the state saved again
/// right after load() is the same bytes.
void expect_same_outputs(const Handover& h, int k, const std::string& what) {
  EXPECT_TRUE(h.state_after_load == h.state) << what << ": state saved after frame " << k << " differs once loaded";
  for (std::size_t j = 0; j < h.fresh.size(); ++j) {
    const std::size_t t = static_cast<std::size_t>(k + 1) + j;
    for (std::size_t o = 0; o < h.still[t].size(); ++o) {
      EXPECT_TRUE(same_bits(h.fresh[j][o], h.still[t][o])) << what << ", fresh object, saved after " << k << ": frame "
                                                            << t << " output " << o;
      EXPECT_TRUE(same_bits(h.same[j][o], h.still[t][o])) << what << ", same object, saved after " << k << ": frame "
                                                           << t << " output " << o;
    }
  }
}

TEST(SaliencyState, MotionInputGoesOnBitForBitAfterSaveAndLoadAtEveryFrame) {
  const std::vector<Array> frames = pan_frames();
  for (int k : {1, 2}) {
    auto make = [k] { return std::make_unique<MotionInput>("motion.input", k); };
    for (int after = -1; after < kFrames - 1; ++after) {
      const Handover h = hand_over_after(make, frames, after);
      expect_same_outputs(h, after, "k " + std::to_string(k));
      // The outputs: cur = the working frame, prev = the one before (frame 0: itself).
      const std::size_t next = static_cast<std::size_t>(after + 1);
      ASSERT_TRUE(same_bits(h.still[next][0], motion_frame_cpu(frames[next], k)));
      ASSERT_TRUE(same_bits(h.still[next][1], motion_frame_cpu(frames[after < 0 ? 0 : next - 1], k)));
      // The test can see a lost state: without it the first frame after the move is its own prev.
      if (after >= 0) {
        EXPECT_FALSE(same_bits(h.unloaded[1], h.still[next][1])) << "k " << k << " after " << after;
      }
    }
  }
}

TEST(SaliencyState, TemporalMedianGoesOnBitForBitAfterSaveAndLoadAtEveryFrame) {
  // Its inputs: the residual flows of the pan at K = 2, as the pathway computes them.
  const std::vector<Array> frames = pan_frames();
  const MotionParams params;
  std::vector<Array> flows;
  for (int t = 0; t < kFrames; ++t)
    flows.push_back(residual_flow_cpu(motion_frame_cpu(frames[t], 2), motion_frame_cpu(frames[t > 0 ? t - 1 : 0], 2), params));
  for (int n : {1, 3, 5}) {
    auto make = [n] { return std::make_unique<TemporalMedian>("motion.median", n); };
    for (int after = -1; after < kFrames - 1; ++after) {
      const Handover h = hand_over_after(make, flows, after);
      expect_same_outputs(h, after, "n " + std::to_string(n));
      // The output: the median of the last n flows' magnitudes.
      const std::size_t next = static_cast<std::size_t>(after + 1);
      const std::size_t first = next + 1 >= static_cast<std::size_t>(n) ? next + 1 - n : 0;
      ASSERT_TRUE(same_bits(h.still[next][0], temporal_median_cpu({flows.begin() + first, flows.begin() + next + 1})));
      // The test can see a lost history (n > 1: the median of one flow differs).
      if (after >= 0 && n > 1) {
        EXPECT_FALSE(same_bits(h.unloaded[0], h.still[next][0])) << "n " << n << " after " << after;
      }
    }
  }
}

TEST(SaliencyState, TruncatedStateIsAnError) {
  const std::vector<Array> frames = pan_frames();
  MotionInput input("motion.input", 1);
  (void)fire(input, frames[0]);
  std::vector<std::byte> state = saved(input);
  TemporalMedian median("motion.median", 3);
  (void)fire(median, residual_flow_cpu(motion_frame_cpu(frames[1], 1), motion_frame_cpu(frames[0], 1), MotionParams{}));
  std::vector<std::byte> history = saved(median);
  for (std::size_t cut : {std::size_t{0}, std::size_t{4}, std::size_t{20}, std::size_t{100}}) {
    MotionInput fresh_input("motion.input", 1);
    EXPECT_THROW(fresh_input.load(std::span(state).first(cut)), Error) << cut;
    TemporalMedian fresh_median("motion.median", 3);
    EXPECT_THROW(fresh_median.load(std::span(history).first(cut)), Error) << cut;
  }
}

/// A saved state with one 8-byte word replaced (word 0: motion.input's flag or motion.median's count;
/// then an array header: ndim and three extents).
std::vector<std::byte> with_word(std::vector<std::byte> state, std::size_t word, std::int64_t value) {
  std::memcpy(state.data() + word * sizeof value, &value, sizeof value);
  return state;
}

TEST(SaliencyState, CorruptStateIsAnErrorAndLeavesTheTaskAsItWas) {
  const std::vector<Array> frames = pan_frames();
  MotionInput input("motion.input", 1);
  (void)fire(input, frames[0]);
  const std::vector<std::byte> state = saved(input);
  TemporalMedian median("motion.median", 3);
  const Array flow = residual_flow_cpu(motion_frame_cpu(frames[1], 1), motion_frame_cpu(frames[0], 1), MotionParams{});
  (void)fire(median, flow);
  (void)fire(median, flow);
  const std::vector<std::byte> history = saved(median);
  constexpr std::int64_t kHuge = std::int64_t{1} << 32;  // kHuge² wraps to 0 elements in 64 bits
  // Flag, rank, extents (negative, zero, or whose product overflows) of motion.input's frame.
  for (const auto& [word, value] : std::vector<std::pair<std::size_t, std::int64_t>>{
           {0, 2}, {0, -1}, {1, 1}, {1, 3}, {1, 4}, {2, -48}, {2, 0}, {2, kHuge}, {3, kHuge}}) {
    MotionInput fresh("motion.input", 1);
    (void)fire(fresh, frames[2]);
    const std::vector<std::byte> before = saved(fresh);
    EXPECT_THROW(fresh.load(with_word(state, word, value)), Error) << "word " << word << " = " << value;
    EXPECT_TRUE(saved(fresh) == before) << "state changed; word " << word << " = " << value;
  }
  // Both extents 2^32 (a product of 2^64 elements: 0 in 64 bits), and a byte more than was saved.
  {
    MotionInput fresh("motion.input", 1);
    EXPECT_THROW(fresh.load(with_word(with_word(state, 2, kHuge), 3, kHuge)), Error);
    std::vector<std::byte> longer = state;
    longer.push_back(std::byte{0});
    EXPECT_THROW(fresh.load(longer), Error);
    longer = history;
    longer.push_back(std::byte{0});
    TemporalMedian fresh_median("motion.median", 3);
    EXPECT_THROW(fresh_median.load(longer), Error);
  }
  // Count (negative, above the task's frames), then the first flow's rank and extents (a flow is [h, w, 2]).
  for (const auto& [word, value] : std::vector<std::pair<std::size_t, std::int64_t>>{
           {0, -1}, {0, 4}, {1, 2}, {1, 4}, {2, kHuge}, {3, kHuge}, {4, 3}, {4, 0}}) {
    TemporalMedian fresh("motion.median", 3);
    (void)fire(fresh, flow);
    const std::vector<std::byte> before = saved(fresh);
    EXPECT_THROW(fresh.load(with_word(history, word, value)), Error) << "word " << word << " = " << value;
    EXPECT_TRUE(saved(fresh) == before) << "state changed; word " << word << " = " << value;
  }
}

}  // namespace
}  // namespace weft::saliency
