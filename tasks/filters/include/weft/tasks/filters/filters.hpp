#pragma once
/// Image filters on host arrays: exact median (2D and 3D), convolution (full and separable, fp32
/// accumulation), Gaussian blur and pyramids. u8/u16 results are rounded to nearest and saturated.
#include <string>
#include <string_view>
#include <vector>

#include "weft/data/array.hpp"

namespace weft::filters {

/// How pixels outside the image are read: nearest edge pixel, reflection without repeating the
/// edge (d c b | a b c d | c b a, scipy's "mirror"), or zero.
enum class Border : unsigned char { clamp, mirror, zero };

/// Parses "clamp" | "mirror" | "zero"; throws ConfigError naming `what` and the value otherwise.
[[nodiscard]] Border parse_border(std::string_view text, std::string_view what = "--border");
[[nodiscard]] std::string_view border_name(Border b) noexcept;

/// Median over a size×size window (2D, size 3, 5, 7, 9) or size³ window (3D, size 3 or 5) of a u8,
/// u16 or f32 host array; the result has the input's dtype and shape. Bad arguments: ConfigError.
[[nodiscard]] Array median(const Array& host_in, int size, Border b = Border::clamp);

/// out(y,x) = Σ kernel[i*ksize+j] · in(y+i-r, x+j-r), r = ksize/2 (a correlation, like OpenCV's
/// filter2D and scipy.ndimage.correlate; scipy.ndimage.convolve is this with the kernel reversed),
/// ksize odd ≤ 63, for u8/u16/f16/f32 2D arrays; a 3D array is filtered slice by slice.
[[nodiscard]] Array convolve(const Array& host_in, const std::vector<float>& kernel, int ksize,
                             Border b = Border::clamp);
/// Separable form: rows with `row` (length ksize) then columns with `column` (same length).
[[nodiscard]] Array convolve_separable(const Array& host_in, const std::vector<float>& row,
                                       const std::vector<float>& column, Border b = Border::clamp);

/// Normalised 1D Gaussian of standard deviation sigma; size 0 picks 2·ceil(3σ)+1 (capped at 63).
[[nodiscard]] std::vector<float> gaussian_kernel(double sigma, int size = 0);
/// Separable Gaussian blur (size 0: automatic, as gaussian_kernel).
[[nodiscard]] Array gaussian_blur(const Array& host_in, double sigma, Border b = Border::clamp, int size = 0);
/// Level 0 is the input; level k+1 is level k blurred with sigma then subsampled by 2 (even
/// pixels: extents (n+1)/2, so a 1×1 level stays 1×1). Returns `levels` arrays; 2D only.
[[nodiscard]] std::vector<Array> gaussian_pyramid(const Array& host_in, int levels, double sigma = 1.0,
                                                  Border b = Border::clamp);

/// Argument checks shared by the CPU and CUDA paths (ConfigError naming the option and value).
void check_median_args(const Array& in, int size);
void check_convolve_args(const Array& in, std::size_t kernel_elements, int ksize, bool separable);

}  // namespace weft::filters
