#include "weft/tasks/morphology/granulometry_job.hpp"

#include "size_map_form.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

namespace weft::morphology {
namespace {

/// The task "report": folds every round's curve and spectrum, hands each worker's size map of its
/// slab to the writer, and says when a round is done.
class Collector final : public Task {
 public:
  Collector(SlabPlan plan, SizeMapHandout size_map, std::shared_ptr<GranulometryOutcome> out, SizeMapWriter writer,
            std::function<void(int, int, const char*)> on_progress)
      : Task("report"), plan_(plan), size_map_(size_map), out_(std::move(out)), writer_(std::move(writer)),
        on_progress_(std::move(on_progress)) {
    for (int i = 0; i < plan_.workers; ++i)
      size_maps.push_back(input<Array>("size_map." + std::to_string(i), size_map_.sent.dtype));
  }
  In<std::vector<std::int64_t>> remaining = input<std::vector<std::int64_t>>("remaining");
  In<std::vector<std::int64_t>> spectrum = input<std::vector<std::int64_t>>("spectrum");
  std::vector<In<Array>> size_maps;  ///< one per worker

  void run(Context& ctx) override {
    const auto add = [](std::vector<std::int64_t>& total, const std::vector<std::int64_t>& v) {
      if (v.size() > total.size()) total.resize(v.size(), 0);
      for (std::size_t n = 0; n < v.size(); ++n) total[n] += v[n];
    };
    if (round_ == 0) out_->remaining.clear(), out_->spectrum.clear();
    add(out_->remaining, ctx.take(remaining));
    add(out_->spectrum, ctx.take(spectrum));
    // Every slab's curve runs over n = 0..N (an empty slab's too), so N is known from the first round.
    const int max_size = static_cast<int>(out_->remaining.size()) - 1;
    for (int i = 0; i < plan_.workers; ++i) {
      Array map = ctx.take(size_maps[static_cast<std::size_t>(i)]);
      const Slab slab = plan_.slab(round_, i);
      if (!size_map_.enabled || slab.empty() || !writer_) continue;
      if (map.shape() != Shape(slab.end - slab.first, plan_.height, plan_.width))
        throw Error(name() + ": size map " + map.shape().str() + " for planes [" + std::to_string(slab.first) + ", " +
                    std::to_string(slab.end) + ")");
      if (!map.memory().is_host()) map = map.to_host();
      if (size_map_.smallest && size_map_.sent.as_computed()) {  // N was unknown when the slabs started
        const SizeMapForm wanted = SizeMapForm::smallest(max_size, size_map_.diameter);
        if (!wanted.as_computed()) map = detail::size_map_in_form(std::move(map), wanted);
      }
      // One slab's map at a time: the writer stores it before the next is taken.
      writer_(slab.first, map, max_size);
    }
    ++round_;
    out_->collected = true;
    if (on_progress_ && plan_.slabs() > 1) on_progress_(round_, plan_.rounds(), "granulometry (rounds of slabs)");
  }

