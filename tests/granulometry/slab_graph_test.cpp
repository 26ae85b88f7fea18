// The slab graph over every rank's CPU (run alone and under mpiexec -n 2 and -n 4): many slabs
// per place, each read on the rank that computes it; the summed curve, the size map and the
// first pass's maximum distance equal the whole volume's, computed in one piece. The ranks of one
// host take turns (HostTurns), and their slab sources read in those turns.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/exec/executor.hpp"
#include "weft/cluster/host_segment.hpp"
#include "weft/cluster/host_turns.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/slab_tasks.hpp"
#include "weft/tasks/morphology/synthetic.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/settings.hpp"

using namespace weft;
using morphology::Element;

namespace {

Environment* env = nullptr;
const Shape kShape(37, 21, 18);

/// Every rank makes the same volume; a reader hands out its planes (and counts the calls).
const Array& volume() {
  static const Array v = morphology::overlapping_balls(kShape, 1, 6, 0.45, 5);
  return v;
}
Array read(std::int64_t first, std::int64_t count) {
  Array out = Array::host(DType::u8, Shape(count, kShape[1], kShape[2]));
  const std::size_t plane = static_cast<std::size_t>(kShape[1] * kShape[2]);
  std::memcpy(out.raw(), volume().data<std::uint8_t>() + first * static_cast<std::int64_t>(plane), out.bytes());
  return out;
}

/// The same planes as foreground bits (21 × 18 voxels: each plane's bits end mid-byte).
Array read_bits(std::int64_t first, std::int64_t count) { return morphology::foreground_bits(read(first, count), {}); }

/// Sums the rounds' curves and pastes the size maps (on rank 0).
struct Record {
  std::vector<std::int64_t> remaining, spectrum;
  Array size_map = Array::host(DType::i32, kShape);
};
class RecordSink final : public Task {
 public:
  RecordSink(morphology::SlabPlan plan, std::shared_ptr<Record> record)
      : Task("report"), plan_(plan), record_(std::move(record)) {
    for (int i = 0; i < plan.workers; ++i) maps.push_back(input<Array>("map." + std::to_string(i)));
  }
  In<std::vector<std::int64_t>> remaining = input<std::vector<std::int64_t>>("remaining");
  In<std::vector<std::int64_t>> spectrum = input<std::vector<std::int64_t>>("spectrum");
  std::vector<In<Array>> maps;
  void run(Context& ctx) override {
    auto add = [](std::vector<std::int64_t>& t, const std::vector<std::int64_t>& v) {
      t.resize(std::max(t.size(), v.size()), 0);
      for (std::size_t n = 0; n < v.size(); ++n) t[n] += v[n];
    };
    add(record_->remaining, ctx.take(remaining));
    add(record_->spectrum, ctx.take(spectrum));
    for (int i = 0; i < plan_.workers; ++i) {
      Array m = ctx.take(maps[static_cast<std::size_t>(i)]);
      const morphology::Slab s = plan_.slab(static_cast<int>(ctx.index()), i);
      if (s.empty()) continue;
      ASSERT_EQ(m.shape(), Shape(s.end - s.first, kShape[1], kShape[2]));
      std::memcpy(record_->size_map.data<std::int32_t>() + s.first * kShape[1] * kShape[2], m.raw(), m.bytes());
    }
  }

