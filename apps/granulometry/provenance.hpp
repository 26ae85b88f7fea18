#pragma once
// What `weft granulometry`'s outputs say about their numbers: the physical size of a voxel, and
// where the results come from (the program, the command, the date, the devices, the threshold).
#include <string>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/graph/place.hpp"

namespace weft::granulometry {

/// The edge of a voxel: a number and a unit name ("0.65um", "1.2 mm", "5nm"); a plain number gives
/// lengths in an unnamed unit, and no --voxel-size (or a plain 1) in voxels.
struct VoxelSize {
  double size = 1;
  std::string unit = "voxel";
  /// "0.65 um", "1 voxel".
  [[nodiscard]] std::string str() const;
};
/// Parses --voxel-size: a positive finite number, then (spaces allowed) a unit of letters (µm and
/// μm are written um, Å angstrom). ConfigError naming --voxel-size and the text otherwise.
[[nodiscard]] VoxelSize parse_voxel_size(const std::string& text);

/// Every output carries these lines (curve.csv's comments, granulometry.h5's attributes, curve.svg's caption).
struct Provenance {
  std::string program;    ///< the program's name, version and the commit it was built from
  std::string command;    ///< the command line, quoted for a POSIX shell
  std::string date;       ///< when the run started, UTC, ISO 8601
  std::string devices;    ///< where the slabs were computed, e.g. "gpu:0 (NVIDIA H200) on host a; ..."
  std::string foreground; ///< the foreground rule as applied, e.g. "value >= 1187.5 (Otsu's threshold)"
  std::string hdf5;       ///< the HDF5 library's version
  /// name = value pairs in a fixed order, for every output.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> fields() const;
};

/// The command line `argv` as a shell would need it quoted ("weft granulometry" is argv[0]).
[[nodiscard]] std::string quoted_command(int argc, char** argv);
/// The places' names and devices, one per distinct place ("cpu on rank 0 (host a)", ...).
[[nodiscard]] std::string describe_places(const std::vector<Place>& places, const Cluster& cluster);
/// Now, UTC, "2026-01-31T12:34:56Z".
[[nodiscard]] std::string utc_now();

}  // namespace weft::granulometry
