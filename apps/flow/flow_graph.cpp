// Source and sink tasks of `weft flow` and the graph that joins them to the OpticalFlow task.
#include "flow_graph.hpp"

#include <cstring>
#include <algorithm>
#include <filesystem>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "weft/tasks/flow/colour.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/split.hpp"
#include "weft/tasks/flow/task.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"
#include "weft/util/output.hpp"

namespace weft::flow::app {

std::int64_t FlowInput::frame_count() const {
  if (video.empty()) return static_cast<std::int64_t>(frames.size());
  return io::dataset_info(io::parse_dataset_ref(video)).shape[0];
}

bool FlowOutput::hdf5() const {
  const auto ext = std::filesystem::path(path).extension().string();
  return ext == ".h5" || ext == ".hdf5";
}

namespace {

Array frame_of_video(const io::DatasetRef& ref, std::int64_t t) {
  Array slab = io::read_slab(ref, t, 1);  // [1, H, W]
  const Shape s = slab.shape();
  Array frame = Array::host(slab.dtype(), Shape(s[1], s[2]));
  std::memcpy(frame.raw(), slab.raw(), frame.bytes());
  return frame;
}

/// Emits consecutive frame pairs (t, t+1), reading each frame once.
class PairSource : public Task {
 public:
  explicit PairSource(FlowInput in) : Task("frames"), in_(std::move(in)) {}
  Out<Array> frame0 = output<Array>("frame0", std::nullopt, 2);
  Out<Array> frame1 = output<Array>("frame1", std::nullopt, 2);
  void run(Context& ctx) override {
    const std::int64_t t = static_cast<std::int64_t>(ctx.index());
    if (t + 1 >= in_.frame_count()) return ctx.end_stream();
    if (previous_.empty()) previous_ = read(t);
    Array next = read(t + 1);
    check_frames(previous_, next);
    ctx.put(frame0, previous_);
    ctx.put(frame1, next);
    previous_ = next;
  }

 private:
  Array read(std::int64_t t) const {
    return in_.video.empty() ? io::read_image(in_.frames[t]) : frame_of_video(io::parse_dataset_ref(in_.video), t);
  }
  FlowInput in_;
  Array previous_;
};

/// Writes each flow: .flo for a single pair, else one slab of an HDF5 dataset "/flow".
class FlowSink : public Task {
 public:
  FlowSink(FlowOutput out, std::int64_t pairs, FlowParams params, bool progress)
      : Task("sink"), out_(std::move(out)), pairs_(pairs), params_(params), progress_(progress) {}
  In<Array> flow = input<Array>("flow", DType::f32, 3);
  void start(Context&) override { bar_ = std::make_unique<cli::Progress>("flow", pairs_, progress_); }
  void run(Context& ctx) override {
    const Array f = ctx.take(flow);
    const Array h = f.memory().is_host() ? f : f.to_host();
    const auto t = static_cast<std::int64_t>(ctx.index());
    const std::int64_t rows = h.shape()[0], cols = h.shape()[1];
    // Staged (weft/util/output.hpp): the outputs appear after the last flow, or not at all.
    if (!stage_) stage_ = std::make_unique<OutputStage>(out_.path, OutputKind::file, "--output");
    if (t == 0 && !out_.png.empty()) {
      png_ = std::make_unique<OutputStage>(out_.png, OutputKind::file, "--png");
      const FlowPicture picture = flow_picture(h);  // with the colour wheel's key below the field
      io::write_png_rgb(png_->path(), picture.rgb.data(), int(picture.rows), int(picture.cols));
    }
    if (!out_.hdf5()) {
      io::write_flo(stage_->path(), h);
    } else {
      if (!writer_) {
        writer_ = std::make_unique<io::H5Writer>(stage_->path());
        writer_->create("/flow", DType::f32, std::vector<std::int64_t>{pairs_, rows, cols, 2}, {1, rows, cols, 2});
        writer_->attribute("/flow", "layout", "[pair, y, x, c], c = 0: u, c = 1: v (pixels)");
        writer_->attribute("/flow", "method", std::string(method_name(params_.method)));
      }
      writer_->write_slab("/flow", t, h);
    }
    bar_->advance();
  }
  void stop(Context&) override {  // after the last flow only (never after a failure)
    if (writer_) writer_->commit();
    writer_.reset();
    if (stage_) stage_->commit();
    if (png_) png_->commit();
    if (bar_) bar_->done();
  }