 private:
  morphology::SlabPlan plan_;
  std::shared_ptr<Record> record_;
};

Mapping map_slabs(const Graph& g, const std::vector<Place>& places) {
  morphology::SlabMapper slabs(places);
  AutoMapper automatic(DeviceChoice::cpu);
  return map_graph(g, env->cluster(), {&slabs, &automatic});
}

/// Runs the slab graph of `plan` over `places` (RecordSink on rank 0): the curve and size map it
/// put together there.
std::shared_ptr<Record> run_slabs(const morphology::SlabPlan& plan, const morphology::GranulometryOptions& options,
                                  const morphology::MaskReader& reader, std::int64_t chunk_bytes,
                                  const std::vector<Place>& places,
                                  std::shared_ptr<const morphology::SlabReadTurns> turns = nullptr) {
  auto record = std::make_shared<Record>();
  record->size_map.zero();
  Graph g;
  const auto slabs = morphology::add_slab_granulometry(g, plan, options, reader, chunk_bytes, std::move(turns));
  auto& sink = g.add<RecordSink>(plan, record);
  g.connect(slabs.remaining, sink.remaining);
  g.connect(slabs.spectrum, sink.spectrum);
  for (int i = 0; i < plan.workers; ++i) g.connect(slabs.size_maps[i], sink.maps[i]);
  const Mapping m = map_slabs(g, places);
  EXPECT_EQ(m.at("report"), Place::host(0));
  EXPECT_EQ(m.at("openings." + std::to_string(plan.workers - 1)),
            places[static_cast<std::size_t>(plan.workers - 1) % places.size()]);
  Executor ex({.channel_capacity = 2});
  ex.run(g, m).wait();
  return record;
}

TEST(SlabGraph, CurveAndSizeMapEqualTheWholeVolumesOnEveryRankCount) {
  const auto places = morphology::slab_places(env->cluster(), DeviceChoice::cpu);
  ASSERT_EQ(static_cast<int>(places.size()), env->size());
  for (Element e : {Element::octahedron, Element::cube, Element::ball}) {
    const int last = 5;
    // own 0: one slab per rank (balanced from 3 ranks); chunks of 5 planes, of whole slabs, and the default
    const std::int64_t chunk_5 = 5 * kShape[1] * kShape[2];
    for (auto [own, chunk_bytes] : {std::pair<std::int64_t, std::int64_t>{4, morphology::kSlabChunkBytes}, {37, 0},
                                    {0, chunk_5}, {4, chunk_5}, {37, chunk_5}})
    for (const auto& [reader, packed] : {std::pair<morphology::MaskReader, bool>{&read, false}, {&read_bits, true}}) {
      const auto plan = morphology::plan_slabs(kShape[0], kShape[1], kShape[2], morphology::halo_for(last),
                                               static_cast<int>(places.size()), own, 0, 0);
      const auto record = run_slabs(plan, {e, last, true, {}}, reader, chunk_bytes, places);
      if (env->rank() != 0) continue;
      const auto whole = morphology::granulometry_cpu(volume(), {e, last, true, {}});
      const std::string what = std::string(morphology::element_name(e)) + " own " + std::to_string(own) +
                               " chunk bytes " + std::to_string(chunk_bytes) + (packed ? " bits" : " u8");
      EXPECT_EQ(record->remaining, whole.remaining) << what;
      EXPECT_EQ(record->spectrum, whole.spectrum) << what;
      EXPECT_EQ(std::memcmp(record->size_map.raw(), whole.size_map.raw(), whole.size_map.bytes()), 0) << what;
    }
  }
}

TEST(SlabGraph, WorkersOfOneRankReadInTurnsAndShareTheirHalos) {
  // Three workers on this rank's CPU, the slabs balanced for reads in turns: the curve and the size
  // map are the whole volume's, and a halo plane is read at most twice (once where the slab before
  // kept it for the next one in time; which happens depends on the timing).
  if (env->size() > 1) GTEST_SKIP() << "one rank's workers";
  const std::vector<Place> places(3, Place::host(0));
  for (Element e : {Element::octahedron, Element::ball}) {
    const int last = 2;  // halo 6: the halos between slabs 0 | 1 and 1 | 2 do not meet
    auto plan = morphology::plan_slabs(kShape[0], kShape[1], kShape[2], morphology::halo_for(last), 3, 0, 0, 0);
    plan.read_cost = 0.05;
    ASSERT_TRUE(plan.balanced());
    ASSERT_GT(morphology::shared_planes(plan, 0).second, morphology::shared_planes(plan, 0).first);
    ASSERT_GT(morphology::shared_planes(plan, 1).second, morphology::shared_planes(plan, 1).first);
    std::mutex mutex;
    std::vector<int> reads(static_cast<std::size_t>(kShape[0]), 0);
    morphology::MaskReader counting = [&](std::int64_t first, std::int64_t count) {
      {
        const std::lock_guard lock(mutex);
        for (auto z = first; z < first + count; ++z) ++reads[static_cast<std::size_t>(z)];
      }
      return read_bits(first, count);
    };
    const auto record = run_slabs(plan, {e, last, true, {}}, counting, 2 * kShape[1] * kShape[2],  // chunks of 2 planes
                                  places);
    const auto whole = morphology::granulometry_cpu(volume(), {e, last, true, {}});
    EXPECT_EQ(record->remaining, whole.remaining) << morphology::element_name(e);
    EXPECT_EQ(record->spectrum, whole.spectrum) << morphology::element_name(e);
    EXPECT_EQ(std::memcmp(record->size_map.raw(), whole.size_map.raw(), whole.size_map.bytes()), 0);
    for (std::int64_t z = 0; z < kShape[0]; ++z) {
      bool shared = false;
      for (std::int64_t s = 0; s + 1 < plan.workers; ++s) {
        const auto seg = morphology::shared_planes(plan, s);
        shared = shared || (z >= seg.first && z < seg.second);
      }
      EXPECT_GE(reads[static_cast<std::size_t>(z)], 1) << z;
      EXPECT_LE(reads[static_cast<std::size_t>(z)], shared ? 2 : 1) << z;  // the slabs' halos meet nowhere
    }
    std::int64_t read = 0, planned = 0;
    for (int r : reads) read += r;
    for (int w = 0; w < plan.workers; ++w) planned += plan.slab(0, w).read_planes();
    std::printf("%s: %lld planes read of the slabs' %lld (the rest taken from the slab before)\n",
                std::string(morphology::element_name(e)).c_str(), static_cast<long long>(read),
                static_cast<long long>(planned));
  }
}

TEST(SlabGraph, ASourceReadsItsNextChunkWhileItWaitsForTheCurrentOne) {
  // One worker, chunks of 3 planes, each read taking 10 ms: 1 + kSlabReadAhead reads are in flight
  // at once (the next chunks' started before the current one is waited for), every plane is read
  // once, and the chunks, in any order of completion, give the whole volume's curve and size map.
  if (env->size() > 1) GTEST_SKIP() << "one rank's worker";
  const std::vector<Place> places(1, Place::host(0));
  const int last = 3;
  const auto plan = morphology::plan_slabs(kShape[0], kShape[1], kShape[2], morphology::halo_for(last), 1, 0, 0, 0);
  std::mutex mutex;
  int in_flight = 0, most = 0;
  std::vector<int> reads(static_cast<std::size_t>(kShape[0]), 0);
  morphology::MaskReader slow = [&](std::int64_t first, std::int64_t count) {
    {
      const std::lock_guard lock(mutex);
      most = std::max(most, ++in_flight);
      for (auto z = first; z < first + count; ++z) ++reads[static_cast<std::size_t>(z)];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    Array bits = read_bits(first, count);
    const std::lock_guard lock(mutex);
    --in_flight;
    return bits;
  };
  const auto record = run_slabs(plan, {Element::cube, last, true, {}}, slow, 3 * kShape[1] * kShape[2], places);
  const auto whole = morphology::granulometry_cpu(volume(), {Element::cube, last, true, {}});
  EXPECT_EQ(record->remaining, whole.remaining);
  EXPECT_EQ(record->spectrum, whole.spectrum);
  EXPECT_EQ(std::memcmp(record->size_map.raw(), whole.size_map.raw(), whole.size_map.bytes()), 0);
  EXPECT_EQ(most, 1 + morphology::kSlabReadAhead);
  for (std::int64_t z = 0; z < kShape[0]; ++z) EXPECT_EQ(reads[static_cast<std::size_t>(z)], 1) << z;
}

/// Whether every rank is on one host (not when WEFT_SEPARATE_HOSTS makes each rank a host of its
/// own: then the turns and the memory shared by the ranks of a host are not used).
bool ranks_on_one_host() {
  for (const RankInfo& r : env->cluster().ranks)
    if (r.host != env->cluster().ranks.front().host) return false;
  return true;
}

/// Seconds on the host's monotonic clock (the same in every process of a host).
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// Every rank's values, in rank order.
std::vector<double> gather(const std::vector<double>& mine) {
  if (!env->distributed() || env->size() == 1) return mine;
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(env->size())), offsets(counts.size());
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) offsets[r] = total, total += counts[r];
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

TEST(HostTurns, TheRanksOfAHostTakeTheirTurnsInOrder) {
  // Each rank takes turn `host_index` and holds it 20 ms: no two turns overlap, in index order.
  HostTurns turns;  // collective: made before any rank skips
  if (!ranks_on_one_host()) GTEST_SKIP() << "the ranks are on hosts of their own";
  EXPECT_EQ(turns.host_ranks(), env->size());  // one host here
  ASSERT_TRUE(turns.wait(turns.host_index()));
  const double start = now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double end = now();
  turns.end(turns.host_index());
  const auto all = gather({static_cast<double>(turns.host_index()), start, end});
  std::vector<std::pair<double, double>> by_index(all.size() / 3);
  for (std::size_t r = 0; r < by_index.size(); ++r)
    by_index[static_cast<std::size_t>(all[3 * r])] = {all[3 * r + 1], all[3 * r + 2]};
  for (std::size_t i = 1; i < by_index.size(); ++i) EXPECT_LE(by_index[i - 1].second, by_index[i].first) << i;
  EXPECT_TRUE(turns.wait(turns.host_ranks()));  // every turn has ended
  EXPECT_EQ(turns.ended(), turns.host_ranks());
  turns.end(0);  // an earlier end changes nothing
  EXPECT_EQ(turns.ended(), turns.host_ranks());
}

TEST(HostTurns, RanksAgreeOnWhetherToTakeTurns) {
  // WEFT_HOST_TURNS=0 on rank 0 alone (as when mpirun does not pass it to other hosts) turns the
  // turns off on every rank; the places of one rank never take turns between ranks.
  const auto places = morphology::slab_places(env->cluster(), DeviceChoice::cpu);
  EXPECT_EQ(morphology::ranks_read_in_turns(places, env->cluster()), env->size() > 1 && ranks_on_one_host());
  if (env->rank() == 0) setenv("WEFT_HOST_TURNS", "0", 1);
  reload_settings();
  EXPECT_FALSE(morphology::ranks_read_in_turns(places, env->cluster()));
  if (env->rank() == 0) unsetenv("WEFT_HOST_TURNS");
  reload_settings();
  EXPECT_FALSE(morphology::ranks_read_in_turns({Place::host(0), Place::host(0)}, env->cluster()));
  EXPECT_FALSE(env->every_rank(env->rank() != 0));  // rank 0 says no
  EXPECT_TRUE(env->every_rank(true));
}

TEST(HostSegment, TheRanksOfAHostSeeOneSegment) {
  // Every rank reserves and maps its own page of the segment and writes its host index there; after a
  // barrier each sees every rank's value. A reservation past the end is refused; the host has
  // room for a page and, where its ranks share /dev/shm, none for an exabyte.
  const std::size_t page = 4096;
  HostSegment segment(page * static_cast<std::size_t>(env->size()), "a test");
  ASSERT_NE(segment.data(), nullptr);
  if (!ranks_on_one_host()) {
    EXPECT_EQ(segment.host_ranks(), 1);  // this rank's own memory
    GTEST_SKIP() << "the ranks are on hosts of their own";
  }
  EXPECT_EQ(segment.host_ranks(), env->size());  // one host here
  EXPECT_GE(segment.bytes(), page * static_cast<std::size_t>(env->size()));
  const auto mine = page * static_cast<std::size_t>(segment.host_index());
  ASSERT_TRUE(segment.reserve(mine, page));
  segment.map(mine, page, true);
  auto* bytes = static_cast<std::byte*>(segment.data());
  std::int64_t value = 1000 + segment.host_index();
  std::memcpy(bytes + mine, &value, sizeof value);
  EXPECT_FALSE(segment.reserve(segment.bytes() - page, 2 * page));
  EXPECT_TRUE(segment.room(page));
  if (segment.host_ranks() > 1) {
    EXPECT_FALSE(segment.room(std::size_t{1} << 60));
  }
  if (env->distributed()) MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < segment.host_ranks(); ++i) {
    segment.map(page * static_cast<std::size_t>(i), page, false);
    std::memcpy(&value, bytes + page * static_cast<std::size_t>(i), sizeof value);
    EXPECT_EQ(value, 1000 + i) << i;
  }
  if (env->distributed()) MPI_Barrier(MPI_COMM_WORLD);  // no rank unmaps before all have read
}

