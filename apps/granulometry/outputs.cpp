#include "outputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"
#include "weft/util/output.hpp"

namespace weft::granulometry {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.flush()) throw IoError("cannot write '" + path + "'");
}

/// A "nice" tick step (1, 2 or 5 × 10^k) giving about `count` ticks up to `top`.
double tick_step(double top, int count) {
  if (top <= 0) return 1;
  const double raw = top / count, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return std::max(1.0, m * p);
  return 10 * p;
}

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  if (std::fabs(v) >= 1e6) std::snprintf(buf, sizeof buf, "%.3g", v);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

std::string curve_csv(const Report& r) {
  std::ostringstream out;
  out << "size,remaining,spectrum\n";
  for (std::size_t n = 0; n < r.remaining.size(); ++n) out << n << ',' << r.remaining[n] << ',' << r.spectrum[n] << '\n';
  return out.str();
}

std::string curve_svg(const Report& r) {
  constexpr double kW = 860, kH = 520, kLeft = 100, kRight = 100, kTop = 60, kBottom = 70;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const std::size_t sizes = std::max<std::size_t>(r.remaining.size(), 1);
  const double last = static_cast<double>(sizes > 1 ? sizes - 1 : 1);
  const double top_left = r.remaining.empty() ? 1.0 : std::max<double>(1.0, static_cast<double>(r.remaining[0]));
  double top_right = 1;
  for (auto s : r.spectrum) top_right = std::max(top_right, static_cast<double>(s));
  const double step_l = tick_step(top_left, 5), step_r = tick_step(top_right, 5), step_x = tick_step(last, 10);
  const double ymax_l = std::ceil(top_left / step_l) * step_l, ymax_r = std::ceil(top_right / step_r) * step_r;
  auto x_of = [&](double n) { return kLeft + pw * (n + 0.5) / (last + 1); };  // bars centred on n
  auto yl = [&](double v) { return kTop + ph * (1 - v / ymax_l); };
  auto yr = [&](double v) { return kTop + ph * (1 - v / ymax_r); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << kW / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">Granulometry of " << xml_escaped(r.input)
    << " (" << r.shape << ", " << r.element << ")</text>\n";
  // Spectrum bars (right axis), then the curve (left axis) over them.
  const double bar = std::max(1.0, pw / (last + 1) * 0.7);
  for (std::size_t n = 0; n < r.spectrum.size(); ++n) {
    const double v = static_cast<double>(std::max<std::int64_t>(0, r.spectrum[n]));
    s << "<rect x=\"" << x_of(static_cast<double>(n)) - bar / 2 << "\" y=\"" << yr(v) << "\" width=\"" << bar
      << "\" height=\"" << kTop + ph - yr(v) << "\" fill=\"#f4a261\" opacity=\"0.8\"/>\n";
  }
  s << "<polyline fill=\"none\" stroke=\"#1d3557\" stroke-width=\"2.5\" points=\"";
  for (std::size_t n = 0; n < r.remaining.size(); ++n)
    s << x_of(static_cast<double>(n)) << ',' << yl(static_cast<double>(r.remaining[n])) << ' ';
  s << "\"/>\n";
  // Axes, ticks and labels.
  s << "<g stroke=\"black\" fill=\"none\"><rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw
    << "\" height=\"" << ph << "\"/></g>\n";
  for (double v = 0; v <= ymax_l + 1e-9; v += step_l)
    s << "<line x1=\"" << kLeft - 5 << "\" x2=\"" << kLeft << "\" y1=\"" << yl(v) << "\" y2=\"" << yl(v)
      << "\" stroke=\"black\"/><text x=\"" << kLeft - 8 << "\" y=\"" << yl(v) + 4 << "\" text-anchor=\"end\" fill=\"#1d3557\">"
      << number(v) << "</text>\n";
  for (double v = 0; v <= ymax_r + 1e-9; v += step_r)
    s << "<line x1=\"" << kLeft + pw << "\" x2=\"" << kLeft + pw + 5 << "\" y1=\"" << yr(v) << "\" y2=\"" << yr(v)
      << "\" stroke=\"black\"/><text x=\"" << kLeft + pw + 8 << "\" y=\"" << yr(v) + 4 << "\" fill=\"#c4661f\">"
      << number(v) << "</text>\n";
  for (double n = 0; n <= last + 1e-9; n += step_x)
    s << "<line x1=\"" << x_of(n) << "\" x2=\"" << x_of(n) << "\" y1=\"" << kTop + ph << "\" y2=\"" << kTop + ph + 5
      << "\" stroke=\"black\"/><text x=\"" << x_of(n) << "\" y=\"" << kTop + ph + 20 << "\" text-anchor=\"middle\">"
      << number(n) << "</text>\n";
  s << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 20 << "\" text-anchor=\"middle\">structuring element size n</text>\n";
  s << "<text transform=\"translate(24," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#1d3557\">"
    << "remaining foreground voxels after opening n (line)</text>\n";
  s << "<text transform=\"translate(" << kW - 18 << "," << kTop + ph / 2
    << ") rotate(90)\" text-anchor=\"middle\" fill=\"#c4661f\">pattern spectrum: voxels removed between n and n+1 (bars)</text>\n";
  s << "</svg>\n";
  return s.str();
}

void write_outputs(OutputStage& stage, const Report& r, io::H5Writer* given) {
  write_text(stage.path("curve.csv"), curve_csv(r));
  write_text(stage.path("curve.svg"), curve_svg(r));
  std::unique_ptr<io::H5Writer> own;
  if (!given) own = std::make_unique<io::H5Writer>(stage.path("granulometry.h5"));
  io::H5Writer& h5 = given ? *given : *own;
  std::vector<double> sizes, remaining, spectrum;
  for (std::size_t n = 0; n < r.remaining.size(); ++n) {
    sizes.push_back(static_cast<double>(n));
    remaining.push_back(static_cast<double>(r.remaining[n]));
    spectrum.push_back(static_cast<double>(r.spectrum[n]));
  }
  h5.write_vector("/size", sizes);
  h5.write_vector("/curve", remaining);
  h5.write_vector("/spectrum", spectrum);
  h5.attribute("/", "input", r.input);
  h5.attribute("/", "element", r.element);
  h5.attribute("/", "shape", r.shape);
  h5.attribute("/", "threshold", r.threshold);
  h5.attribute("/", "threshold_rule", r.threshold_rule);
  h5.attribute("/", "max_size", r.max_size);
  h5.attribute("/curve", "meaning", std::string("foreground voxels remaining after the opening of size n"));
  h5.attribute("/spectrum", "meaning", std::string("curve[n] - curve[n+1]"));
  h5.commit();
  stage.commit();  // the three files appear together, or none does
}

}  // namespace weft::granulometry
