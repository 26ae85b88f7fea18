#pragma once
// `weft granulometry --generate-sample FILE.h5`: the quickstart's embedded volume.
#include <cstdint>
#include <string>

namespace weft::granulometry {

/// Writes a size³ u8 0/1 volume of overlapping balls (radii 2 .. size/10, about 35 % foreground)
/// as dataset /exchange/data of `path` (chunked; also as /volume), through a temporary file.
void generate_sample(const std::string& path, std::int64_t size);

}  // namespace weft::granulometry