 private:
  FlowOutput out_;
  std::int64_t pairs_;
  FlowParams params_;
  bool progress_;
  std::unique_ptr<OutputStage> stage_, png_;  // declared before writer_: its file closes first
  std::unique_ptr<io::H5Writer> writer_;
  std::unique_ptr<cli::Progress> bar_;
};

}  // namespace

cli::JobFields check(const FlowInput& in, const FlowOutput& out, bool gpus) {
  if (in.frames.empty() == in.video.empty())
    throw ConfigError("weft flow: give either --frames A B [C ...] or --input FILE.h5:/DATASET");
  if (out.path.empty()) throw ConfigError("weft flow: --output is required");
  check_output(out.path, OutputKind::file, "--output");
  if (!out.png.empty()) check_output(out.png, OutputKind::file, "--png");
  cli::JobFields fields;
  std::int64_t height = 0, width = 0;
  for (const auto& f : in.frames) {  // every header, before any pixel is read
    if (!std::filesystem::is_regular_file(f)) throw ConfigError("weft flow: --frames: file '" + f + "' does not exist");
    const io::ImageInfo info = io::image_info(f);
    if (height == 0) height = info.height, width = info.width;
    if (info.height != height || info.width != width)
      throw ConfigError("weft flow: --frames of different sizes: '" + f + "' is " + std::to_string(info.width) + "x" +
                        std::to_string(info.height) + ", the first frame is " + std::to_string(width) + "x" +
                        std::to_string(height));
    fields.emplace_back("--frames " + f, cli::file_fingerprint(f));
  }
  if (!in.video.empty()) {
    const io::DatasetRef ref = io::parse_dataset_ref(in.video);
    if (!std::filesystem::is_regular_file(ref.file))
      throw ConfigError("weft flow: --input: file '" + ref.file + "' does not exist");
    const auto info = io::checked_dataset_info(ref, "weft flow: --input " + in.video);
    if (info.shape.size() != 3)
      throw ConfigError("weft flow: --input " + in.video + ": expected a video [T,H,W], got " + std::to_string(info.shape.size()) + " dimensions");
    height = info.shape[1], width = info.shape[2];
    fields.emplace_back("--input " + in.video, cli::file_fingerprint(ref.file));
  }
  const std::int64_t n = in.frame_count();
  if (n < 2) throw ConfigError("weft flow: need at least 2 frames, got " + std::to_string(n));
  if (n > 2 && !out.hdf5())
    throw ConfigError("weft flow: --output " + out.path + ": a sequence of " + std::to_string(n) + " frames needs an HDF5 output (.h5)");
  // Each pair's pyramids and the solver's fields: about 40 floats a pixel, on the host for a CPU
  // run, on each GPU that computes a pair otherwise.
  const double bytes = 40.0 * 4.0 * static_cast<double>(height) * static_cast<double>(width);
  const std::string what = "weft flow: frames of " + std::to_string(width) + "x" + std::to_string(height);
  cli::check_host_memory(bytes, what);
  if (gpus) cli::check_gpu_memory(bytes, what);
  return fields;
}

Graph build_graph(const FlowInput& in, const FlowOutput& out, const FlowParams& params, bool progress, int replicas) {
  if (replicas < 1) throw ConfigError("weft flow: --farm: expected N >= 1 replicas, got " + std::to_string(replicas));
  Graph g;
  auto& src = g.add<PairSource>(in);
  auto& sink = g.add<FlowSink>(out, in.pair_count(), params, progress);
  if (replicas == 1) {
    auto& flow = g.add<OpticalFlow>(params);
    g.connect(src.frame0, flow.frame0);
    g.connect(src.frame1, flow.frame1);
    g.connect(flow.flow, sink.flow);
    return g;
  }
  // Frames are read once on the source's rank; pair k goes to replica k mod N and the gather
  // hands the flows to the sink in pair order.
  const Farm farm = g.add_farm("flow", replicas, [&](int i) {
    return std::make_unique<OpticalFlow>(params, "flow." + std::to_string(i));
  });
  g.connect(src.frame0, farm.in(0));
  g.connect(src.frame1, farm.in(1));
  g.connect(farm.out(0), sink.flow);
  return g;
}

Graph build_split_graph(const FlowInput& in, const FlowOutput& out, const FlowParams& params, bool progress, int strips) {
  Graph g;
  auto& src = g.add<PairSource>(in);
  auto& sink = g.add<FlowSink>(out, in.pair_count(), params, progress);
  const SplitFlow split = add_split_flow(g, "flow", strips, params);
  connect_split_flow(g, split, src.frame0, src.frame1);
  g.connect(split.partition.out(), sink.flow);
  return g;
}

int split_strips(int requested, const Cluster& cluster, bool use_gpus, const FlowInput& in) {
  if (requested < 0) throw ConfigError("weft flow: --strips: expected N >= 0, got " + std::to_string(requested));
  const int strips = requested > 0 ? requested
                     : use_gpus && cluster.gpu_count() > 0
                         ? static_cast<int>(spread_places(cluster, DeviceChoice::gpu).size())
                         : cluster.size();
  const std::int64_t rows = in.video.empty() ? io::read_image(in.frames.front()).shape()[0]
                                             : io::dataset_info(io::parse_dataset_ref(in.video)).shape[1];
  if (rows < std::int64_t{split_halo_rows()} * strips)
    throw ConfigError("weft flow: --split: frames of " + std::to_string(rows) + " rows cannot be split over " +
                      std::to_string(strips) + " strips (at least " + std::to_string(split_halo_rows()) +
                      " rows per strip; --strips N chooses fewer)");
  return strips;
}

int farm_replicas(int requested, const Cluster& cluster, bool use_gpus, std::int64_t pairs) {
  if (requested > 0) return requested;
  // One replica per physical GPU (ranks of one host may all see every GPU), else per rank.
  const int places = use_gpus && cluster.gpu_count() > 0
                         ? static_cast<int>(spread_places(cluster, DeviceChoice::gpu).size())
                         : cluster.size();
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(places, pairs)));
}

}  // namespace weft::flow::app
