#include "frames.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"
#include "weft/util/output.hpp"

namespace weft::saliency_app {
namespace {

namespace fs = std::filesystem;

bool is_dataset_ref(const std::string& v) {
  const auto colon = v.rfind(':');
  if (colon == std::string::npos || colon + 1 >= v.size() || v[colon + 1] != '/') return false;
  const std::string file = v.substr(0, colon);
  return file.ends_with(".h5") || file.ends_with(".hdf5") || file.ends_with(".he5");
}

/// The frame number's field in a --input pattern: "%d", or "%0Nd" (zero-padded to N digits,
/// N from 1 to 9), exactly once; "%%" is a literal '%'. Parsed here: user text is never a format.
struct Pattern {
  std::string before, after;
  int width = 0;  ///< 0: as many digits as the number has
};

std::optional<Pattern> parse_pattern(const std::string& text) {
  Pattern p;
  bool found = false;
  std::string* part = &p.before;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      *part += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '%') {
      *part += '%';
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    int width = 0;
    if (j < text.size() && text[j] == '0') {
      ++j;
      if (j >= text.size() || text[j] < '1' || text[j] > '9')
        throw ConfigError("--input " + text + ": a frame number is written %d or %0Nd (N from 1 to 9)");
      width = text[j++] - '0';
    }
    if (j >= text.size() || text[j] != 'd' || found)
      throw ConfigError("--input " + text + ": a pattern holds one frame number, %d or %0Nd (N from 1 to 9), and "
                        "%% for a literal '%'");
    found = true;
    p.width = width;
    part = &p.after;
    i = j;
  }
  if (!found) return std::nullopt;
  return p;
}

std::string numbered(const Pattern& pattern, std::int64_t i) {
  std::string digits = std::to_string(i);
  if (static_cast<int>(digits.size()) < pattern.width) digits.insert(0, pattern.width - digits.size(), '0');
  return pattern.before + digits + pattern.after;
}

void check_dtype(DType t, const std::string& where) {
  if (t != DType::u8 && t != DType::u16 && t != DType::f32)
    throw ConfigError(where + ": unsupported element type " + std::string(dtype_name(t)) + " (expected u8, u16 or f32)");
}

Array read_frame_image(const std::string& path) {
  if (!fs::exists(path)) throw ConfigError("--input: image '" + path + "' does not exist");
  return io::read_image(path);
}

/// The frame's header, checked against its file (read before any frame's pixels).
io::ImageInfo frame_info(const std::string& path) {
  if (!fs::is_regular_file(path)) throw ConfigError("--input: image '" + path + "' does not exist");
  return io::image_info(path);
}

}  // namespace

FrameInput resolve_input(const std::vector<std::string>& values, std::int64_t max_frames) {
  if (values.empty()) throw ConfigError("--input: missing (FILE.h5:/dataset, a pattern like frame%03d.png, or images)");
  FrameInput in;
  if (values.size() == 1 && is_dataset_ref(values[0])) {
    in.kind = FrameInput::hdf5;
    in.dataset = values[0];
    const io::DatasetRef ref = io::parse_dataset_ref(values[0]);
    if (!fs::exists(ref.file)) throw ConfigError("--input: file '" + ref.file + "' does not exist");
    io::DatasetInfo info;
    try {
      info = io::checked_dataset_info(ref, "--input " + values[0]);
    } catch (const IoError& e) {
      throw ConfigError("--input " + values[0] + ": " + e.what());
    }
    check_dtype(info.dtype, "--input " + values[0]);
    if (info.shape.size() == 2) info.shape.insert(info.shape.begin(), 1);
    if (info.shape.size() != 3)
      throw ConfigError("--input " + values[0] + ": expected a video [T,H,W] or an image [H,W], got " +
                        std::to_string(info.shape.size()) + "D");
    in.dtype = info.dtype;
    in.frames = info.shape[0];
    in.height = info.shape[1];
    in.width = info.shape[2];
  } else {
    for (const std::string& v : values) {
      std::stringstream ss(v);
      std::string part;
      while (std::getline(ss, part, ','))
        if (!part.empty()) in.files.push_back(part);
    }
    if (in.files.size() == 1) {
      if (const auto pattern = parse_pattern(in.files[0])) {
        const std::string text = in.files[0];
        in.files.clear();
        std::int64_t i = fs::exists(numbered(*pattern, 0)) ? 0 : 1;
        for (; fs::exists(numbered(*pattern, i)) &&
               (max_frames <= 0 || static_cast<std::int64_t>(in.files.size()) < max_frames);
             ++i)
          in.files.push_back(numbered(*pattern, i));
        if (in.files.empty()) throw ConfigError("--input " + text + ": no file matches the pattern (from 0 or 1)");
      }
    }
    if (in.files.empty()) throw ConfigError("--input: no image given");
    if (max_frames > 0 && static_cast<std::int64_t>(in.files.size()) > max_frames)
      in.files.resize(static_cast<std::size_t>(max_frames));
    // Every frame's header, before any pixel is read: one bad frame stops the run now.
    const io::ImageInfo first = frame_info(in.files[0]);
    for (const std::string& f : in.files) {
      const io::ImageInfo info = frame_info(f);
      if (info.height != first.height || info.width != first.width || info.sixteen_bit != first.sixteen_bit)
        throw ConfigError("--input: image '" + f + "' is " + std::to_string(info.width) + "x" +
                          std::to_string(info.height) + (info.sixteen_bit ? " 16-bit" : " 8-bit") +
                          ", the first frame is " + std::to_string(first.width) + "x" + std::to_string(first.height) +
                          (first.sixteen_bit ? " 16-bit" : " 8-bit"));
    }
    in.dtype = first.sixteen_bit ? DType::u16 : DType::u8;
    in.frames = static_cast<std::int64_t>(in.files.size());
    in.height = first.height;
    in.width = first.width;
  }
  if (max_frames > 0) in.frames = std::min(in.frames, max_frames);
  if (in.kind == FrameInput::images) in.files.resize(static_cast<std::size_t>(in.frames));
  if (in.frames < 1 || in.height < 1 || in.width < 1)
    throw ConfigError("--input: no frames (" + std::to_string(in.frames) + "x" + std::to_string(in.height) + "x" +
                      std::to_string(in.width) + ")");
  return in;
}

