// One call into each of filters, morphology, saliency and flow of an installed Weft, with a check
// of its result's shape and values, so that each library and its own dependencies link and load.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include <weft/tasks/filters/filters.hpp>
#include <weft/tasks/flow/flow.hpp>
#include <weft/tasks/morphology/threshold.hpp>
#include <weft/tasks/saliency/static_pathway.hpp>
#include <weft/weft.hpp>

namespace {

constexpr std::int64_t kSize = 64;
int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "components: %s\n", what.c_str());
    ++failures;
  }
}

// A smooth bright blob on a dark background, its centre at (cx, cy).
weft::Array blob(double cx, double cy) {
  weft::Array a = weft::Array::host(weft::DType::u8, weft::Shape(kSize, kSize));
  for (std::int64_t y = 0; y < kSize; ++y)
    for (std::int64_t x = 0; x < kSize; ++x) {
      double r2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
      a.data<std::uint8_t>()[y * kSize + x] = static_cast<std::uint8_t>(10 + 190 * std::exp(-r2 / 80.0));
    }
  return a;
}

bool finite(const weft::Array& a) {
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a.data<float>()[i])) return false;
  return true;
}

}  // namespace

int main() {
  try {
    weft::Array frame0 = blob(30, 32), frame1 = blob(31, 32);

    weft::Array impulse = weft::Array::host(weft::DType::u8, weft::Shape(kSize, kSize));
    for (std::int64_t i = 0; i < impulse.size(); ++i) impulse.data<std::uint8_t>()[i] = 7;
    impulse.data<std::uint8_t>()[20 * kSize + 20] = 255;
    weft::Array median = weft::filters::median(impulse, 3);
    check(median.shape() == impulse.shape() && median.data<std::uint8_t>()[20 * kSize + 20] == 7,
          "filters: the median did not remove an impulse");

    double threshold = weft::morphology::otsu_threshold(frame0);
    check(threshold > 10 && threshold <= 200, "morphology: Otsu's threshold " + std::to_string(threshold));

    weft::Array saliency = weft::saliency::static_map_cpu(frame0);
    check(saliency.dtype() == weft::DType::f32 && saliency.shape() == frame0.shape() && finite(saliency),
          "saliency: static map of " + saliency.shape().str());

    weft::Array flow = weft::flow::compute(frame0, frame1, weft::flow::FlowParams{});
    check(flow.dtype() == weft::DType::f32 && flow.shape() == weft::Shape(kSize, kSize, 2) && finite(flow),
          "flow: " + flow.shape().str());
    // The blob moved one pixel to the right: u near 1 on its flank, where the image has a gradient.
    float u = flow.data<float>()[(32 * kSize + 26) * 2];
    check(u > 0.5f && u < 1.5f, "flow: u = " + std::to_string(u) + " on the blob's flank, expected about 1");
  } catch (const std::exception& e) {
    check(false, e.what());
  }
  if (failures == 0) std::printf("components: filters, morphology, saliency and flow checked\n");
  return failures == 0 ? 0 : 1;
}
