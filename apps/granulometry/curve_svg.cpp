// curve.svg: the granulometric curve (line, left axis) and the pattern spectrum (bars, right axis),
// negative spectrum values below the zero line, the provenance as a caption.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "common/markup.hpp"
#include "outputs.hpp"

namespace weft::granulometry {
namespace {

/// A "nice" tick step (1, 2 or 5 × 10^k) giving about `count` ticks up to `top`.
double tick_step(double top, int count) {
  if (top <= 0) return 1;
  const double raw = top / count, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return std::max(1.0, m * p);
  return 10 * p;
}

/// At most `n` characters of `text` (then "..."), for one line of the caption.
std::string clipped(const std::string& text, std::size_t n) { return text.size() <= n ? text : text.substr(0, n - 3) + "..."; }

std::string number(double v) {
  char buf[32];
  if (std::fabs(v) >= 1e6) std::snprintf(buf, sizeof buf, "%.3g", v);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

std::string curve_svg(const Report& r) {
  const Provenance& p = r.provenance;
  const std::string caption[] = {
      p.program + " · " + p.date, "command: " + p.command, "devices: " + p.devices,
      "foreground: " + p.foreground + " · voxel size " + r.voxel.str()};
  constexpr double kW = 860, kLeft = 100, kRight = 100, kTop = 60, kPlot = 390, kLine = 15;
  const double kH = kTop + kPlot + 60 + kLine * 4 + 10;
  const double pw = kW - kLeft - kRight, ph = kPlot;
  const std::size_t sizes = std::max<std::size_t>(r.remaining.size(), 1);
  const double last = static_cast<double>(sizes > 1 ? sizes - 1 : 1);
  const double top_left = r.remaining.empty() ? 1.0 : std::max<double>(1.0, static_cast<double>(r.remaining[0]));
  double top_right = 1, bottom_right = 0;
  for (auto s : r.spectrum) {
    top_right = std::max(top_right, static_cast<double>(s));
    bottom_right = std::min(bottom_right, static_cast<double>(s));
  }
  const double step_l = tick_step(top_left, 5), step_r = tick_step(top_right - bottom_right, 5), step_x = tick_step(last, 10);
  const double ymax_l = std::ceil(top_left / step_l) * step_l, ymax_r = std::ceil(top_right / step_r) * step_r;
  const double ymin_r = std::floor(bottom_right / step_r) * step_r;  // ≤ 0: room for negative bars
  // Both axes put zero at one height: the right axis spans [ymin_r, ymax_r], the left one as much
  // below zero in proportion (its ticks start at zero).
  const double below = -ymin_r / (ymax_r - ymin_r);
  const double ymin_l = -below / (1 - below) * ymax_l;
  auto x_of = [&](double n) { return kLeft + pw * (n + 0.5) / (last + 1); };  // bars centred on n
  auto yl = [&](double v) { return kTop + ph * (ymax_l - v) / (ymax_l - ymin_l); };
  auto yr = [&](double v) { return kTop + ph * (ymax_r - v) / (ymax_r - ymin_r); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << kW / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">Granulometry of "
    << cli::xml_escaped(r.input) << " (" << r.shape << ", " << r.element << ")</text>\n";
  // Spectrum bars from the zero line (right axis), negative ones downwards in another colour,
  // then the curve (left axis) over them.
  const double bar = std::max(1.0, pw / (last + 1) * 0.7);
  for (std::size_t n = 0; n < r.spectrum.size(); ++n) {
    const auto v = static_cast<double>(r.spectrum[n]);
    const double top = std::min(yr(v), yr(0)), height = std::fabs(yr(v) - yr(0));
    s << "<rect x=\"" << x_of(static_cast<double>(n)) - bar / 2 << "\" y=\"" << top << "\" width=\"" << bar
      << "\" height=\"" << height << "\" fill=\"" << (v < 0 ? "#9b2226" : "#f4a261") << "\" opacity=\"0.8\"/>\n";
  }
  if (ymin_r < 0)
    s << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << yr(0) << "\" y2=\"" << yr(0)
      << "\" stroke=\"#777\" stroke-dasharray=\"4 3\"/>\n";
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
  for (double v = ymin_r; v <= ymax_r + 1e-9; v += step_r)
    s << "<line x1=\"" << kLeft + pw << "\" x2=\"" << kLeft + pw + 5 << "\" y1=\"" << yr(v) << "\" y2=\"" << yr(v)
      << "\" stroke=\"black\"/><text x=\"" << kLeft + pw + 8 << "\" y=\"" << yr(v) + 4 << "\" fill=\"#c4661f\">"
      << number(v) << "</text>\n";
  for (double n = 0; n <= last + 1e-9; n += step_x)
    s << "<line x1=\"" << x_of(n) << "\" x2=\"" << x_of(n) << "\" y1=\"" << kTop + ph << "\" y2=\"" << kTop + ph + 5
      << "\" stroke=\"black\"/><text x=\"" << x_of(n) << "\" y=\"" << kTop + ph + 20 << "\" text-anchor=\"middle\">"
      << number(n) << "</text>\n";
  const std::string voxel = "(" + r.voxel.str() + ")";
  s << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kTop + ph + 42 << "\" text-anchor=\"middle\">size n: radius n "
    << cli::xml_escaped(voxel) << ", diameter (2n+1) " << cli::xml_escaped(voxel) << "</text>\n";
  s << "<text transform=\"translate(24," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#1d3557\">"
    << "remaining foreground voxels after opening n (line)</text>\n";
  s << "<text transform=\"translate(" << kW - 18 << "," << kTop + ph / 2
    << ") rotate(90)\" text-anchor=\"middle\" fill=\"#c4661f\">pattern spectrum: voxels removed between n and n+1 (bars)"
    << "</text>\n";
  double y = kTop + ph + 62;
  for (const std::string& line : caption) {
    s << "<text x=\"12\" y=\"" << y << "\" font-size=\"11\" fill=\"#555\">" << cli::xml_escaped(clipped(line, 150)) << "</text>\n";
    y += kLine;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace weft::granulometry
