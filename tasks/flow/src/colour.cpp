// Middlebury colour coding (Baker et al. colour wheel) and end-point error.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "weft/tasks/flow/colour.hpp"

#include "colour_wheel.hpp"
#include "weft/util/error.hpp"

namespace weft::flow {

namespace {
void check_flow(const Array& flow, const char* what) {
  if (flow.dtype() != DType::f32 || flow.shape().ndim() != 3 || flow.shape()[2] != 2)
    throw ConfigError(std::string(what) + ": expected a f32 [H,W,2] flow, got " + flow.shape().str());
}
}  // namespace

namespace {
// Middlebury colour wheel: RY 15, YG 6, GC 4, CB 11, BM 13, MR 6.
std::vector<std::array<float, 3>> color_wheel() {
  std::vector<std::array<float, 3>> wheel;
  const int seg[6] = {15, 6, 4, 11, 13, 6};
  for (int i = 0; i < seg[0]; ++i) wheel.push_back({255, 255.f * i / seg[0], 0});
  for (int i = 0; i < seg[1]; ++i) wheel.push_back({255 - 255.f * i / seg[1], 255, 0});
  for (int i = 0; i < seg[2]; ++i) wheel.push_back({0, 255, 255.f * i / seg[2]});
  for (int i = 0; i < seg[3]; ++i) wheel.push_back({0, 255 - 255.f * i / seg[3], 255});
  for (int i = 0; i < seg[4]; ++i) wheel.push_back({255.f * i / seg[4], 0, 255});
  for (int i = 0; i < seg[5]; ++i) wheel.push_back({255, 0, 255 - 255.f * i / seg[5]});
  return wheel;
}
bool known(float u, float v) { return std::isfinite(u) && std::isfinite(v) && std::fabs(u) < 1e9f && std::fabs(v) < 1e9f; }
}  // namespace

namespace detail {

void wheel_colour(double fu, double fv, std::uint8_t rgb[3]) {
  static const auto wheel = color_wheel();
  const int ncols = static_cast<int>(wheel.size());
  const double rad = std::hypot(fu, fv);
  const double a = std::atan2(-fv, -fu) / M_PI;
  const double fk = (a + 1) / 2 * (ncols - 1);
  const int k0 = static_cast<int>(fk), k1 = (k0 + 1) % ncols;
  const double t = fk - k0;
  for (int c = 0; c < 3; ++c) {
    double col = ((1 - t) * wheel[k0][c] + t * wheel[k1][c]) / 255.0;
    col = rad <= 1 ? 1 - rad * (1 - col) : col * 0.75;
    rgb[c] = static_cast<std::uint8_t>(std::lround(255 * col));
  }
}

double coding_scale(const Array& host_flow, double max_motion) {
  const float* f = host_flow.data<float>();
  const std::int64_t n = host_flow.shape()[0] * host_flow.shape()[1];
  double maxrad = max_motion;
  if (maxrad <= 0)
    for (std::int64_t i = 0; i < n; ++i)
      if (known(f[2 * i], f[2 * i + 1])) maxrad = std::max(maxrad, std::hypot(double(f[2 * i]), double(f[2 * i + 1])));
  return maxrad > 0 ? maxrad : 1;
}

}  // namespace detail

std::vector<std::uint8_t> flow_to_color(const Array& flow, double max_motion) {
  check_flow(flow, "flow_to_color");
  const Array h = flow.memory().is_host() ? flow : flow.to_host();
  const float* f = h.data<float>();
  const std::int64_t n = h.shape()[0] * h.shape()[1];
  const double maxrad = detail::coding_scale(h, max_motion);
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(n) * 3, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const float u = f[2 * i], v = f[2 * i + 1];
    if (known(u, v)) detail::wheel_colour(u / maxrad, v / maxrad, &rgb[3 * static_cast<std::size_t>(i)]);
  }
  return rgb;
}

double endpoint_error(const Array& flow, const Array& truth) {
  check_flow(flow, "endpoint_error");
  check_flow(truth, "endpoint_error");
  if (!(flow.shape() == truth.shape()))
    throw ConfigError("endpoint_error: flow " + flow.shape().str() + " and truth " + truth.shape().str() + " differ");
  const Array a = flow.memory().is_host() ? flow : flow.to_host();
  const float* f = a.data<float>();
  const float* t = truth.data<float>();
  double sum = 0;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < a.size() / 2; ++i) {
    if (!known(t[2 * i], t[2 * i + 1])) continue;
    sum += std::hypot(double(f[2 * i]) - t[2 * i], double(f[2 * i + 1]) - t[2 * i + 1]);
    ++count;
  }
  return count ? sum / double(count) : 0.0;
}

}  // namespace weft::flow