FrameSource::FrameSource(std::string name, FrameInput input) : Task(std::move(name)), input_(std::move(input)) {}

void FrameSource::run(Context& ctx) {
  if (next_ >= input_.frames) return ctx.end_stream();
  const std::int64_t t = next_++;
  if (input_.kind == FrameInput::images) {
    Array f = read_frame_image(input_.files[static_cast<std::size_t>(t)]);
    if (f.shape() != Shape(input_.height, input_.width) || f.dtype() != input_.dtype)
      throw ConfigError("--input: image '" + input_.files[static_cast<std::size_t>(t)] + "' is " +
                        std::string(dtype_name(f.dtype())) + " " + f.shape().str() + ", the first frame is " +
                        std::string(dtype_name(input_.dtype)) + " " + Shape(input_.height, input_.width).str());
    return ctx.put(out, std::move(f));
  }
  const Array slab = io::read_slab(io::parse_dataset_ref(input_.dataset), t, 1);
  Array f = Array::host(slab.dtype(), Shape(input_.height, input_.width));
  std::memcpy(f.raw(), slab.raw(), f.bytes());
  ctx.put(out, std::move(f));
}

// The outputs are staged (weft/util/output.hpp): the HDF5 file and the heat maps appear when the
// last frame is written, or not at all.
struct SaliencySink::Writer {
  Writer(const std::string& path, const std::string& png_dir)
      : stage(path, OutputKind::file, "--output"), h5(stage.path()) {
    if (!png_dir.empty()) png = std::make_unique<OutputStage>(png_dir, OutputKind::folder, "--png");
  }
  OutputStage stage;
  io::H5Writer h5;
  std::unique_ptr<OutputStage> png;
};

SaliencySink::SaliencySink(std::string name, SinkOptions options)
    : Task(std::move(name)), options_(std::move(options)) {
  if (options_.all_maps && options_.pathway == "fused") {
    static_map = input<Array>("static", DType::f32, 2);
    dynamic_map = input<Array>("dynamic", DType::f32, 2);
  }
}
SaliencySink::~SaliencySink() = default;

namespace {

/// Jet colour map of v in [0, 1].
void jet(float v, float rgb[3]) {
  auto c = [](float x) { return std::clamp(1.5f - std::abs(4.0f * x), 0.0f, 1.0f); };
  rgb[0] = c(v - 0.75f);
  rgb[1] = c(v - 0.5f);
  rgb[2] = c(v - 0.25f);
}

// The heat map is the frame with the colour of its saliency laid over it, over a white strip
// added below that holds the colour bar: the scale from the lowest saliency (left) to the frame's
// highest (right), at full strength. The frame keeps its pixels: (x, y) of the map is (x, y) of
// the frame, and nothing of it is hidden.
void write_heat_map(const std::string& path, const Array& map, const Array& frame) {
  const std::int64_t h = map.shape()[0], w = map.shape()[1];
  const std::int64_t strip = std::clamp<std::int64_t>(h / 10, 8, 32), pad = strip / 4;
  const float* s = map.data<float>();
  const float top = std::max(*std::max_element(s, s + map.size()), 1e-30f);
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(3 * (h + strip) * w), 255);
  for (std::int64_t i = 0; i < h * w; ++i) {
    float grey;
    if (frame.dtype() == DType::u8) grey = frame.data<std::uint8_t>()[i] / 255.0f;
    else if (frame.dtype() == DType::u16) grey = frame.data<std::uint16_t>()[i] / 65535.0f;
    else grey = std::clamp(frame.data<float>()[i], 0.0f, 1.0f);
    float c[3];
    const float v = s[i] / top;
    jet(v, c);
    const float alpha = 0.6f * std::sqrt(v);  // weak saliency leaves the frame visible
    for (int k = 0; k < 3; ++k)
      rgb[3 * i + k] = static_cast<std::uint8_t>(std::lround(255.0f * ((1 - alpha) * grey + alpha * c[k])));
  }
  const std::int64_t first = std::min(pad, w / 4), last = w - 1 - first;  // the bar's columns
  for (std::int64_t y = h + pad; y < h + strip - pad; ++y)
    for (std::int64_t x = first; x <= last; ++x) {
      float c[3];
      jet(last > first ? static_cast<float>(x - first) / static_cast<float>(last - first) : 1.0f, c);
      for (int k = 0; k < 3; ++k)
        rgb[static_cast<std::size_t>(3 * (y * w + x) + k)] = static_cast<std::uint8_t>(std::lround(255.0f * c[k]));
    }
  io::write_png_rgb(path, rgb.data(), static_cast<int>(h + strip), static_cast<int>(w));
}

}  // namespace

