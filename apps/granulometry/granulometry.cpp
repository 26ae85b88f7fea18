// weft granulometry: size distribution of a 3D volume by openings with growing elements. The job
// itself (slabs over every place, N found first, the collecting "report" task) is
// morphology::run_granulometry (tasks/morphology/granulometry_job.hpp); this program reads the
// volume, checks options and outputs, and writes the results where it collected them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "outputs.hpp"
#include "sample.hpp"
#include "volume_input.hpp"
#include "weft/exec/environment.hpp"
#include "weft/tasks/morphology/granulometry_job.hpp"
#include "weft/tasks/morphology/slab_tasks.hpp"
#include "weft/tasks/morphology/tasks.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/output.hpp"
#include "weft/tasks/io/hdf5.hpp"
#if defined(WEFT_GRANULOMETRY_MEDIAN)
#include "weft/tasks/filters/filters.hpp"
#endif

namespace weft::cli {
namespace {

using morphology::SlabPlan;

struct Options {
  granulometry::VolumeInput input;
  std::string element = "octahedron";
  std::string threshold;
  int median = 0;  ///< 0: none, else the 3D median window (3 or 5) applied before thresholding
  int max_size = -1;
  std::string output;
  bool size_map = false;
  std::int64_t slab_planes = 0;  ///< own planes per slab, 0: as many as fit the memory budget
  std::string device_memory;     ///< bytes per place for slabs, empty: from the devices
  std::string read_chunk = "256M";  ///< bytes of a slab read (and sent to its place) at a time
  std::string generate_sample;
  std::int64_t sample_size = 128;
};

/// "4G", "512M", "100000": bytes (K, M, G, T are powers of 1024), for the option `option`.
double parse_bytes(const std::string& text, const char* option = "--device-memory") {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  double scale = 1;
  const std::string unit = end ? std::string(end) : "";
  if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) end = nullptr;
  if (end == text.c_str() || !end || !(v > 0))
    throw ConfigError(std::string(option) + ": expected a positive number of bytes (suffix K, M, G or T), got '" + text +
                      "'");
  return v * scale;
}

/// Foreground bits of planes [first, first + count): read by pieces on every core and packed as
/// they come where the file allows it and no median is asked (read_foreground_direct, from the
/// input's DirectSource found once); else read (read_planes, with the median's margin where the
/// volume has planes: the median clamps at the volume's faces only), filtered, cropped, then packed.
morphology::MaskReader mask_reader(const Options& o, const Shape& shape, morphology::ThresholdRule rule,
                                   const granulometry::DirectSource& source) {
  const morphology::Foreground foreground =
      rule.kind == morphology::ThresholdRule::value ? morphology::Foreground(rule.threshold) : std::nullopt;
  return [o, shape, foreground, source](std::int64_t first, std::int64_t count) {
    if (o.median == 0)
      if (auto bits = granulometry::read_foreground_direct(source, shape, first, count, foreground))
        return std::move(*bits);
    const std::int64_t margin = o.median / 2;
    const std::int64_t lo = std::max<std::int64_t>(0, first - margin);
    const std::int64_t hi = std::min<std::int64_t>(shape[0], first + count + margin);
    Array raw = granulometry::read_planes(o.input, source, shape, lo, hi - lo);
#if defined(WEFT_GRANULOMETRY_MEDIAN)
    if (o.median > 0) {
      raw = filters::median(raw, o.median, filters::Border::clamp);
      if (lo != first || hi != first + count) {
        Array cropped = Array::host(raw.dtype(), Shape(count, shape[1], shape[2]));
        const std::size_t plane = static_cast<std::size_t>(shape[1] * shape[2]) * dtype_size(raw.dtype());
        std::memcpy(cropped.raw(), static_cast<const char*>(raw.raw()) + static_cast<std::size_t>(first - lo) * plane,
                    cropped.bytes());
        raw = std::move(cropped);
      }
    }
#endif
    return morphology::foreground_bits(raw, foreground);
  };
}

/// Otsu's threshold needs the whole volume's histogram: read (and filtered) once, before the slabs.
morphology::ThresholdRule resolve_threshold(const Options& o, morphology::ThresholdRule rule,
                                            const granulometry::DirectSource& source) {
  if (rule.kind != morphology::ThresholdRule::otsu) return rule;
  Array volume = granulometry::read_volume(o.input, source);
#if defined(WEFT_GRANULOMETRY_MEDIAN)
  if (o.median > 0) volume = filters::median(volume, o.median, filters::Border::clamp);
#endif
  return {morphology::ThresholdRule::value, morphology::otsu_threshold(volume)};
}

/// Bytes a slab may use on each place: --device-memory, else the library's default.
double slab_budget(const Options& o, const std::vector<Place>& places, const Cluster& cluster) {
  if (!o.device_memory.empty()) return parse_bytes(o.device_memory);
  return morphology::default_slab_budget(places, cluster);
}

int granulometry_main(int argc, char** argv) {
  CommonOptions common;
  Options o;
  po::options_description desc("Granulometry options");
  desc.add_options()
      ("input", po::value(&o.input.input), "FILE.h5:/dataset, or a RAW file with --shape and --dtype")
      ("shape", po::value(&o.input.shape), "RAW input: ZxYxX")
      ("dtype", po::value(&o.input.dtype), "RAW input: u8 | u16 | f32")
      ("threshold", po::value(&o.threshold), "foreground = value >= T, or 'otsu' (default: any non-zero value)")
      ("median", po::value(&o.median)->default_value(0), "3D median filter of size 3 or 5 before thresholding (0: none)")
      ("element", po::value(&o.element)->default_value("octahedron"), "octahedron | cube | ball")
      ("max-size", po::value(&o.max_size)->default_value(-1), "largest size N (default: until nothing remains)")
      ("output", po::value(&o.output), "output folder: curve.csv, granulometry.h5, curve.svg")
      ("size-map", po::bool_switch(&o.size_map), "also write the opening function (size map) into granulometry.h5")
      ("slab-planes", po::value(&o.slab_planes)->default_value(0),
       "own planes per slab (0: as many as fit --device-memory, the volume shared by all places)")
      ("device-memory", po::value(&o.device_memory),
       "bytes a slab may use per place, e.g. 8G (default: 70% of the smallest GPU, or half a rank's memory)")
      ("read-chunk", po::value(&o.read_chunk)->default_value(o.read_chunk),
       "voxels of a slab read at a time, as bytes at one per voxel, whole planes (each chunk travels to its place "
       "as foreground bits, an eighth of that, while the next is read)")
      ("generate-sample", po::value(&o.generate_sample), "write a sample volume FILE.h5:/exchange/data and exit")
      ("sample-size", po::value(&o.sample_size)->default_value(128), "edge of the sample volume");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft granulometry --input FILE.h5:/dataset --element octahedron|cube|ball --max-size N\n"
             "                         --output DIR [--threshold T|otsu] [--size-map] [--devices cpu|gpu|all]\n"
             "                         [--mapping FILE] [--slab-planes N] [--device-memory BYTES]\n"
             "       weft granulometry --generate-sample FILE.h5 [--sample-size 128]\n"
             "Counts the foreground voxels left by openings of growing size (granulometric curve and\n"
             "pattern spectrum). The volume is split along z into slabs over every GPU of every rank\n"
             "(or one CPU per rank with --devices cpu), each read with a halo of 2(N+1) planes by the\n"
             "rank that computes it; more slabs than places when they exceed --device-memory. The\n"
             "GPUs of one host read their slabs in turns on the reading threads (WEFT_READ_THREADS,\n"
             "default three quarters of the rank's CPUs, or of the host's when its ranks take turns;\n"
             "WEFT_HOST_TURNS=0 lets the ranks of a host read at once); the halo two slabs of one\n"
             "rank share is read once, two slabs of different ranks both read theirs (handed over\n"
             "through /dev/shm instead with WEFT_HALO_HANDOVER=1 on every rank). The first slabs,\n"
             "whose openings start earlier, get more planes, the slabs after a halo read twice fewer.\n"
             "The curve is the same whatever the places.\n"
             "Without --max-size, a first pass over the slabs finds the largest distance to the\n"
             "background (hence N)."))
    return 0;
  const Environment* env = Environment::current();
  const bool root = !env || env->rank() == 0;
  if (!o.generate_sample.empty()) {
    if (o.sample_size < 8 || o.sample_size > 2048)
      throw ConfigError("--sample-size: expected 8 to 2048, got " + std::to_string(o.sample_size));
    if (root) {
      check_output(o.generate_sample, OutputKind::file, "--generate-sample");
      granulometry::generate_sample(o.generate_sample, o.sample_size);
      std::printf("granulometry: wrote %s:/exchange/data (%lld^3)\n", o.generate_sample.c_str(),
                  static_cast<long long>(o.sample_size));
    }
    return 0;
  }
  Shape shape;
  morphology::ThresholdRule rule;
  check_job(argc, argv, common, [&] {
    (void)morphology::parse_element(o.element);
    if (o.max_size < -1) throw ConfigError("--max-size: expected N >= 0, got " + std::to_string(o.max_size));
    if (o.output.empty()) throw ConfigError("--output: missing (the folder for curve.csv, granulometry.h5, curve.svg)");
    check_output(o.output, OutputKind::folder, "--output");
    if (o.slab_planes < 0) throw ConfigError("--slab-planes: expected N >= 0, got " + std::to_string(o.slab_planes));
    if (!o.device_memory.empty()) (void)parse_bytes(o.device_memory);
    (void)parse_bytes(o.read_chunk, "--read-chunk");
    rule = morphology::ThresholdRule::parse(o.threshold);
    if (o.median != 0 && o.median != 3 && o.median != 5)
      throw ConfigError("--median: expected 3 or 5 (or 0 for none), got " + std::to_string(o.median));
#if !defined(WEFT_GRANULOMETRY_MEDIAN)
    if (o.median != 0) throw ConfigError("--median: this build has no median filter (tasks/filters)");
#endif
    shape = granulometry::check_input(o.input);
    const std::string file = o.input.is_raw() ? o.input.input : io::parse_dataset_ref(o.input.input).file;
    if (rule.kind == morphology::ThresholdRule::otsu || o.median > 0)  // these read the whole volume at once
      check_host_memory(static_cast<double>(shape.size()) * 4.0, "--input " + o.input.input + " (" + shape.str() +
                                                                      ", read whole for --threshold otsu or --median)");
    return JobFields{{"--input " + o.input.input, shape.str() + ", " + file_fingerprint(file)}};
  });
  const granulometry::DirectSource source = granulometry::direct_source(o.input);  // its chunk index shared
  const Cluster local{{local_devices(0)}};
  const Cluster& cluster = env ? env->cluster() : local;
  morphology::GranulometryJob job;
  job.shape = shape;
  job.element = morphology::parse_element(o.element);
  job.max_size = o.max_size;
  job.size_map = o.size_map;
  job.cluster = &cluster;
  job.places = morphology::slab_places(cluster, parse_device_choice(common.devices));
  job.budget = slab_budget(o, job.places, cluster);
  job.slab_planes = o.slab_planes;
  job.read_chunk = static_cast<std::int64_t>(parse_bytes(o.read_chunk, "--read-chunk"));
  job.value_bytes = static_cast<std::int64_t>(dtype_size(source.dtype));
  job.reads_alone = o.median == 0;
  // The GPU places of several ranks of a host read their slabs in turns, each rank with the
  // reading threads of the whole host (decided before the first read starts them). Not with
  // --median, whose reading filters on the host's cores.
  job.host_turns = job.places.front().is_gpu() && o.median == 0 && morphology::ranks_read_in_turns(job.places, cluster);
  job.handover = job.host_turns && morphology::halo_handover_requested();  // collective
  morphology::read_in_host_turns(job.host_turns);
  if (job.host_turns && root)
    logger("app")->info("granulometry: the GPUs of several ranks of a host read their slabs in turns "
                        "({} reading threads per rank; WEFT_HOST_TURNS=0: all at once)",
                        morphology::read_threads());
  const morphology::ThresholdRule resolved = resolve_threshold(o, rule, source);
  job.reader = mask_reader(o, job.shape, resolved, source);
  std::unique_ptr<Progress> bar;
  if (common.progress)
    job.on_progress = [&bar](int done, int total, const char* what) {
      if (!bar) bar = std::make_unique<Progress>(what, total);
      bar->advance();
      if (done == total) bar->done();
    };

  // The outputs appear together in --output when the run succeeded (OutputStage); the size map is
  // written slab by slab, as the slabs finish, into the staged granulometry.h5.
  std::unique_ptr<OutputStage> stage;
  std::unique_ptr<io::H5Writer> h5;
  const auto staged = [&]() -> OutputStage& {
    if (!stage) stage = std::make_unique<OutputStage>(o.output, OutputKind::folder, "--output");
    return *stage;
  };
  const morphology::SizeMapWriter size_map = [&](std::int64_t first, const Array& map) {
    if (!h5) {
      h5 = std::make_unique<io::H5Writer>(staged().path("granulometry.h5"));
      h5->create("/size_map", DType::i32, Shape(shape[0], shape[1], shape[2]), {32, 64, 64}, true);
      h5->attribute("/size_map", "meaning",
                    std::string("largest n whose opening keeps the voxel (local thickness for balls); -1: background"));
    }
    h5->write_slab("/size_map", first, map);
  };
  double seconds = 0;
  const morphology::GraphRunner runner = [&](Graph& graph, const Mapper& slabs, bool preliminary) {
    seconds = run_graph(graph, common, 2, {&slabs}, preliminary).seconds;
  };
  const morphology::GranulometryOutcome outcome = morphology::run_granulometry(job, runner, size_map);
  if (!outcome.collected) return 0;  // another rank collected and writes the results
  granulometry::Report report;
  report.input = o.input.input;
  report.element = o.element;
  report.shape = shape.str();
  report.threshold = resolved.kind == morphology::ThresholdRule::value ? resolved.threshold : 0.0;
  report.threshold_rule = o.threshold.empty() ? "nonzero" : (o.threshold == "otsu" ? "otsu" : "value");
  report.max_size = o.max_size;
  report.remaining = outcome.remaining;
  report.spectrum = outcome.spectrum;
  granulometry::write_outputs(staged(), report, h5.get());
  if (!report.remaining.empty())
    std::printf("granulometry: %s %s, %s, sizes 0..%zu, %lld foreground voxels, %d slab(s) on %d place(s), %.3f s -> %s\n",
                o.input.input.c_str(), shape.str().c_str(), o.element.c_str(), report.remaining.size() - 1,
                static_cast<long long>(report.remaining[0]), outcome.plan.slabs(), outcome.plan.workers, seconds,
                o.output.c_str());
  return 0;
}

/// The graph for `weft mapping check` (a 64³ volume over `workers` places, nothing read).
Graph default_graph(int workers) {
  const SlabPlan plan = morphology::plan_slabs(64, 64, 64, morphology::halo_for(8), workers, 0, 0, 0);
  morphology::GranulometryOptions g;
  g.max_size = 8;
  Graph graph;
  const auto reader = [](std::int64_t, std::int64_t) -> Array { throw ConfigError("default graph: nothing to read"); };
  const morphology::SlabGraph slabs = morphology::add_slab_granulometry(graph, plan, g, reader);
  (void)morphology::add_granulometry_collector(graph, slabs, plan, false, nullptr, {}, {});
  return graph;
}

const Registrar reg{{"granulometry", "size distribution of a 3D volume by openings", &granulometry_main}};
const GraphRegistrar graph1{{"granulometry", [] { return default_graph(1); }}};
const GraphRegistrar graph2{{"granulometry-2", [] { return default_graph(2); }}};
const GraphRegistrar graph4{{"granulometry-4", [] { return default_graph(4); }}};

}  // namespace
}  // namespace weft::cli
