#include "filter_io.hpp"

#include <cmath>
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

InputInfo check_input(const std::string& input) {
  if (input.empty()) throw ConfigError("--input: missing (a .png/.pgm image or FILE.h5:/dataset)");
  const Kind kind = kind_of(input, "--input");
  InputInfo out;
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
  }
  double bytes = static_cast<double>(dtype_size(out.dtype));
  for (std::int64_t d : out.shape) bytes *= static_cast<double>(d);
  // The input, the output and the filter's working copies (f32 for the convolutions): 3 arrays of floats.
  cli::check_host_memory(bytes + 3.0 * bytes / static_cast<double>(dtype_size(out.dtype)) * 4.0, "--input " + input);
  return out;
}

Array read_input(const std::string& input) {
  const Kind kind = kind_of(input, "--input");
  if (kind == Kind::hdf5) return io::read_dataset(io::parse_dataset_ref(input));
  return io::read_image(input);
}

void check_output(const std::string& output, DType dtype) {
  if (output.empty()) throw ConfigError("--output: missing (a .png/.pgm image or FILE.h5:/dataset)");
  const Kind kind = kind_of(output, "--output");
  if (kind != Kind::hdf5 && dtype != DType::u8 && dtype != DType::u16)
    throw ConfigError("--output: '" + output + "' is an image, which holds u8 or u16, but the input is " +
                      std::string(dtype_name(dtype)) + "; write FILE.h5:/dataset instead");
  const std::string file = kind == Kind::hdf5 ? io::parse_dataset_ref(output).file : output;
  weft::check_output(file, OutputKind::file, "--output");
}

void write_output(const std::string& output, const Array& host_array) {
  switch (kind_of(output, "--output")) {
    case Kind::image_png: return io::write_png(output, host_array);
    case Kind::image_pgm: return io::write_pgm(output, host_array);
    case Kind::hdf5: {
      const io::DatasetRef ref = io::parse_dataset_ref(output);
      io::H5Writer writer(ref.file);
      writer.write(ref.path, host_array);
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

ArraySource::ArraySource(std::string name, Array array) : Task(std::move(name)), array_(std::move(array)) {}
void ArraySource::run(Context& ctx) {
  if (done_) return ctx.end_stream();
  done_ = true;
  ctx.put(out, array_);
}

ArraySink::ArraySink(std::string name, std::string output) : Task(std::move(name)), output_(std::move(output)) {}
void ArraySink::run(Context& ctx) { write_output(output_, ctx.take(in)); }

}  // namespace weft::filter_app
