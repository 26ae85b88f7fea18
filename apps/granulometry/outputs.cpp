#include "outputs.hpp"

#include <cstdio>
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

std::string real(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

/// "radius_um", or "radius" for an unnamed unit.
std::string column(const std::string& name, const VoxelSize& voxel) {
  return voxel.unit.empty() ? name : name + "_" + voxel.unit;
}

}  // namespace

Columns columns(const Report& r) {
  Columns c;
  const std::size_t sizes = r.remaining.size();
  const double first = sizes ? static_cast<double>(r.remaining[0]) : 0.0;
  for (std::size_t n = 0; n < sizes; ++n) {
    const auto dn = static_cast<double>(n);
    c.radius.push_back(dn * r.voxel.size);
    c.diameter.push_back((2 * dn + 1) * r.voxel.size);
    c.volume_fraction.push_back(r.voxels > 0 ? static_cast<double>(r.remaining[n]) / static_cast<double>(r.voxels) : 0.0);
    // remaining[n + 1] = remaining[n] − spectrum[n], also past the last row.
    const auto next = static_cast<double>(r.remaining[n] - r.spectrum[n]);
    c.cumulative.push_back(first > 0 ? 1.0 - next / first : 0.0);
  }
  return c;
}

std::string curve_csv(const Report& r) {
  const Columns c = columns(r);
  const std::string unit = r.voxel.unit.empty() ? "units of the voxel size" : r.voxel.unit;
  std::ostringstream out;
  out << "# weft granulometry of " << r.input << " (" << r.shape << ", " << r.element << ")\n";
  for (const auto& [name, value] : r.provenance.fields()) out << "# " << name << ": " << value << '\n';
  out << "# voxel_size: " << r.voxel.str() << '\n'
      << "# size: n, the element's radius in voxels (it spans 2n + 1 voxels along each axis)\n"
      << "# radius, diameter: n and 2n + 1 times the voxel size, in " << unit << '\n'
      << "# remaining: foreground voxels kept by the opening of size n; volume_fraction: remaining / "
      << r.voxels << " voxels\n"
      << "# spectrum: remaining[n] - remaining[n+1] (negative where the curve rises: balls)\n"
      << "# cumulative: 1 - remaining[n+1] / remaining[0], the share of the foreground removed up to size n + 1\n";
  out << "size," << column("radius", r.voxel) << ',' << column("diameter", r.voxel)
      << ",remaining,volume_fraction,spectrum,cumulative\n";
  for (std::size_t n = 0; n < r.remaining.size(); ++n)
    out << n << ',' << real(c.radius[n]) << ',' << real(c.diameter[n]) << ',' << r.remaining[n] << ','
        << real(c.volume_fraction[n]) << ',' << r.spectrum[n] << ',' << real(c.cumulative[n]) << '\n';
  return out.str();
}

void write_attributes(io::H5Writer& h5, const Report& r) {
  h5.attribute("/", "input", r.input);
  h5.attribute("/", "element", r.element);
  h5.attribute("/", "shape", r.shape);
  h5.attribute("/", "threshold", r.threshold);
  h5.attribute("/", "threshold_rule", r.threshold_rule);
  h5.attribute("/", "max_size", r.max_size);
  h5.attribute("/", "voxel_size", r.voxel.size);
  h5.attribute("/", "voxel_unit", r.voxel.unit);
  for (const auto& [name, value] : r.provenance.fields()) h5.attribute("/", name, value);
}

void write_outputs(OutputStage& stage, const Report& r, io::H5Writer* given) {
  write_text(stage.path("curve.csv"), curve_csv(r));
  write_text(stage.path("curve.svg"), curve_svg(r));
  std::unique_ptr<io::H5Writer> own;
  if (!given) own = std::make_unique<io::H5Writer>(stage.path("granulometry.h5"));
  io::H5Writer& h5 = given ? *given : *own;
  const Columns c = columns(r);
  std::vector<double> sizes, remaining, spectrum;
  for (std::size_t n = 0; n < r.remaining.size(); ++n) {
    sizes.push_back(static_cast<double>(n));
    remaining.push_back(static_cast<double>(r.remaining[n]));
    spectrum.push_back(static_cast<double>(r.spectrum[n]));
  }
  h5.write_vector("/size", sizes);
  h5.write_vector("/curve", remaining);
  h5.write_vector("/spectrum", spectrum);
  h5.write_vector("/radius", c.radius);
  h5.write_vector("/diameter", c.diameter);
  h5.write_vector("/volume_fraction", c.volume_fraction);
  h5.write_vector("/cumulative", c.cumulative);
  write_attributes(h5, r);
  h5.attribute("/size", "meaning", std::string("n: the element's radius in voxels (it spans 2n + 1 voxels along each axis)"));
  h5.attribute("/curve", "meaning", std::string("foreground voxels remaining after the opening of size n"));
  h5.attribute("/spectrum", "meaning", std::string("curve[n] - curve[n+1] (negative where the curve rises: balls)"));
  for (const char* name : {"/radius", "/diameter"}) h5.attribute(name, "units", r.voxel.unit);
  h5.attribute("/radius", "meaning", std::string("n times the voxel size"));
  h5.attribute("/diameter", "meaning", std::string("(2n + 1) times the voxel size: the element's extent along an axis"));
  h5.attribute("/volume_fraction", "meaning", std::string("curve[n] / the volume's voxels (Z * Y * X)"));
  h5.attribute("/cumulative", "meaning",
               std::string("1 - curve[n+1] / curve[0]: the share of the foreground removed by the openings up to n + 1"));
  h5.commit();
  stage.commit();  // the three files appear together, or none does
}

}  // namespace weft::granulometry
