#pragma once
/// Graph tasks of the filters (CPU and CUDA implementations giving the same results: medians
/// exactly, convolutions within fp32 rounding).
#include <string>
#include <vector>

#include "weft/graph/task.hpp"
#include "weft/tasks/filters/filters.hpp"

namespace weft::filters {

/// 2D or 3D u8/u16/f32 array → its median-filtered copy (see median()).
class MedianFilter final : public Task {
 public:
  MedianFilter(std::string name, int size, Border border = Border::clamp);
  In<Array> in = input<Array>("in");
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  int size_;
  Border border_;
};

/// 2D (or 3D, slice by slice) array → convolved copy; `separable` kernels hold one 1D kernel of
/// ksize coefficients used for rows and columns, else ksize² coefficients row-major.
class Convolve final : public Task {
 public:
  Convolve(std::string name, std::vector<float> kernel, int ksize, Border border = Border::clamp,
           bool separable = false);
  In<Array> in = input<Array>("in");
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  std::vector<float> kernel_;
  int ksize_;
  Border border_;
  bool separable_;
};

/// Gaussian blur of standard deviation sigma (size 0: automatic).
class GaussianBlur final : public Task {
 public:
  GaussianBlur(std::string name, double sigma, Border border = Border::clamp, int size = 0);
  In<Array> in = input<Array>("in");
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  std::vector<float> kernel_;
  Border border_;
};

/// 2D array → `levels` outputs ("level0" = the input, "level1", ...), as gaussian_pyramid().
class GaussianPyramid final : public Task {
 public:
  GaussianPyramid(std::string name, int levels, double sigma = 1.0, Border border = Border::clamp);
  In<Array> in = input<Array>("in", std::nullopt, 2);
  std::vector<Out<Array>> levels;
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  double sigma_;
  Border border_;
};

}  // namespace weft::filters