 private:
  SlabPlan plan_;
  SizeMapHandout size_map_;
  std::shared_ptr<GranulometryOutcome> out_;
  SizeMapWriter writer_;
  std::function<void(int, int, const char*)> on_progress_;
  int round_ = 0;
};

/// Fresh turns for one run of a slab graph (collective under MPI; none without host turns).
std::shared_ptr<const SlabReadTurns> read_turns(const GranulometryJob& job) {
  return job.host_turns ? slab_read_turns(job.places, *job.cluster, job.handover) : nullptr;
}

/// Largest size N when not given: the openings are empty from r(N) ≥ max D on. Over several
/// slabs max D comes from a first pass with a halo h, exact where D ≤ r(h); h doubles until every
/// slab's answer is exact (at worst each slab reads the whole volume).
int find_max_size(const GranulometryJob& job, const GraphRunner& run) {
  const Environment* env = Environment::current();
  const int ranks = env ? env->size() : 1;
  const double bytes = job.places.front().is_gpu() ? 20 : 9;
  for (std::int64_t halo = 16;; halo *= 2) {
    const SlabPlan plan = plan_slabs(job.shape[0], job.shape[1], job.shape[2], halo, static_cast<int>(job.places.size()),
                                     job.slab_planes, job.budget, bytes);
    auto result = std::make_shared<MaxDistance>();
    Graph graph;
    add_slab_max_distance(graph, plan, job.element, job.reader, ranks, result, read_turns(job));
    const SlabMapper slabs(job.places);
    run(graph, slabs, /*preliminary=*/true);
    logger("granulometry")->debug("max distance with a halo of {} planes: {} ({})", halo, result->value,
                                  result->exact ? "exact" : "lower bound");
    if (!result->exact && halo < job.shape[0]) continue;
    if (result->value >= device::kInfinity)
      throw ConfigError("the volume has no background voxel, so no opening removes anything; give --max-size N");
    int last = 0;
    while (radius_limit(job.element, last) < result->value) ++last;
    return last;
  }
}

}  // namespace

double default_slab_budget(const std::vector<Place>& places, const Cluster& cluster) {
  double budget = 0;
  for (const Place& p : places) {
    const RankInfo& r = cluster.ranks[static_cast<std::size_t>(p.rank)];
    double bytes = 0.5 * static_cast<double>(r.memory_bytes);
    if (p.is_gpu())
      for (const auto& g : r.gpus)
        if (g.index == p.device) bytes = 0.7 * static_cast<double>(g.memory_bytes);
    if (bytes > 0 && (budget == 0 || bytes < budget)) budget = bytes;
  }
  return budget;
}

Task& add_granulometry_collector(Graph& graph, const SlabGraph& slabs, const SlabPlan& plan, const SizeMapHandout& size_map,
                                 std::shared_ptr<GranulometryOutcome> out, SizeMapWriter writer,
                                 std::function<void(int, int, const char*)> on_progress) {
  if (!out) out = std::make_shared<GranulometryOutcome>();
  auto& report = graph.add<Collector>(plan, size_map, std::move(out), std::move(writer), std::move(on_progress));
  graph.connect(slabs.remaining, report.remaining);
  graph.connect(slabs.spectrum, report.spectrum);
  for (int i = 0; i < plan.workers; ++i) graph.connect(slabs.size_maps[i], report.size_maps[i]);
  return report;
}

GranulometryOutcome run_granulometry(const GranulometryJob& job, const GraphRunner& run, const SizeMapWriter& size_map) {
  if (job.places.empty() || !job.cluster || !job.reader) throw Error("run_granulometry: places, cluster and reader are needed");
  const bool gpu = job.places.front().is_gpu();
  const int workers = static_cast<int>(job.places.size());
  // One slab holding the whole volume finds N itself; several need it first (their halo).
  int max_size = job.max_size;
  const double whole_bytes =
      static_cast<double>(job.shape.size()) * slab_bytes_per_voxel(job.element, max_size, job.size_map, gpu);
  const bool one_slab = workers == 1 && (job.slab_planes == 0 || job.slab_planes >= job.shape[0]) &&
                        (job.budget <= 0 || whole_bytes <= job.budget);
  if (max_size < 0 && !one_slab) max_size = find_max_size(job, run);
  SlabPlan plan = max_size < 0 ? plan_slabs(job.shape[0], job.shape[1], job.shape[2], 0, 1, 0, 0, 0)
                               : plan_slabs(job.shape[0], job.shape[1], job.shape[2], halo_for(max_size), workers,
                                            job.slab_planes, job.budget,
                                            slab_bytes_per_voxel(job.element, max_size, job.size_map, gpu));
  // The GPUs of one host read their slabs in turns: the first slabs, which start their openings
  // earlier, get more planes (slabs.hpp).
  if (gpu && max_size >= 0)
    balance_gpu_slabs(plan, job.places, *job.cluster, job.element, max_size, job.value_bytes, job.slab_planes > 0,
                      job.host_turns, job.handover, job.reads_alone);
  logger("granulometry")
      ->info("granulometry: {} over {} slab(s) of {} planes (halo {}{}) on {} place(s), N = {}", job.shape.str(),
             plan.slabs(), plan.planes, plan.halo,
             plan.balanced() && plan.read_cost > 0 ? ", balanced for reads in turns" : "", plan.workers, max_size);

  GranulometryOptions g;
  g.element = job.element;
  g.max_size = max_size;
  g.size_map = job.size_map;
  // The slabs narrow their maps where they computed them when N is known here (a GPU's map then
  // crosses to the host in 1 or 2 bytes a voxel); a single slab that finds N sends i32.
  SizeMapHandout handout{job.size_map, {}, job.size_map_smallest, job.size_map_diameter};
  if (job.size_map && job.size_map_smallest && max_size >= 0)
    g.size_map_form = handout.sent = SizeMapForm::smallest(max_size, job.size_map_diameter);
  if (job.on_progress && plan.slabs() == 1)
    g.on_size = [progress = job.on_progress](int n, int last) { progress(n, last, "granulometry"); };
  auto out = std::make_shared<GranulometryOutcome>();
  Graph graph;
  const SlabGraph slabs = add_slab_granulometry(graph, plan, g, job.reader, job.read_chunk, read_turns(job));
  add_granulometry_collector(graph, slabs, plan, handout, out, size_map, job.on_progress);
  const SlabMapper mapper(job.places);
  run(graph, mapper, /*preliminary=*/false);
  out->max_size = max_size;
  out->plan = plan;
  return std::move(*out);
}

}  // namespace weft::morphology
