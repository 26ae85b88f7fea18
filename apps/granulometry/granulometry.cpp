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
#include "provenance.hpp"
#include "sample.hpp"
#include "size_map.hpp"
#include "volume_input.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/tasks/morphology/granulometry_job.hpp"
#include "weft/tasks/morphology/slab_tasks.hpp"
#include "weft/tasks/morphology/tasks.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/output.hpp"
#include "weft/util/version.hpp"
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
  std::string size_map_as = "radius";  ///< what the size map's values are: radius n or diameter 2n + 1
  std::string voxel_size;              ///< e.g. "0.65um"; empty: lengths in voxels
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
  const morphology::Foreground foreground = rule.foreground();
  return [o, shape, foreground, source](std::int64_t first, std::int64_t count) {
    if (o.median == 0)
      if (auto bits = granulometry::read_foreground_direct(source, shape, first, count, foreground))
        return std::move(*bits);
    const std::int64_t margin = o.median / 2;
    const std::int64_t lo = std::max<std::int64_t>(0, first - margin);
    const std::int64_t hi = std::min<std::int64_t>(shape[0], first + count + margin);
    const granulometry::Values values = granulometry::read_planes(o.input, source, shape, lo, hi - lo);
#if defined(WEFT_GRANULOMETRY_MEDIAN)
    if (o.median > 0) {
      Array raw = filters::median(granulometry::filterable(values, shape), o.median, filters::Border::clamp);
      if (lo != first || hi != first + count) {
        Array cropped = Array::host(raw.dtype(), Shape(count, shape[1], shape[2]));
        const std::size_t plane = static_cast<std::size_t>(shape[1] * shape[2]) * dtype_size(raw.dtype());
        std::memcpy(cropped.raw(), static_cast<const char*>(raw.raw()) + static_cast<std::size_t>(first - lo) * plane,
                    cropped.bytes());
        raw = std::move(cropped);
      }
      return morphology::foreground_bits(raw, foreground);
    }
#endif
    return morphology::foreground_bits(values.data(), values.type, count, shape[1], shape[2], foreground);
  };
}

/// Otsu's threshold needs the whole volume's histogram: read (and filtered) once, before the slabs.
morphology::ThresholdRule resolve_threshold(const Options& o, morphology::ThresholdRule rule,
                                            const granulometry::DirectSource& source) {
  if (rule.kind != morphology::ThresholdRule::otsu) return rule;
  const Shape shape = granulometry::check_input(o.input).shape;
  const granulometry::Values values = granulometry::read_planes(o.input, source, shape, 0, shape[0]);
#if defined(WEFT_GRANULOMETRY_MEDIAN)
  if (o.median > 0) {
    rule.threshold = morphology::otsu_threshold(filters::median(granulometry::filterable(values, shape), o.median,
                                                                filters::Border::clamp));
    return rule;
  }
#endif
  rule.threshold = morphology::otsu_threshold(values.data(), values.type, shape.size());
  return rule;
}

