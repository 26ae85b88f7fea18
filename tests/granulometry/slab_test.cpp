// Slabs with halos: per-slab counts of own planes sum to the whole volume's curve (and to the
// literal definition), size maps concatenate, capped maximum distances are exact where claimed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "brute_force.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/tasks/morphology/slab_tasks.hpp"
#include "weft/tasks/morphology/slabs.hpp"
#include "weft/tasks/morphology/synthetic.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

using morphology::Element;
constexpr Element kElements[] = {Element::octahedron, Element::cube, Element::ball};

/// Planes [first, first + count) of a host array [Z, Y, X].
Array planes(const Array& a, std::int64_t first, std::int64_t count) {
  Array out = Array::host(a.dtype(), Shape(count, a.shape()[1], a.shape()[2]));
  const std::size_t plane = static_cast<std::size_t>(a.shape()[1] * a.shape()[2]) * dtype_size(a.dtype());
  std::memcpy(out.raw(), static_cast<const char*>(a.raw()) + static_cast<std::size_t>(first) * plane, out.bytes());
  return out;
}

/// The curve and size map of a mask computed slab by slab (the plan's halo), summed.
morphology::GranulometryResult by_slabs(const Array& mask, Element e, int max_size, const morphology::SlabPlan& plan) {
  morphology::GranulometryResult total;
  total.remaining.assign(static_cast<std::size_t>(max_size) + 1, 0);
  total.spectrum = total.remaining;
  total.size_map = Array::host(DType::i32, mask.shape());
  for (int round = 0; round < plan.rounds(); ++round)
    for (int w = 0; w < plan.workers; ++w) {
      const morphology::Slab s = plan.slab(round, w);
      if (s.empty()) continue;
      morphology::GranulometryOptions o{e, max_size, true, {}};
      o.first_plane = s.first - s.read_first;
      o.end_plane = s.end - s.read_first;
      auto r = morphology::granulometry_cpu(planes(mask, s.read_first, s.read_planes()), o);
      for (int n = 0; n <= max_size; ++n) {
        total.remaining[n] += r.remaining[n];
        total.spectrum[n] += r.spectrum[n];
      }
      EXPECT_EQ(r.size_map.shape(), Shape(s.end - s.first, mask.shape()[1], mask.shape()[2]));
      const std::size_t plane = static_cast<std::size_t>(mask.shape()[1] * mask.shape()[2]) * 4;
      std::memcpy(static_cast<char*>(total.size_map.raw()) + static_cast<std::size_t>(s.first) * plane,
                  r.size_map.raw(), r.size_map.bytes());
    }
  return total;
}

TEST(SlabPlan, CoversTheVolumeOnceWithClampedHalos) {
  const morphology::SlabPlan plan = morphology::plan_slabs(23, 4, 5, 6, 3, 4, 0, 0);
  EXPECT_EQ(plan.slabs(), 6);
  EXPECT_EQ(plan.rounds(), 2);
  std::vector<int> seen(23, 0);
  for (int round = 0; round < plan.rounds(); ++round)
    for (int w = 0; w < plan.workers; ++w) {
      const morphology::Slab s = plan.slab(round, w);
      for (auto z = s.first; z < s.end; ++z) ++seen[static_cast<std::size_t>(z)];
      if (s.empty()) continue;
      EXPECT_EQ(s.read_first, std::max<std::int64_t>(0, s.first - 6));
      EXPECT_EQ(s.read_end, std::min<std::int64_t>(23, s.end + 6));
    }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  EXPECT_EQ(plan.slab(1, 2).first, 20);  // slab 5 = round 1, worker 2: the last 3 planes
  EXPECT_TRUE(plan.slab(2, 0).empty());   // past the volume
}

TEST(SlabPlan, BudgetDecidesThePlanesAndRefusesTooSmall) {
  // 10 bytes per voxel of 8x8 planes: 640 bytes a plane; 20 planes fit 12800 bytes, minus 2x4 of halo.
  const auto plan = morphology::plan_slabs(100, 8, 8, 4, 2, 0, 12800, 10);
  EXPECT_EQ(plan.planes, 12);
  EXPECT_EQ(morphology::plan_slabs(10, 8, 8, 4, 1, 0, 12800, 10).planes, 10);  // the whole volume, no halo
  EXPECT_THROW((void)morphology::plan_slabs(100, 8, 8, 10, 2, 0, 12800, 10), ConfigError);
}