TEST(HostTurns, AWaitEndsWhenItsStopSaysSo) {
  HostTurns turns;  // collective: every rank makes one
  int polls = 0;
  EXPECT_FALSE(turns.wait(1000, [&] { return ++polls == 3; }));
  EXPECT_EQ(polls, 3);
  EXPECT_TRUE(turns.wait(0));
}

TEST(SlabGraph, TheRanksOfAHostReadTheirSlabsInTurns) {
  // One CPU place per rank, one round (own 0, N = 1: halos that do not meet) or several (own 9,
  // N = 1: the halos' slots written again once taken; own 4, N = 3: halos that meet, read by both
  // slabs), chunks of 5 planes, each read taking 3 ms: slab (round r, worker w) is turn r · W + w
  // of the host, and every read of a turn ends before the first read of the next one starts.
  // Where the halos do not meet, every plane is read once over all ranks (the first slab hands
  // the halo two slabs share to the second through HostHalos, WEFT_HALO_HANDOVER=1 on every
  // rank), or, by default, the planes of those halos twice. The curve is the whole volume's.
  const auto places = morphology::slab_places(env->cluster(), DeviceChoice::cpu);
  const auto turns = morphology::slab_read_turns(places, env->cluster(), morphology::halo_handover_requested());
  if (env->size() == 1 || !ranks_on_one_host()) {
    EXPECT_EQ(turns, nullptr);  // one rank's sources take turns through ReadTurn; hosts of their own none
    GTEST_SKIP() << "the turns of several ranks of one host";
  }
  ASSERT_NE(turns, nullptr);
  EXPECT_FALSE(turns->handover);  // by default
  const std::int64_t chunk_planes = 5, chunk = chunk_planes * kShape[1] * kShape[2];
  for (const auto& [own, last, handed] :
       {std::tuple<std::int64_t, int, bool>{0, 1, true}, {0, 1, false}, {9, 1, true}, {4, 3, true}, {4, 3, false}}) {
    if (handed || env->rank() + 1 < env->size()) setenv("WEFT_HALO_HANDOVER", "1", 1);  // not: one rank says no
    reload_settings();
    const auto these = morphology::slab_read_turns(places, env->cluster(), morphology::halo_handover_requested());
    unsetenv("WEFT_HALO_HANDOVER");
    reload_settings();
    EXPECT_EQ(these->handover, handed);
    const auto plan = morphology::plan_slabs(kShape[0], kShape[1], kShape[2], morphology::halo_for(last),
                                             static_cast<int>(places.size()), own, 0, 0);
    std::mutex mutex;
    std::vector<std::pair<double, double>> calls;  // this rank's reads: start, end
    std::vector<double> reads(static_cast<std::size_t>(kShape[0]), 0.0);  // per plane, this rank's
    morphology::MaskReader timed = [&](std::int64_t first, std::int64_t count) {
      const double start = now();
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      Array bits = read_bits(first, count);
      const std::lock_guard lock(mutex);
      calls.emplace_back(start, now());
      for (auto z = first; z < first + count; ++z) reads[static_cast<std::size_t>(z)] += 1;
      return bits;
    };
    const auto record = run_slabs(plan, {Element::octahedron, last, true, {}}, timed, chunk, places, these);
    // This rank's worker reads its slabs one after the other, each in its slab_pieces calls but
    // the halo it shares with the slab before where that one's rank hands it over (the slabs
    // alternate ranks): {turn, first start, last end} per slab.
    std::sort(calls.begin(), calls.end());
    std::vector<double> mine;
    std::size_t at = 0;
    const int w = env->rank();
    for (int r = 0; r < plan.rounds(); ++r) {
      const std::int64_t number = std::int64_t{r} * plan.workers + w;
      const auto pieces = morphology::slab_pieces(plan, number, chunk_planes);
      std::size_t n = pieces.size();
      if (handed && number > 0)
        n -= static_cast<std::size_t>(std::count_if(pieces.begin(), pieces.end(), [](const auto& p) { return p.take; }));
      if (n == 0) continue;
      ASSERT_LE(at + n, calls.size());
      double end = 0;
      for (std::size_t k = at; k < at + n; ++k) end = std::max(end, calls[k].second);
      mine.insert(mine.end(), {static_cast<double>(turns->turn(r, w)), calls[at].first, end});
      at += n;
    }
    EXPECT_EQ(at, calls.size());
    const auto all = gather(mine);
    std::vector<std::array<double, 3>> slabs_read;
    for (std::size_t k = 0; k + 2 < all.size(); k += 3) slabs_read.push_back({all[k], all[k + 1], all[k + 2]});
    std::sort(slabs_read.begin(), slabs_read.end());
    for (std::size_t k = 1; k < slabs_read.size(); ++k) {
      EXPECT_EQ(slabs_read[k][0], slabs_read[k - 1][0] + 1) << "own " << own << ", handed " << handed;
      EXPECT_LE(slabs_read[k - 1][2], slabs_read[k][1]) << "own " << own << ", handed " << handed << ", turn " << slabs_read[k][0];
    }
    MPI_Allreduce(MPI_IN_PLACE, reads.data(), static_cast<int>(reads.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (own != 4) {  // one round, or (own 9, halo 4) several whose halos do not meet either
      for (std::int64_t s = 0; s + 1 < plan.slabs(); ++s)  // the halos do not meet: each is shared
        ASSERT_GT(morphology::shared_planes(plan, s).second, morphology::shared_planes(plan, s).first) << s;
      for (std::int64_t z = 0; z < kShape[0]; ++z) {
        bool shared = false;
        for (std::int64_t s = 0; s + 1 < plan.slabs(); ++s) {
          const auto seg = morphology::shared_planes(plan, s);
          shared = shared || (z >= seg.first && z < seg.second);
        }
        EXPECT_EQ(reads[static_cast<std::size_t>(z)], shared && !handed ? 2.0 : 1.0)
            << "plane " << z << ", handed " << handed;
      }
    }
    if (env->rank() == 0) {
      const auto whole = morphology::granulometry_cpu(volume(), {Element::octahedron, last, true, {}});
      EXPECT_EQ(record->remaining, whole.remaining) << "own " << own << ", handed " << handed;
      EXPECT_EQ(std::memcmp(record->size_map.raw(), whole.size_map.raw(), whole.size_map.bytes()), 0) << "own " << own << ", handed " << handed;
    }
  }
}

/// What the HostHalos tests hand over: one CPU place per rank (two ranks or more), a plan of
/// several rounds for a 200-plane volume (own 9, N = 1) read in chunks of 5 planes; the first
/// piece of its halo that slab 1 takes, and that of slab `later` = 1 + 2W, which has the same slot.
class HostHalos : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto places = morphology::slab_places(env->cluster(), DeviceChoice::cpu);
    turns = morphology::slab_read_turns(places, env->cluster(), true);  // collective
    if (env->size() == 1 || !ranks_on_one_host()) GTEST_SKIP() << "halos between ranks of one host";
    plan = morphology::plan_slabs(200, kShape[1], kShape[2], morphology::halo_for(1),
                                  static_cast<int>(places.size()), 9, 0, 0);
    later = 1 + 2 * std::int64_t{plan.workers};
    piece = first_taken(1);
    piece_later = first_taken(later);
  }
  [[nodiscard]] morphology::SlabPiece first_taken(std::int64_t n) const {
    const auto pieces = morphology::slab_pieces(plan, n, chunk_planes);
    return *std::find_if(pieces.begin(), pieces.end(), [](const auto& p) { return p.take; });
  }
  static constexpr std::int64_t chunk_planes = 5;
  std::shared_ptr<const morphology::SlabReadTurns> turns;
  morphology::SlabPlan plan;
  std::int64_t later = 0;
  morphology::SlabPiece piece, piece_later;
};