namespace {
Array host_map(Array m, std::int64_t width) {
  if (!m.memory().is_host()) m = m.to_host();
  return saliency::crop_width(m, width);
}
}  // namespace

void SaliencySink::run(Context& ctx) {
  Array f = ctx.take(frame);
  if (!f.memory().is_host()) f = f.to_host();
  const std::int64_t h = f.shape()[0], w = f.shape()[1];
  const Array cropped = host_map(ctx.take(map), w);
  const bool fused = options_.pathway == "fused";
  const bool has_static = options_.pathway != "dynamic", has_dynamic = options_.pathway != "static";
  Array static_part, dynamic_part;
  if (options_.all_maps) {
    static_part = fused ? host_map(ctx.take(static_map), w) : cropped;
    dynamic_part = fused ? host_map(ctx.take(dynamic_map), w) : cropped;
  }
  const auto t = static_cast<std::int64_t>(ctx.index());
  if (!writer_) {
    progress_ = std::make_unique<cli::Progress>("saliency", options_.frames, options_.progress);
    writer_ = std::make_unique<Writer>(options_.output, options_.png_dir);
    const std::vector<std::int64_t> chunk{1, h, w};
    writer_->h5.create("/saliency", DType::f32, Shape(options_.frames, h, w), chunk, false);
    if (options_.all_maps && has_static) writer_->h5.create("/static", DType::f32, Shape(options_.frames, h, w), chunk, false);
    if (options_.all_maps && has_dynamic) writer_->h5.create("/dynamic", DType::f32, Shape(options_.frames, h, w), chunk, false);
  }
  writer_->h5.write_slab("/saliency", t, cropped);
  if (options_.all_maps && has_static) writer_->h5.write_slab("/static", t, static_part);
  if (options_.all_maps && has_dynamic) writer_->h5.write_slab("/dynamic", t, dynamic_part);
  if (!options_.png_dir.empty()) {
    char name[64];
    std::snprintf(name, sizeof name, "saliency_%04lld.png", static_cast<long long>(t));
    write_heat_map(writer_->png->path(name), cropped, f);
  }
  progress_->advance();
  if (t + 1 == options_.frames) {
    progress_->done();
    writer_->h5.attribute("/", "input", options_.input);
    writer_->h5.attribute("/", "pathway", options_.pathway);
    const char* meaning =
        options_.pathway == "static"
            ? "static saliency (Marat et al. 2009): Gabor energies, interactions, Itti normalisation, sum; float32 [T,H,W]"
            : options_.pathway == "dynamic"
                  ? "dynamic saliency (Marat et al. 2009): residual motion after dominant affine motion compensation, "
                    "temporal median, normalisation; float32 [T,H,W]"
                  : "spatio-temporal saliency (Marat et al. 2009): a*Ms + b*Md + a*b*Ms*Md, a = max(Ms), "
                    "b = skewness(Md) (>= 0); float32 [T,H,W]";
    writer_->h5.attribute("/saliency", "meaning", std::string(meaning));
    writer_->h5.commit();
    writer_->stage.commit();
    if (writer_->png) writer_->png->commit();
  }
}

void generate_sample(const std::string& file, std::int64_t frames, std::int64_t height, std::int64_t width) {
  Array video = Array::host(DType::u8, Shape(frames, height, width));
  auto* p = video.data<std::uint8_t>();
  for (std::int64_t t = 0; t < frames; ++t)
    for (std::int64_t y = 0; y < height; ++y)
      for (std::int64_t x = 0; x < width; ++x) {
        double v = 0.45 + 0.1 * std::sin(0.35 * x + 0.1 * y) + 0.08 * std::cos(0.05 * (x - 2.0 * t) - 0.12 * y);
        const double bx = width * (0.2 + 0.6 * (frames > 1 ? static_cast<double>(t) / (frames - 1) : 0.5));
        if (std::abs(x - bx) < 2 + width / 200 && std::abs(y - height / 2.0) < height / 8.0) v = 0.95;
        p[(t * height + y) * width + x] = static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255));
      }
  io::H5Writer h5(file);
  h5.write("/frames", video, {1, height, width});
  h5.commit();
}

}  // namespace weft::saliency_app
