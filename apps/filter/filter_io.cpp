#include "filter_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"
#include "common/job_check.hpp"
#include "weft/util/error.hpp"
#include "weft/util/output.hpp"

namespace weft::filter_app {
namespace {

enum class Kind { image_png, image_pgm, hdf5 };

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

Kind kind_of(const std::string& text, const std::string& option) {
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) {
    const std::string ext = lower_extension(text.substr(0, colon));
    if (ext == ".h5" || ext == ".hdf5" || ext == ".hdf") return Kind::hdf5;
  }
  const std::string ext = lower_extension(text);
  if (ext == ".png") return Kind::image_png;
  if (ext == ".pgm") return Kind::image_pgm;
  throw ConfigError(option + ": '" + text + "' is neither a .png/.pgm image nor FILE.h5:/dataset");
}

}  // namespace

Colour parse_colour(const std::string& text) {
  if (text == "channels") return Colour::channels;
  if (text == "grey") return Colour::grey;
  throw ConfigError("--colour: expected channels | grey, got '" + text + "'");
}

InputInfo check_input(const std::string& input, Colour colour) {
  if (input.empty()) throw ConfigError("--input: missing (a .png/.pgm image or FILE.h5:/dataset)");
  const Kind kind = kind_of(input, "--input");
  InputInfo out;
  out.input = input;
  if (kind == Kind::hdf5) {
    const io::DatasetRef ref = io::parse_dataset_ref(input);
    if (!std::filesystem::is_regular_file(ref.file)) throw ConfigError("--input: file '" + ref.file + "' not found");
    const io::DatasetInfo info = io::checked_dataset_info(ref, "--input " + input);
    if (info.shape.size() != 2 && info.shape.size() != 3)
      throw ConfigError("--input: dataset '" + ref.str() + "' has rank " + std::to_string(info.shape.size()) +
                        "; expected 2 or 3");
    out.dtype = info.dtype;
    out.shape = info.shape;
    out.file = ref.file;
  } else {
    if (!std::filesystem::is_regular_file(input)) throw ConfigError("--input: file '" + input + "' not found");
    const io::ImageInfo info = io::image_info(input);
    out.dtype = info.sixteen_bit ? DType::u16 : DType::u8;
    out.shape = {info.height, info.width};
    out.file = input;
    if (info.channels == 3 && colour == Colour::channels) {
      // The colour reader and writer hold 8 bits a channel: a 16-bit colour PNG would lose its
      // low bits without a word, so it is refused rather than scaled.
      if (info.sixteen_bit)
        throw ConfigError("--input: '" + input +
                          "' is a 16-bit colour PNG; colour is filtered at 8 bits a channel only: pass --colour grey "
                          "to filter its 16-bit luminance, or convert it to 8 bits");
      out.channels = 3;
    }
  }
  double bytes = static_cast<double>(dtype_size(out.dtype)) * out.channels;
  for (std::int64_t d : out.shape) bytes *= static_cast<double>(d);
  // The input, the output and the filter's working copies (f32 for the convolutions): 3 arrays of floats.
  cli::check_host_memory(bytes + 3.0 * bytes / static_cast<double>(dtype_size(out.dtype)) * 4.0, "--input " + input);
  return out;
}

std::vector<Array> read_input(const InputInfo& info) {
  const Kind kind = kind_of(info.input, "--input");
  if (kind == Kind::hdf5) return {io::read_dataset(io::parse_dataset_ref(info.input))};
  if (info.channels == 1) return {io::read_image(info.input)};
  const Array rgb = io::read_image_rgb(info.input);
  const std::int64_t h = rgb.shape()[0], w = rgb.shape()[1];
  const auto* src = rgb.data<std::uint8_t>();
  std::vector<Array> planes;
  for (int c = 0; c < 3; ++c) {
    Array plane = Array::host(DType::u8, Shape(h, w));
    auto* dst = plane.data<std::uint8_t>();
    for (std::int64_t i = 0; i < h * w; ++i) dst[i] = src[3 * i + c];
    planes.push_back(std::move(plane));
  }
  return planes;
}

void check_output(const std::string& output, const InputInfo& info) {
  if (output.empty()) throw ConfigError("--output: missing (a .png/.pgm image or FILE.h5:/dataset)");
  const Kind kind = kind_of(output, "--output");
  if (kind != Kind::hdf5 && info.dtype != DType::u8 && info.dtype != DType::u16)
    throw ConfigError("--output: '" + output + "' is an image, which holds u8 or u16, but the input is " +
                      std::string(dtype_name(info.dtype)) + "; write FILE.h5:/dataset instead");
  if (kind == Kind::image_pgm && info.channels == 3)
    throw ConfigError("--output: '" + output + "' is a grey PGM, but --input '" + info.input +
                      "' is a colour PNG, filtered per channel: write a .png or FILE.h5:/dataset, or pass "
                      "--colour grey to filter its luminance");
  const std::string file = kind == Kind::hdf5 ? io::parse_dataset_ref(output).file : output;
  weft::check_output(file, OutputKind::file, "--output");
}