/// Own planes of each slab of a plan's single round, checking that the slabs tile the volume,
/// carry their clamped halos and read no more planes than the plan's max_read (the memory budget
/// holds; without one, a uniform middle slab).
std::vector<std::int64_t> own_planes_of_one_round(const morphology::SlabPlan& plan) {
  std::vector<std::int64_t> own;
  std::int64_t next = 0;
  const std::int64_t uniform = (plan.depth + plan.workers - 1) / plan.workers;
  for (int w = 0; w < plan.workers; ++w) {
    const morphology::Slab s = plan.slab(0, w);
    EXPECT_EQ(s.first, next);
    EXPECT_EQ(s.read_first, std::max<std::int64_t>(0, s.first - plan.halo));
    EXPECT_EQ(s.read_end, std::min<std::int64_t>(plan.depth, s.end + plan.halo));
    EXPECT_LE(s.read_planes(), plan.max_read > 0 ? plan.max_read : uniform + 2 * plan.halo);
    own.push_back(s.end - s.first);
    next = s.end;
  }
  EXPECT_EQ(next, plan.depth);
  return own;
}

TEST(SlabPlan, OneRoundIsBalancedForTheHaloSides) {
  // 2048 planes over 4 workers, N = 50: halo 102, edge cost 25; work per slab (2048 + 6·25) / 4 =
  // 549.5 planes, so the end slabs own 524.5 and the middle ones 499.5 (rounded at the boundaries).
  const auto plan = morphology::plan_slabs(2048, 8, 8, morphology::halo_for(50), 4, 0, 0, 0);
  EXPECT_EQ(plan.edge_cost, 25);
  ASSERT_TRUE(plan.balanced());
  EXPECT_EQ(plan.rounds(), 1);
  EXPECT_EQ(own_planes_of_one_round(plan), (std::vector<std::int64_t>{525, 499, 500, 524}));
  EXPECT_TRUE(plan.slab(1, 0).empty());
  // Not balanced: two workers (both end slabs), forced planes, several rounds, too few planes.
  EXPECT_FALSE(morphology::plan_slabs(2048, 8, 8, 102, 2, 0, 0, 0).balanced());
  EXPECT_FALSE(morphology::plan_slabs(2048, 8, 8, 102, 4, 512, 0, 0).balanced());
  EXPECT_FALSE(morphology::plan_slabs(2048, 8, 8, 102, 4, 0, 64.0 * 400 * 10, 10).balanced());
  EXPECT_FALSE(morphology::plan_slabs(50, 8, 8, 102, 4, 0, 0, 0).balanced());
}

TEST(SlabPlan, OnGpusACubesHaloSideCostsMore) {
  // GPU edge costs for halo 102 (fitted on 4xH200 runs): 20 planes for octahedra, 17 for balls,
  // 31 for cubes, whose z pass reads the whole box of each size: the cube's end slabs own 31
  // planes more than its middle ones.
  EXPECT_EQ(morphology::gpu_edge_cost(Element::octahedron, 102), 20);
  EXPECT_EQ(morphology::gpu_edge_cost(Element::ball, 102), 17);
  EXPECT_EQ(morphology::gpu_edge_cost(Element::cube, 102), 31);
  auto plan = morphology::plan_slabs(2048, 8, 8, morphology::halo_for(50), 4, 0, 0, 0);
  plan.edge_cost = morphology::gpu_edge_cost(Element::cube, plan.halo);
  ASSERT_TRUE(plan.balanced());
  const std::vector<std::int64_t> own = own_planes_of_one_round(plan);
  EXPECT_EQ(own[0] + own[1] + own[2] + own[3], 2048);
  EXPECT_NEAR(static_cast<double>(own[0] - own[1]), 31, 1);
  EXPECT_NEAR(static_cast<double>(own[3] - own[2]), 31, 1);
}

