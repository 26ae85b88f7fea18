#include "sample.hpp"

#include <algorithm>

#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/synthetic.hpp"
#include "weft/util/error.hpp"

namespace weft::granulometry {

void generate_sample(const std::string& path, std::int64_t size) {
  if (size < 8 || size > 2048) throw ConfigError("--sample-size: expected 8 to 2048, got " + std::to_string(size));
  const int max_radius = static_cast<int>(std::max<std::int64_t>(3, size / 10));
  Array volume = morphology::overlapping_balls(Shape(size, size, size), 2, max_radius, 0.35, 2026);
  io::H5Writer h5(path);
  h5.write("/exchange/data", volume, {std::min<std::int64_t>(size, 64), std::min<std::int64_t>(size, 64),
                                      std::min<std::int64_t>(size, 64)}, true);
  // The same volume as /volume too (the path cluster/quickstart.sh reads).
  h5.write("/volume", volume, {std::min<std::int64_t>(size, 64), std::min<std::int64_t>(size, 64),
                               std::min<std::int64_t>(size, 64)}, true);
  h5.attribute("/exchange/data", "description",
               std::string("overlapping balls, radii 2.." + std::to_string(max_radius) + ", 1 = foreground"));
  h5.commit();
}

}  // namespace weft::granulometry
