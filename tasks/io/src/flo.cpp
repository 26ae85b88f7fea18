// Middlebury .flo files. Assumes a little-endian host, as the format does.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "file_commit.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {
constexpr float kFloTag = 202021.25f;
constexpr std::int32_t kMaxExtent = 1 << 20;
}  // namespace

Array read_flo(const std::string& path) {
  detail::InputFile in(path);
  float tag = 0;
  std::int32_t size[2] = {0, 0};
  if (std::fread(&tag, sizeof tag, 1, in.get()) != 1 || tag != kFloTag) {
    throw IoError("cannot read flow " + path + ": not a .flo file (missing tag PIEH / 202021.25)");
  }
  if (std::fread(size, sizeof size, 1, in.get()) != 1) throw IoError("cannot read flow " + path + ": truncated header");
  const std::int32_t width = size[0], height = size[1];
  if (width <= 0 || height <= 0 || width > kMaxExtent || height > kMaxExtent) {
    throw IoError("cannot read flow " + path + ": bad size " + std::to_string(width) + "x" + std::to_string(height));
  }
  const long at = std::ftell(in.get());
  std::fseek(in.get(), 0, SEEK_END);
  const long end = std::ftell(in.get());
  std::fseek(in.get(), at, SEEK_SET);
  const auto need = static_cast<long long>(width) * height * 2 * static_cast<long long>(sizeof(float));
  if (end - at < need)  // checked before the flow is allocated: a header can claim anything
    throw IoError("cannot read flow " + path + ": truncated (the header says " + std::to_string(width) + "x" +
                  std::to_string(height) + ", " + std::to_string(need) + " bytes; the file has " +
                  std::to_string(end - at) + ")");
  Array flow = Array::host(DType::f32, Shape(height, width, 2));
  const std::size_t n = static_cast<std::size_t>(flow.size());
  if (std::fread(flow.raw(), sizeof(float), n, in.get()) != n) {
    throw IoError("cannot read flow " + path + ": truncated (expected " + std::to_string(n) + " floats)");
  }
  return flow;
}

void write_flo(const std::string& path, const Array& flow) {
  if (flow.empty() || flow.dtype() != DType::f32 || flow.shape().ndim() != 3 || flow.shape()[2] != 2) {
    throw ConfigError("cannot write " + path + ": write_flo takes an f32 (H, W, 2) array, got " +
                      (flow.empty() ? std::string("an empty array")
                                    : std::string(dtype_name(flow.dtype())) + " " + flow.shape().str()));
  }
  const Array host = flow.memory().is_host() ? flow : flow.to_host();
  const std::int32_t size[2] = {static_cast<std::int32_t>(host.shape()[1]), static_cast<std::int32_t>(host.shape()[0])};
  detail::PendingFile out(path);
  out.write(&kFloTag, sizeof kFloTag);
  out.write(size, sizeof size);
  out.write(host.raw(), host.bytes());
  out.commit();
}

}  // namespace weft::io