TEST(SlabPlan, TheGpuBalanceFollowsTheForcedPlanesAndTheTurns) {
  // What the app and the slab benchmark both set (balance_for_gpus): the cube's GPU edge cost
  // unless the planes were forced, gpu_read_cost only where the places read in turns.
  const double cost = morphology::gpu_read_cost(Element::cube, 50, 2);
  EXPECT_GT(cost, 0.0);
  auto plan = morphology::plan_slabs(2048, 8, 8, morphology::halo_for(50), 4, 0, 0, 0);
  morphology::balance_for_gpus(plan, Element::cube, 50, 2, false, true);
  EXPECT_EQ(plan.edge_cost, 31);
  EXPECT_EQ(plan.read_cost, cost);
  morphology::balance_for_gpus(plan, Element::cube, 50, 2, false, false);  // several ranks
  EXPECT_EQ(plan.read_cost, 0.0);
  auto forced = morphology::plan_slabs(2048, 8, 8, morphology::halo_for(50), 4, 512, 0, 0);
  morphology::balance_for_gpus(forced, Element::cube, 50, 2, true, true);
  EXPECT_EQ(forced.edge_cost, 0);
  EXPECT_EQ(forced.read_cost, cost);
}

TEST(SlabPlan, ReadsInTurnsGiveTheFirstSlabsMorePlanes) {
  // 2048 planes over 4 GPUs, N = 50 (halo 102, edge cost 25), reading one plane costing 0.047
  // planes of openings: slab i starts once [0, end_i + 102) is read, and every slab's work
  // own_i + sides_i · 25 + 0.047 · min(2048, end_i + 102) is the same.
  auto plan = morphology::plan_slabs(2048, 8, 8, morphology::halo_for(50), 4, 0, 0, 0);
  plan.read_cost = 0.047;
  ASSERT_TRUE(plan.balanced());
  const std::vector<std::int64_t> own = own_planes_of_one_round(plan);
  std::vector<double> work;
  for (int w = 0; w < 4; ++w)
    work.push_back(static_cast<double>(own[static_cast<std::size_t>(w)]) + (w == 0 || w == 3 ? 25 : 50) +
                   0.047 * static_cast<double>(std::min<std::int64_t>(2048, plan.slab(0, w).end + 102)));
  for (double w : work) EXPECT_NEAR(w, work[0], 1.5);
  EXPECT_GT(own[0], own[3]);  // the first slab starts earliest: more planes than the other end slab
  EXPECT_GT(own[1], own[2]);
  EXPECT_NEAR(static_cast<double>(own[0]), 558, 2);  // (2048 + 6 · 25 + 0.047 Σ reads) / 4 − 25 − ...
  // Two workers are balanced too (both end slabs: by their reads alone).
  auto two = morphology::plan_slabs(2048, 8, 8, 102, 2, 0, 0, 0);
  two.read_cost = 0.047;
  ASSERT_TRUE(two.balanced());
  EXPECT_GT(two.slab(0, 0).end, 1024);
  // No balance where a slab would read more than the budget's slab, or over several rounds.
  auto heavy = morphology::plan_slabs(2048, 8, 8, 102, 4, 0, 716.0 * 64, 1);  // 716 planes fit
  heavy.read_cost = 5;
  ASSERT_TRUE(heavy.balanced());  // by the halo sides alone: the read balance would overfill slab 0
  EXPECT_EQ(own_planes_of_one_round(heavy), (std::vector<std::int64_t>{525, 499, 500, 524}));
  auto rounds = morphology::plan_slabs(2048, 8, 8, 102, 4, 0, 64.0 * 400 * 10, 10);
  rounds.read_cost = 0.047;
  EXPECT_FALSE(rounds.balanced());
}