/// A stop that says so on its n-th poll.
std::function<bool()> polls(int n) {
  return [n, k = 0]() mutable { return ++k >= n; };
}

TEST_F(HostHalos, AHandOverOfTheHaloGoesThroughOrStopsWhenAsked) {
  // Slab 1 (rank 1) takes its first halo piece once slab 0's rank has put it, bit for bit. Slab
  // 1 + 2W has the same slot: before slab 1 has taken its halo, a put for it waits and gives up
  // when its stop says so, as does a take whose piece nobody puts; once taken, the put goes through.
  ASSERT_GT(plan.slabs(), later);
  const morphology::HostHalos halos(plan, chunk_planes, *turns);  // collective
  ASSERT_TRUE(halos.available());
  EXPECT_TRUE(halos.linked(1));
  EXPECT_TRUE(halos.linked(later));
  EXPECT_FALSE(halos.linked(0));
  const std::int64_t plane_bytes = morphology::foreground_plane_bytes(kShape[1], kShape[2]);
  Array bits = Array::host(DType::u8, Shape(piece.end - piece.first, plane_bytes));
  for (std::int64_t i = 0; i < bits.size(); ++i) bits.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(i * 7 + 3);
  const Array bits_later = read_bits(0, piece_later.end - piece_later.first);
  if (env->rank() == 0) {
    ASSERT_TRUE(halos.put(1, 0, piece.first, bits, {}));
    EXPECT_FALSE(halos.put(later, 0, piece_later.first, bits_later, polls(3)));  // slab 1 has not taken its halo
  }
  if (env->rank() == 1) {
    const auto taken = halos.take(1, 0, piece.first, piece.end, polls(1000000));
    ASSERT_TRUE(taken.has_value());
    ASSERT_EQ(taken->bytes(), bits.bytes());
    EXPECT_EQ(std::memcmp(taken->raw(), bits.raw(), bits.bytes()), 0);
    EXPECT_FALSE(halos.take(later, 0, piece_later.first, piece_later.end, polls(3)).has_value());  // not put
  }
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0's refused put came before slab 1 took its halo
  if (env->rank() == 1) halos.taken(1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (env->rank() == 0) {
    EXPECT_TRUE(halos.put(later, 0, piece_later.first, bits_later, polls(1000000)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (env->rank() == 1) {
    const auto taken = halos.take(later, 0, piece_later.first, piece_later.end, polls(1000000));
    ASSERT_TRUE(taken.has_value());
    EXPECT_EQ(std::memcmp(taken->raw(), bits_later.raw(), bits_later.bytes()), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // no rank unmaps before the last take
}

TEST_F(HostHalos, ALaterOneTakesTheSegmentOverWithFreshFlags) {
  // Two HostHalos one after the other: the second holds the first's segment (its pages already
  // given and mapped), and the flags the first set do not count for it: slab 1's halo, put and
  // taken in the first, is neither put nor taken in the second until it is again.
  // Any planes do (the plan's volume is deeper than the test volume): those from 0.
  const Array bits = read_bits(0, piece.end - piece.first);
  const Array bits_later = read_bits(0, piece_later.end - piece_later.first);
  std::int64_t use = 0;
  {
    const morphology::HostHalos first(plan, chunk_planes, *turns);  // collective
    ASSERT_TRUE(first.available());
    use = first.segment_use();
    EXPECT_GE(use, 1);
    if (env->rank() == 0) {
      ASSERT_TRUE(first.put(1, 0, piece.first, bits, {}));
    }
    if (env->rank() == 1) {
      ASSERT_TRUE(first.take(1, 0, piece.first, piece.end, polls(1000000)).has_value());
      first.taken(1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const morphology::HostHalos second(plan, chunk_planes, *turns);
  ASSERT_TRUE(second.available());
  EXPECT_EQ(second.segment_use(), use + 1);
  if (env->rank() == 1) {
    EXPECT_FALSE(second.take(1, 0, piece.first, piece.end, polls(3)).has_value());  // not put in this one
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (env->rank() == 0) {
    ASSERT_TRUE(second.put(1, 0, piece.first, bits, {}));
    EXPECT_FALSE(second.put(later, 0, piece_later.first, bits_later, polls(3)));  // slab 1 not taken in this one
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (env->rank() == 1) {
    const auto taken = second.take(1, 0, piece.first, piece.end, polls(1000000));
    ASSERT_TRUE(taken.has_value());
    EXPECT_EQ(std::memcmp(taken->raw(), bits.raw(), bits.bytes()), 0);
    second.taken(1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (env->rank() == 0) {
    EXPECT_TRUE(second.put(later, 0, piece_later.first, bits_later, polls(1000000)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(SlabGraph, FirstPassFindsTheLargestDistance) {
  const auto places = morphology::slab_places(env->cluster(), DeviceChoice::cpu);
  for (Element e : {Element::octahedron, Element::ball}) {
    const std::int64_t want = morphology::max_distance_cpu(volume(), e);
    for (std::int64_t halo : {1, 40})
    for (const morphology::MaskReader& reader : {morphology::MaskReader(&read), morphology::MaskReader(&read_bits)}) {
      const auto plan = morphology::plan_slabs(kShape[0], kShape[1], kShape[2], halo,
                                               static_cast<int>(places.size()), 6, 0, 0);
      auto result = std::make_shared<morphology::MaxDistance>();
      Graph g;
      morphology::add_slab_max_distance(g, plan, e, reader, env->size(), result);
      Executor ex({.channel_capacity = 2});
      ex.run(g, map_slabs(g, places)).wait();
      // Every rank knows the answer.
      EXPECT_EQ(result->rounds_seen, plan.rounds());
      if (halo >= kShape[0]) {
        EXPECT_TRUE(result->exact);
        EXPECT_EQ(result->value, want) << morphology::element_name(e);
      } else if (result->exact) {
        EXPECT_EQ(result->value, want) << morphology::element_name(e);
      } else {
        EXPECT_GT(want, morphology::radius_limit(e, halo)) << morphology::element_name(e);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  Environment environment(argc, argv);
  env = &environment;
  return RUN_ALL_TESTS();
}
