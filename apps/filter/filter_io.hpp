#pragma once
// Where `weft filter` reads and writes: PNG/PGM images or HDF5 datasets (FILE.h5:/path), chosen by
// extension; and the kernel file of `weft filter convolve`.
#include <cstdint>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/graph/task.hpp"

namespace weft::filter_app {

/// What --input holds, from its header (checked against the file; the memory the filter needs
/// checked against the machine). ConfigError naming --input and the file when missing, of an
/// unknown kind or inconsistent.
struct InputInfo {
  DType dtype = DType::u8;
  std::vector<std::int64_t> shape;
  std::string file;
};
[[nodiscard]] InputInfo check_input(const std::string& input);
/// Reads --input (after check_input).
[[nodiscard]] Array read_input(const std::string& input);
/// Checks that --output has a known kind, can hold `dtype` (images: u8 or u16) and can be written.
void check_output(const std::string& output, DType dtype);
/// Writes through a temporary name renamed into place (the io library's writers).
void write_output(const std::string& output, const Array& host_array);

/// Whitespace-separated numbers ('#' starts a comment): ksize² (full) or ksize (separable) values.
struct KernelFile {
  std::vector<float> values;
  int ksize = 0;
  bool separable = false;
};
/// `size` 0: deduced from the count. ConfigError naming --kernel, the file and the problem.
[[nodiscard]] KernelFile read_kernel(const std::string& path, int size);

/// Emits one array then ends the stream.
class ArraySource final : public Task {
 public:
  ArraySource(std::string name, Array array);
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override;

 private:
  Array array_;
  bool done_ = false;
};

/// Writes the array it receives to the output (host arrays only; the executor copies GPU results).
class ArraySink final : public Task {
 public:
  ArraySink(std::string name, std::string output);
  In<Array> in = input<Array>("in");
  void run(Context& ctx) override;

 private:
  std::string output_;
};

}  // namespace weft::filter_app