TEST(SlabPlan, HalosReadTwiceGiveTheLaterSlabsFewerPlanes) {
  // Four ranks of one host, one GPU each, without the handover: slabs 1, 2 and 3 each read again
  // the 2 · 102 planes they share with the slab before, so slab i starts once
  // min(2048, end_i + 102) + 204 i planes are read, and the balance counts them.
  auto plan = morphology::plan_slabs(2048, 8, 8, morphology::halo_for(50), 4, 0, 0, 0);
  plan.edge_cost = 25;
  plan.read_cost = 0.047;
  const std::vector<std::int64_t> once = own_planes_of_one_round(plan);
  plan.rereads = {false, true, true, true};
  ASSERT_TRUE(plan.balanced());
  const std::vector<std::int64_t> own = own_planes_of_one_round(plan);
  std::vector<double> work;
  for (int w = 0; w < 4; ++w)
    work.push_back(static_cast<double>(own[static_cast<std::size_t>(w)]) + (w == 0 || w == 3 ? 25 : 50) +
                   0.047 * static_cast<double>(std::min<std::int64_t>(2048, plan.slab(0, w).end + 102) + 204 * w));
  for (double w : work) EXPECT_NEAR(w, work[0], 1.5);
  EXPECT_EQ(own[0] + own[1] + own[2] + own[3], 2048);
  // The last slab starts 3 · 0.047 · 204 ≈ 29 planes of openings later than slab 0, compared to
  // reading every plane once: slab 0 gains about half of that, the last one loses the other half.
  EXPECT_GT(own[0], once[0]);
  EXPECT_LT(own[3], once[3]);
  EXPECT_NEAR(static_cast<double>((own[0] - once[0]) - (own[3] - once[3])), 0.047 * 204 * 3, 2);
  EXPECT_GT(plan.slab(0, 1).read_planes(), plan.planes + 2 * plan.halo);  // no budget: more than 716 may be read

  // Which slabs read their shared halo again: those after a slab of another rank of the same
  // host, unless it is handed over.
  Cluster host;  // ranks 0 and 1 on host a (rank 0 with two GPUs), rank 2 on host b
  for (int r = 0; r < 3; ++r) host.ranks.push_back({r, r < 2 ? "a" : "b", 8, 1, {}});
  const std::vector<Place> places{Place::cuda(0, 0), Place::cuda(1, 0), Place::cuda(0, 1), Place::cuda(0, 2)};
  EXPECT_EQ(morphology::halos_read_twice(places, host, false), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(morphology::halos_read_twice(places, host, true), (std::vector<bool>(4, false)));
}

TEST(SlabPieces, SharedHalosAreCutAlikeOnBothSidesKeptOnesFirstTakenOnesLast) {
  for (std::int64_t own : {std::int64_t{0}, std::int64_t{9}}) {
    auto plan = morphology::plan_slabs(61, 5, 4, 8, 3, own, 0, 0);  // 3 workers, halo 8; own 9: 3 rounds
    if (own == 0) plan.read_cost = 0.05;
    const std::int64_t slabs = std::int64_t{plan.rounds()} * plan.workers;
    for (std::int64_t s = 0; s < slabs; ++s) {
      const auto pieces = morphology::slab_pieces(plan, s, 3);
      const morphology::Slab slab = plan.slab(static_cast<int>(s / 3), static_cast<int>(s % 3));
      if (slab.empty()) {
        EXPECT_TRUE(pieces.empty());
        continue;
      }
      // The pieces cover the slab's planes once, at most 3 planes each; the kept ones come first,
      // the taken ones last.
      std::vector<int> seen(61, 0);
      bool taking = false, own = false;
      for (const auto& p : pieces) {
        EXPECT_LE(p.end - p.first, 3);
        for (auto z = p.first; z < p.end; ++z) ++seen[static_cast<std::size_t>(z)];
        if (p.take) taking = true;
        else EXPECT_FALSE(taking) << "a piece after the shared lead";
        if (!p.keep) own = true;
        else EXPECT_FALSE(own) << "a kept piece after one that is not";
      }
      for (std::int64_t z = 0; z < 61; ++z)
        EXPECT_EQ(seen[static_cast<std::size_t>(z)], z >= slab.read_first && z < slab.read_end ? 1 : 0) << s << " " << z;
      // What it keeps is exactly what the next slab takes, cut the same way.
      std::vector<std::pair<std::int64_t, std::int64_t>> kept, taken;
      for (const auto& p : pieces)
        if (p.keep) kept.emplace_back(p.first, p.end);
      for (const auto& p : morphology::slab_pieces(plan, s + 1, 3))
        if (p.take) taken.emplace_back(p.first, p.end);
      EXPECT_EQ(kept, taken) << "slab " << s;
      const auto shared = morphology::shared_planes(plan, s);
      if (shared.second > shared.first) {
        EXPECT_EQ(shared.first, plan.slab(static_cast<int>((s + 1) / 3), static_cast<int>((s + 1) % 3)).read_first);
        EXPECT_EQ(shared.second, slab.read_end);
        EXPECT_FALSE(kept.empty());
      }
    }
    EXPECT_EQ(morphology::slab_pieces(plan, 0, 0),
              (std::vector<morphology::SlabPiece>{{0, plan.slab(0, 0).read_end, false, false}}));
  }
  // Slabs thinner than their halo share nothing (the overlaps would meet).
  const auto thin = morphology::plan_slabs(20, 5, 4, 8, 4, 2, 0, 0);
  for (std::int64_t s = 0; s < 10; ++s) EXPECT_EQ(morphology::shared_planes(thin, s), (std::pair<std::int64_t, std::int64_t>{0, 0}));
}

TEST(HaloShare, TakesWhatWasKeptOnceAndDropsOldRounds) {
  morphology::HaloShare share;
  Array a = Array::host(DType::u8, Shape(2, 3));
  a.zero();
  share.keep(0, 10, 14, a, 2);
  EXPECT_FALSE(share.take(10, 13).has_value());
  const auto got = share.take(10, 14);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->raw(), a.raw());  // the same host array, not a copy
  EXPECT_FALSE(share.take(10, 14).has_value());
  share.keep(1, 20, 24, a, 2);
  share.keep(4, 50, 54, a, 2);  // slab 1 is more than a round (2 slabs) before slab 4: dropped
  EXPECT_FALSE(share.take(20, 24).has_value());
  EXPECT_TRUE(share.take(50, 54).has_value());
}