/// The foreground rule as applied, for the outputs' provenance.
std::string describe_rule(const morphology::ThresholdRule& rule, int median) {
  std::string text = rule.kind == morphology::ThresholdRule::nonzero ? "value != 0"
                     : "value >= " + rule.foreground().str() +
                           (rule.kind == morphology::ThresholdRule::otsu ? " (Otsu's threshold)" : "");
  if (median > 0) text += ", after a 3D median of " + std::to_string(median) + "^3";
  return text;
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
      ("input", po::value(&o.input.input),
       "FILE.h5:/dataset; TIFF: a multi-page FILE.tif, a folder of single-page .tif files or a pattern "
       "('scan/slice_*.tif'); or a RAW file with --shape and --dtype")
      ("shape", po::value(&o.input.shape), "RAW input: ZxYxX")
      ("dtype", po::value(&o.input.dtype), "RAW input: bool | i8 | u8 | i16 | u16 | i32 | u32 | i64 | u64 | f32 | f64")
      ("threshold", po::value(&o.threshold),
       "foreground = value >= T (compared in the values' own type), or 'otsu' (default: any non-zero value)")
      ("median", po::value(&o.median)->default_value(0), "3D median filter of size 3 or 5 before thresholding (0: none)")
      ("element", po::value(&o.element)->default_value("octahedron"), "octahedron | cube | ball")
      ("max-size", po::value(&o.max_size)->default_value(-1), "largest size N (default: until nothing remains)")
      ("voxel-size", po::value(&o.voxel_size),
       "edge of a voxel with its unit, e.g. 0.65um, 1.2mm, 5nm (a plain number: no unit); radii and diameters "
       "in curve.csv and granulometry.h5 are given in it (default: in voxels)")
      ("output", po::value(&o.output), "output folder: curve.csv, granulometry.h5, curve.svg")
      ("size-map", po::bool_switch(&o.size_map), "also write the size map (opening function) into granulometry.h5")
      ("size-map-as", po::value(&o.size_map_as)->default_value(o.size_map_as),
       "radius | diameter: store n or 2n + 1 (voxels) per voxel")
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
             "usage: weft granulometry --input FILE.h5:/dataset|FILE.tif|FOLDER --element octahedron|cube|ball\n"
             "                         --output DIR [--max-size N] [--threshold T|otsu] [--voxel-size 0.65um]\n"
             "                         [--size-map [--size-map-as radius|diameter]] [--devices cpu|gpu|all]\n"
             "                         [--mapping FILE] [--slab-planes N] [--device-memory BYTES]\n"
             "       weft granulometry --generate-sample FILE.h5 [--sample-size 128]\n"
             "Counts the foreground voxels left by openings of growing size n = 0..N: the granulometric\n"
             "curve remaining[n] and the pattern spectrum remaining[n] - remaining[n+1] (curve.csv,\n"
             "curve.svg, granulometry.h5, with the voxel size, the command, the date, the devices and\n"
             "the threshold used).\n"
             "n is a radius in voxels: the element of size n spans 2n+1 voxels along each axis\n"
             "(diameter 2n+1): octahedron |dz|+|dy|+|dx| <= n, cube max(|dz|,|dy|,|dx|) <= n, ball\n"
             "dz^2+dy^2+dx^2 <= n^2. Size 0 is one voxel (the opening keeps the whole foreground).\n"
             "For balls the curve can rise between sizes (a negative spectrum): a digital ball of\n"
             "radius n+1 is mostly not a union of balls of radius n (radius 2 holds 8 voxels no\n"
             "radius-1 ball inside it covers), so its opening may keep voxels the smaller opening\n"
             "removed. Octahedra and cubes never rise.\n"
             "The size map holds, per voxel, the largest n whose opening keeps it (the background is\n"
             "the type's largest value, 255 in u8). The voxels with size map >= n are those kept by\n"
             "some opening of size >= n: exactly remaining[n] for octahedra and cubes, a little more\n"
             "where a ball curve rises. For balls it is a local thickness; Fiji's (twice the\n"
             "distance to the nearest background voxel centre) and PoreSpy's (radii r of open\n"
             "balls |d| < r) differ from 2n+1 and n by about a voxel, either way depending on\n"
             "the shape (docs/granulometry.md compares them on a ball and on plates).\n"
             "The volume is split along z into slabs over every GPU of every rank (or one CPU per\n"
             "rank with --devices cpu), each read with a halo of 2(N+1) planes; more slabs than\n"
             "places when they exceed --device-memory. The curve is the same whatever the places.\n"
             "Reading threads, reading turns and halo handover: docs/granulometry.md\n"
             "(WEFT_READ_THREADS, WEFT_HOST_TURNS, WEFT_HALO_HANDOVER).\n"
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
  const std::string started = granulometry::utc_now();
  Shape shape;
  morphology::ThresholdRule rule;
  granulometry::VoxelSize voxel;
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
    if (!o.voxel_size.empty()) voxel = granulometry::parse_voxel_size(o.voxel_size);
    if (o.size_map_as != "radius" && o.size_map_as != "diameter")
      throw ConfigError("--size-map-as: expected radius or diameter, got '" + o.size_map_as + "'");
    const granulometry::VolumeInfo info = granulometry::check_input(o.input);
    shape = info.shape;
    if (o.median > 0 && !morphology::exact_in_f32(info.type))
      throw ConfigError("--median: the median filter takes values a float holds exactly (bool, i8, u8, i16, u16, f32); "
                        "--input " + o.input.input + " holds " + std::string(morphology::value_type_name(info.type)));
    if (rule.kind == morphology::ThresholdRule::otsu || o.median > 0)  // these read the whole volume at once
      check_host_memory(static_cast<double>(shape.size()) *
                            static_cast<double>(std::max<std::size_t>(4, morphology::value_size(info.type))),
                        "--input " + o.input.input + " (" + shape.str() + ", read whole for --threshold otsu or --median)");
    std::string fingerprint = file_fingerprint(info.first_file);
    if (info.last_file != info.first_file) fingerprint += ", " + file_fingerprint(info.last_file);
    return JobFields{{"--input " + o.input.input, shape.str() + " " +
                                                      std::string(morphology::value_type_name(info.type)) + ", " +
                                                      fingerprint}};
  });
  const granulometry::DirectSource source = granulometry::direct_source(o.input);  // its chunk index shared
  const Cluster local{{local_devices(0)}};
  const Cluster& cluster = env ? env->cluster() : local;
  morphology::GranulometryJob job;
  job.shape = shape;
  job.element = morphology::parse_element(o.element);
  job.max_size = o.max_size;
  job.size_map = o.size_map;
  job.size_map_smallest = true;  // what granulometry.h5 stores (size_map.hpp)
  job.size_map_diameter = o.size_map_as == "diameter";
  job.cluster = &cluster;
  job.places = morphology::slab_places(cluster, parse_device_choice(common.devices));
  job.budget = slab_budget(o, job.places, cluster);
  job.slab_planes = o.slab_planes;
  job.read_chunk = static_cast<std::int64_t>(parse_bytes(o.read_chunk, "--read-chunk"));
  job.value_bytes = static_cast<std::int64_t>(morphology::value_size(source.type));
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
  std::unique_ptr<granulometry::SizeMapOutput> map_out;
  const auto staged = [&]() -> OutputStage& {
    if (!stage) stage = std::make_unique<OutputStage>(o.output, OutputKind::folder, "--output");
    return *stage;
  };
  const morphology::SizeMapWriter size_map = [&](std::int64_t first, const Array& map, int max_size) {
    if (!h5) {
      h5 = std::make_unique<io::H5Writer>(staged().path("granulometry.h5"));
      map_out = std::make_unique<granulometry::SizeMapOutput>(*h5, shape, max_size, o.size_map_as == "diameter",
                                                              o.element, voxel);
    }
    map_out->write(first, map);
  };
  double seconds = 0;
  const morphology::GraphRunner runner = [&](Graph& graph, const Mapper& slabs, bool preliminary) {
    seconds = run_graph(graph, common, 2, {&slabs}, preliminary).seconds;
  };
  const morphology::GranulometryOutcome outcome = morphology::run_granulometry(job, runner, size_map);
  if (!outcome.collected) return 0;  // another rank collected and writes the results
  if (map_out) map_out->finish();
  granulometry::Report report;
  report.input = o.input.input;
  report.element = o.element;
  report.shape = shape.str();
  report.voxels = shape.size();
  report.voxel = voxel;
  const BuildInfo build = build_info();
  report.provenance.program = "weft " + build.version + " (commit " + build.commit + ")";
  report.provenance.command = granulometry::quoted_command(argc, argv);
  report.provenance.date = started;
  report.provenance.devices = granulometry::describe_places(job.places, cluster);
  report.provenance.foreground = describe_rule(resolved, o.median);
  report.provenance.hdf5 = io::hdf5_version();
  report.threshold = resolved.kind != morphology::ThresholdRule::nonzero ? resolved.threshold : 0.0;
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
  (void)morphology::add_granulometry_collector(graph, slabs, plan, {}, nullptr, {}, {});
  return graph;
}

const Registrar reg{{"granulometry", "size distribution of a 3D volume by openings", &granulometry_main}};
const GraphRegistrar graph1{{"granulometry", [] { return default_graph(1); }}};
const GraphRegistrar graph2{{"granulometry-2", [] { return default_graph(2); }}};
const GraphRegistrar graph4{{"granulometry-4", [] { return default_graph(4); }}};

}  // namespace
}  // namespace weft::cli
