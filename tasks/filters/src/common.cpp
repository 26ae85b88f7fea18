#include <string>

#include "weft/tasks/filters/filters.hpp"
#include "weft/util/error.hpp"

namespace weft::filters {

Border parse_border(std::string_view text, std::string_view what) {
  if (text == "clamp") return Border::clamp;
  if (text == "mirror") return Border::mirror;
  if (text == "zero") return Border::zero;
  throw ConfigError(std::string(what) + ": expected clamp | mirror | zero, got '" + std::string(text) + "'");
}

std::string_view border_name(Border b) noexcept {
  switch (b) {
    case Border::clamp: return "clamp";
    case Border::mirror: return "mirror";
    case Border::zero: return "zero";
  }
  return "?";
}

void check_median_args(const Array& in, int size) {
  const DType t = in.dtype();
  if (t != DType::u8 && t != DType::u16 && t != DType::f32)
    throw ConfigError("median: element type " + std::string(dtype_name(t)) + " not supported (u8, u16, f32)");
  const int nd = in.shape().ndim();
  if (nd == 2) {
    if (size != 3 && size != 5 && size != 7 && size != 9)
      throw ConfigError("--size: 2D median sizes are 3, 5, 7, 9; got " + std::to_string(size));
  } else if (nd == 3) {
    if (size != 3 && size != 5) throw ConfigError("--size: 3D median sizes are 3, 5; got " + std::to_string(size));
  } else {
    throw ConfigError("median: expected a 2D or 3D array, got shape " + in.shape().str());
  }
}

void check_convolve_args(const Array& in, std::size_t kernel_elements, int ksize, bool separable) {
  const DType t = in.dtype();
  if (t != DType::u8 && t != DType::u16 && t != DType::f16 && t != DType::f32)
    throw ConfigError("convolve: element type " + std::string(dtype_name(t)) + " not supported (u8, u16, f16, f32)");
  if (in.shape().ndim() != 2 && in.shape().ndim() != 3)
    throw ConfigError("convolve: expected a 2D or 3D array, got shape " + in.shape().str());
  if (ksize < 1 || ksize > 63 || ksize % 2 == 0)
    throw ConfigError("--size: convolution sizes are odd, 1 to 63; got " + std::to_string(ksize));
  const std::size_t want = separable ? static_cast<std::size_t>(ksize) : static_cast<std::size_t>(ksize) * ksize;
  if (kernel_elements != want)
    throw ConfigError("--kernel: expected " + std::to_string(want) + " coefficients for size " + std::to_string(ksize) +
                      ", got " + std::to_string(kernel_elements));
}

}  // namespace weft::filters