void write_output(const std::string& output, const std::vector<Array>& host_channels) {
  const Kind kind = kind_of(output, "--output");
  Array array = host_channels.at(0);
  if (host_channels.size() == 3) {
    // Interleaved RGB, channels last: the layout of a colour PNG, and of numpy's, imageio's and
    // OpenCV's colour images for an HDF5 dataset.
    const std::int64_t h = array.shape()[0], w = array.shape()[1];
    array = Array::host(DType::u8, Shape(h, w, 3));
    auto* rgb = array.data<std::uint8_t>();
    for (int c = 0; c < 3; ++c) {
      const auto* plane = host_channels[static_cast<std::size_t>(c)].data<std::uint8_t>();
      for (std::int64_t i = 0; i < h * w; ++i) rgb[3 * i + c] = plane[i];
    }
    if (kind == Kind::image_png)
      return io::write_png_rgb(output, rgb, static_cast<int>(h), static_cast<int>(w));
    if (kind == Kind::image_pgm) throw ConfigError("--output: '" + output + "' is a grey PGM; colour needs a .png");
  }
  switch (kind) {
    case Kind::image_png: return io::write_png(output, array);
    case Kind::image_pgm: return io::write_pgm(output, array);
    case Kind::hdf5: {
      const io::DatasetRef ref = io::parse_dataset_ref(output);
      io::H5Writer writer(ref.file);
      writer.write(ref.path, array);
      writer.commit();
      return;
    }
  }
}

KernelFile read_kernel(const std::string& path, int size) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--kernel: cannot open '" + path + "'");
  std::vector<float> values;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      char* end = nullptr;
      const float v = std::strtof(word.c_str(), &end);
      if (end == word.c_str() || *end != '\0' || !std::isfinite(v))
        throw ConfigError("--kernel: '" + path + "': '" + word + "' is not a number");
      values.push_back(v);
    }
  }
  const int n = static_cast<int>(values.size());
  KernelFile k;
  k.values = std::move(values);
  if (size == 0) {
    const int root = static_cast<int>(std::lround(std::sqrt(static_cast<double>(n))));
    if (n > 1 && root * root == n) {
      k.ksize = root;
    } else {
      k.ksize = n;
      k.separable = true;
    }
  } else if (n == size * size) {
    k.ksize = size;
  } else if (n == size) {
    k.ksize = size;
    k.separable = true;
  } else {
    throw ConfigError("--kernel: '" + path + "' holds " + std::to_string(n) + " numbers; --size " +
                      std::to_string(size) + " needs " + std::to_string(size * size) + " (full) or " +
                      std::to_string(size) + " (separable)");
  }
  if (k.ksize < 1 || k.ksize > 63 || k.ksize % 2 == 0)
    throw ConfigError("--kernel: '" + path + "' gives size " + std::to_string(k.ksize) +
                      "; sizes are odd, 1 to 63 (ksize² or ksize numbers)");
  return k;
}

double kernel_sum(const KernelFile& k) {
  double sum = 0;
  for (float v : k.values) sum += v;
  return k.separable ? sum * sum : sum;
}

bool sums_to_zero(const KernelFile& k) {
  double sum = 0, magnitude = 0;
  for (float v : k.values) {
    sum += v;
    magnitude += std::fabs(v);
  }
  // Decimal coefficients such as 0.1 0.2 -0.3 sum to a few float roundings, not to 0 exactly.
  return std::fabs(sum) <= 1e-6 * magnitude;
}

void flip(KernelFile& k) {
  // Row-major K×K reversed is the kernel flipped in both axes; a separable kernel serves rows and
  // columns alike, so reversing it flips both.
  std::reverse(k.values.begin(), k.values.end());
}

void normalize(KernelFile& k, const std::string& path) {
  if (sums_to_zero(k))
    throw ConfigError("--normalize: the kernel in '" + path +
                      "' sums to 0 (an edge or derivative kernel) and cannot be divided by its sum; leave out "
                      "--normalize");
  double sum = 0;
  for (float v : k.values) sum += v;
  for (float& v : k.values) v = static_cast<float>(v / sum);
}

ArraySource::ArraySource(std::string name, std::vector<Array> arrays)
    : Task(std::move(name)), arrays_(std::move(arrays)) {}
void ArraySource::run(Context& ctx) {
  if (next_ == arrays_.size()) return ctx.end_stream();
  ctx.put(out, arrays_[next_++]);
}
void ArraySource::save(std::vector<std::byte>& out) const {
  const auto* p = reinterpret_cast<const std::byte*>(&next_);
  out.assign(p, p + sizeof next_);
}
void ArraySource::load(std::span<const std::byte> in) {
  if (in.size() == sizeof next_) std::memcpy(&next_, in.data(), sizeof next_);
}

ArraySink::ArraySink(std::string name, std::string output, int channels)
    : Task(std::move(name)), output_(std::move(output)), channels_(channels) {}
void ArraySink::run(Context& ctx) {
  received_.push_back(ctx.take(in));
  if (static_cast<int>(received_.size()) < channels_) return;
  write_output(output_, received_);
  received_.clear();
}
void ArraySink::save_arrays(std::vector<Array>& out) { out = std::move(received_); received_.clear(); }
void ArraySink::load_arrays(std::vector<Array> in) { received_ = std::move(in); }

}  // namespace weft::filter_app
