#include "weft/tasks/filters/tasks.hpp"

#include <utility>

#if defined(WEFT_HAVE_CUDA)
#include "weft/cuda.hpp"
#include "weft/tasks/filters/cuda.hpp"
#endif

namespace weft::filters {

MedianFilter::MedianFilter(std::string name, int size, Border border)
    : Task(std::move(name)), size_(size), border_(border) {}
void MedianFilter::run(Context& ctx) { ctx.put(out, median(ctx.take(in), size_, border_)); }

Convolve::Convolve(std::string name, std::vector<float> kernel, int ksize, Border border, bool separable)
    : Task(std::move(name)), kernel_(std::move(kernel)), ksize_(ksize), border_(border), separable_(separable) {}
void Convolve::run(Context& ctx) {
  const Array image = ctx.take(in);
  ctx.put(out, separable_ ? convolve_separable(image, kernel_, kernel_, border_)
                          : convolve(image, kernel_, ksize_, border_));
}

GaussianBlur::GaussianBlur(std::string name, double sigma, Border border, int size)
    : Task(std::move(name)), kernel_(gaussian_kernel(sigma, size)), border_(border) {}
void GaussianBlur::run(Context& ctx) { ctx.put(out, convolve_separable(ctx.take(in), kernel_, kernel_, border_)); }

GaussianPyramid::GaussianPyramid(std::string name, int levels_count, double sigma, Border border)
    : Task(std::move(name)), sigma_(sigma), border_(border) {
  (void)gaussian_kernel(sigma, 0);  // checks sigma now rather than at the first token
  for (int i = 0; i < levels_count; ++i) levels.push_back(output<Array>("level" + std::to_string(i), std::nullopt, 2));
}
void GaussianPyramid::run(Context& ctx) {
  std::vector<Array> result = gaussian_pyramid(ctx.take(in), static_cast<int>(levels.size()), sigma_, border_);
  for (std::size_t i = 0; i < levels.size(); ++i) ctx.put(levels[i], std::move(result[i]));
}

#if defined(WEFT_HAVE_CUDA)
bool MedianFilter::has_cuda() const { return true; }
void MedianFilter::run_cuda(Context& ctx) { ctx.put(out, gpu::median(ctx.take(in), size_, border_, cuda_stream(ctx))); }
bool Convolve::has_cuda() const { return true; }
void Convolve::run_cuda(Context& ctx) {
  const Array image = ctx.take(in);
  ctx.put(out, separable_ ? gpu::convolve_separable(image, kernel_, kernel_, border_, cuda_stream(ctx))
                          : gpu::convolve(image, kernel_, ksize_, border_, cuda_stream(ctx)));
}
bool GaussianBlur::has_cuda() const { return true; }
void GaussianBlur::run_cuda(Context& ctx) {
  ctx.put(out, gpu::convolve_separable(ctx.take(in), kernel_, kernel_, border_, cuda_stream(ctx)));
}
bool GaussianPyramid::has_cuda() const { return true; }
void GaussianPyramid::run_cuda(Context& ctx) {
  std::vector<Array> result =
      gpu::gaussian_pyramid(ctx.take(in), static_cast<int>(levels.size()), sigma_, border_, cuda_stream(ctx));
  for (std::size_t i = 0; i < levels.size(); ++i) ctx.put(levels[i], std::move(result[i]));
}
#else
bool MedianFilter::has_cuda() const { return false; }
void MedianFilter::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool Convolve::has_cuda() const { return false; }
void Convolve::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool GaussianBlur::has_cuda() const { return false; }
void GaussianBlur::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool GaussianPyramid::has_cuda() const { return false; }
void GaussianPyramid::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
#endif

}  // namespace weft::filters
