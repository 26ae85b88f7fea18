#pragma once
// Where `weft filter` reads and writes: PNG/PGM images or HDF5 datasets (FILE.h5:/path), chosen by
// extension, grey or colour (a colour PNG travels as three grey channels, filtered one by one); and
// the kernel file of `weft filter correlate|convolve`.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/graph/task.hpp"

namespace weft::filter_app {

/// What a colour PNG becomes (--colour): its R, G and B channels each filtered and written as
/// colour, or its luminance filtered and written as grey.
enum class Colour { channels, grey };
/// Parses "channels" | "grey"; ConfigError naming --colour and the value otherwise.
[[nodiscard]] Colour parse_colour(const std::string& text);

/// What --input holds, from its header (checked against the file; the memory the filter needs
/// checked against the machine). ConfigError naming --input and the file when missing, of an
/// unknown kind or inconsistent, or a 16-bit colour PNG to be filtered per channel (read at 8 bits
/// only, which would lose its low bits).
struct InputInfo {
  DType dtype = DType::u8;
  std::vector<std::int64_t> shape;  ///< of one channel
  int channels = 1;                 ///< 3: a colour PNG filtered per channel
  std::string input;                ///< as given to --input
  std::string file;
};
[[nodiscard]] InputInfo check_input(const std::string& input, Colour colour);
/// Reads --input (after check_input): one grey array, or the R, G and B planes [H,W] of a colour PNG.
[[nodiscard]] std::vector<Array> read_input(const InputInfo& info);
/// Checks that --output has a known kind, can hold what the input gives (images: u8 or u16; colour:
/// a PNG or an HDF5 dataset, not a PGM) and can be written.
void check_output(const std::string& output, const InputInfo& info);
/// Writes through a temporary name renamed into place (the io library's writers): one grey array,
/// or three planes written as an RGB PNG or an [H,W,3] u8 dataset.
void write_output(const std::string& output, const std::vector<Array>& host_channels);

/// Whitespace-separated numbers ('#' starts a comment): ksize² (full) or ksize (separable) values.
struct KernelFile {
  std::vector<float> values;
  int ksize = 0;
  bool separable = false;
};
/// `size` 0: deduced from the count. ConfigError naming --kernel, the file and the problem.
[[nodiscard]] KernelFile read_kernel(const std::string& path, int size);
/// The sum of the 2D kernel `k` stands for (a separable kernel's sum squared), in double.
[[nodiscard]] double kernel_sum(const KernelFile& k);
/// Whether that sum is 0 up to the rounding of its terms (an edge or derivative kernel).
[[nodiscard]] bool sums_to_zero(const KernelFile& k);
/// Flips `k` in every axis: the correlation with the flipped kernel is the convolution.
void flip(KernelFile& k);
/// Divides `k` by its sum (a separable kernel by its 1D sum). ConfigError naming --normalize and
/// `path` when the sum is 0.
void normalize(KernelFile& k, const std::string& path);

/// Emits its arrays (the channels of one image) then ends the stream.
class ArraySource final : public Task {
 public:
  ArraySource(std::string name, std::vector<Array> arrays);
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override;
  // Where it stands in its arrays moves with it, so that a migrated source neither repeats nor skips one.
  [[nodiscard]] bool stateful() const override { return true; }
  void save(std::vector<std::byte>& out) const override;
  void load(std::span<const std::byte> in) override;

 private:
  std::vector<Array> arrays_;
  std::size_t next_ = 0;
};

/// Writes the output once it has received `channels` arrays, in order (host arrays only; the
/// executor copies GPU results).
class ArraySink final : public Task {
 public:
  ArraySink(std::string name, std::string output, int channels = 1);
  In<Array> in = input<Array>("in");
  void run(Context& ctx) override;
  // The channels received so far move with it.
  [[nodiscard]] bool stateful() const override { return channels_ > 1; }
  void save_arrays(std::vector<Array>& out) override;
  void load_arrays(std::vector<Array> in) override;

 private:
  std::string output_;
  int channels_;
  std::vector<Array> received_;
};

}  // namespace weft::filter_app