TEST(SlabPlaces, OnePlacePerPhysicalGpuSpreadOverTheRanksThatSeeIt) {
  Cluster shared;  // mpirun -np 4 on one host, every rank seeing the 4 GPUs
  for (int r = 0; r < 4; ++r) {
    RankInfo info;
    info.rank = r;
    info.host = "node";
    for (int g = 0; g < 4; ++g) info.gpus.push_back({g, "H200", 1, 9, 0, 132, "uuid" + std::to_string(g)});
    shared.ranks.push_back(info);
  }
  const auto places = morphology::slab_places(shared, DeviceChoice::automatic);
  ASSERT_EQ(places.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(places[static_cast<std::size_t>(r)], Place::cuda(r, r));
  EXPECT_EQ(morphology::slab_places(shared, DeviceChoice::cpu).size(), 4u);
  Cluster one;  // one rank, two GPUs, and a rank without GPU
  one.ranks.push_back({0, "a", 8, 1, {{0, "H100", 1, 9, 0, 132, "u0"}, {1, "H100", 1, 9, 0, 132, "u1"}}});
  one.ranks.push_back({1, "b", 8, 1, {}});
  EXPECT_EQ(morphology::slab_places(one, DeviceChoice::gpu), (std::vector<Place>{Place::cuda(0), Place::cuda(1)}));
  EXPECT_EQ(morphology::slab_places(one, DeviceChoice::all),
            (std::vector<Place>{Place::cuda(0), Place::cuda(1), Place::host(1)}));
  EXPECT_THROW((void)morphology::slab_places(Cluster{{RankInfo{}}}, DeviceChoice::gpu), ConfigError);
}

TEST(SlabGranulometry, SlabsSumToTheWholeCurveAndTheDefinition) {
  std::uint32_t seed = 7;
  for (Element e : kElements) {
    const int last = 4;
    Array mask = test::random_mask(Shape(21, 9, 11), 0.93, seed++);
    morphology::GranulometryOptions whole_options{e, last, true, {}};
    const auto whole = morphology::granulometry_cpu(mask, whole_options);
    for (int n = 0; n <= last; ++n)
      ASSERT_EQ(whole.remaining[n], test::count_foreground(test::brute_force_opening(mask, e, n)))
          << morphology::element_name(e) << " n=" << n;
    for (std::int64_t own : {1, 2, 5, 8}) {
      for (int workers : {1, 3}) {
        const auto plan = morphology::plan_slabs(21, 9, 11, morphology::halo_for(last), workers, own, 0, 0);
        const auto slabs = by_slabs(mask, e, last, plan);
        EXPECT_EQ(slabs.remaining, whole.remaining) << morphology::element_name(e) << " own " << own;
        EXPECT_EQ(slabs.spectrum, whole.spectrum) << morphology::element_name(e) << " own " << own;
        EXPECT_TRUE(test::same(slabs.size_map, whole.size_map)) << morphology::element_name(e) << " own " << own;
      }
    }
  }
}

TEST(SlabGranulometry, OverlappingBallsAcrossSlabBoundaries) {
  Array mask = morphology::overlapping_balls(Shape(40, 24, 19), 1, 7, 0.4, 3);
  for (Element e : kElements) {
    const int last = 8;
    const auto whole = morphology::granulometry_cpu(mask, {e, last, true, {}});
    const auto plan = morphology::plan_slabs(40, 24, 19, morphology::halo_for(last), 2, 7, 0, 0);
    const auto slabs = by_slabs(mask, e, last, plan);
    EXPECT_EQ(slabs.remaining, whole.remaining) << morphology::element_name(e);
    EXPECT_TRUE(test::same(slabs.size_map, whole.size_map)) << morphology::element_name(e);
  }
}

TEST(SlabGranulometry, BalancedSlabsGiveTheWholeCurve) {
  Array mask = morphology::overlapping_balls(Shape(61, 20, 17), 1, 6, 0.4, 5);
  for (Element e : kElements) {
    const int last = 3;  // halo 8, edge cost 2: own planes 16, 15, 14, 16
    const auto whole = morphology::granulometry_cpu(mask, {e, last, true, {}});
    const auto plan = morphology::plan_slabs(61, 20, 17, morphology::halo_for(last), 4, 0, 0, 0);
    ASSERT_TRUE(plan.balanced());
    EXPECT_EQ(plan.slab(0, 0).end, 16);
    const auto slabs = by_slabs(mask, e, last, plan);
    EXPECT_EQ(slabs.remaining, whole.remaining) << morphology::element_name(e);
    EXPECT_TRUE(test::same(slabs.size_map, whole.size_map)) << morphology::element_name(e);
  }
}

TEST(SlabGranulometry, HaloNeededWithoutMaxSizeIsRefused) {
  Array mask = test::random_mask(Shape(6, 5, 4), 0.8, 3);
  morphology::GranulometryOptions o{Element::cube, -1, false, {}};
  o.first_plane = 1;
  o.end_plane = 3;
  EXPECT_THROW((void)morphology::granulometry_cpu(mask, o), ConfigError);
  o.max_size = 2;
  o.end_plane = 9;
  EXPECT_THROW((void)morphology::granulometry_cpu(mask, o), ConfigError);
}

TEST(SlabGranulometry, MaxDistanceOverCountedPlanes) {
  Array mask = morphology::overlapping_balls(Shape(30, 20, 20), 2, 9, 0.5, 11);
  for (Element e : kElements) {
    const Array d = morphology::distance_transform_cpu(mask, e, false);
    const std::int32_t* f = d.data<std::int32_t>();
    const std::int32_t all = *std::max_element(f, f + d.size());
    EXPECT_EQ(morphology::max_distance_cpu(mask, e), all);
    const std::int32_t mid = *std::max_element(f + 10 * 400, f + 15 * 400);
    EXPECT_EQ(morphology::max_distance_cpu(mask, e, 10, 15), mid);
  }
  Array full = Array::host(DType::u8, Shape(3, 3, 3));
  std::memset(full.raw(), 1, full.bytes());
  EXPECT_EQ(morphology::max_distance_cpu(full, Element::cube), morphology::device::kInfinity);
  full.zero();
  EXPECT_EQ(morphology::max_distance_cpu(full, Element::cube), 0);
}

}  // namespace
}  // namespace weft
