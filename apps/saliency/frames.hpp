#pragma once
// Frames in and saliency maps out for `weft saliency`: the `read` source (HDF5 video, PNG/PGM
// sequence or single image) and the `write` sink (HDF5 /saliency [T,H,W], optional heat maps).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "weft/graph/task.hpp"

namespace weft::saliency_app {

/// What --input names, resolved once on every rank (metadata only).
struct FrameInput {
  enum Kind : std::uint8_t { hdf5, images } kind = images;
  std::string dataset;               ///< hdf5: "file.h5:/path"
  std::vector<std::string> files;    ///< images: one path per frame
  std::int64_t frames = 0, height = 0, width = 0;
  DType dtype = DType::u8;
};

/// Resolves --input values: "FILE.h5:/path" ([T,H,W] or [H,W], u8/u16/f32), a pattern with one
/// frame number, %d or %0Nd ("frame%03d.png", numbered from 0 or 1 up to the first missing; read
/// here, never a printf format), or image files (several
/// values or a comma-separated list). `max_frames` > 0 keeps the first ones. Throws ConfigError.
[[nodiscard]] FrameInput resolve_input(const std::vector<std::string>& values, std::int64_t max_frames);

/// Source `read`: frame t as a 2D [H, W] array (u8, u16 or f32), then the end of the stream.
class FrameSource final : public Task {
 public:
  FrameSource(std::string name, FrameInput input);
  Out<Array> out = output<Array>("out", std::nullopt, 2);
  void run(Context& ctx) override;

 private:
  FrameInput input_;
  std::int64_t next_ = 0;
};

struct SinkOptions {
  std::string output;     ///< HDF5 file written under a temporary name, renamed after the last frame
  std::string png_dir;    ///< heat maps saliency_NNNN.png over the frames, empty: none
  std::string pathway = "static";  ///< static | dynamic | fused
  bool all_maps = false;  ///< also /static and/or /dynamic (the fused pathway takes them on inputs
                          ///< "static" and "dynamic"; otherwise they are /saliency itself)
  std::string input;      ///< recorded as an attribute
  std::int64_t frames = 0;
  bool progress = true;   ///< a bar or progress lines (cli::Progress)
};

/// Sink `write`: the saliency map [H, W or Wf] (cropped to the frame's width) and the frame →
/// /saliency[t]; with the fused pathway and all_maps, also inputs "static" and "dynamic".
class SaliencySink final : public Task {
 public:
  SaliencySink(std::string name, SinkOptions options);
  ~SaliencySink() override;
  In<Array> map = input<Array>("map", DType::f32, 2);
  In<Array> frame = input<Array>("frame", std::nullopt, 2);
  In<Array> static_map, dynamic_map;  ///< connected only for the fused pathway with all_maps
  void run(Context& ctx) override;

 private:
  struct Writer;
  SinkOptions options_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<cli::Progress> progress_;
};

/// Writes a small video FILE.h5:/frames u8 [frames, height, width]: textured background with a
/// bright bar crossing it (for trying the command and for benchmarks).
void generate_sample(const std::string& file, std::int64_t frames, std::int64_t height, std::int64_t width);

}  // namespace weft::saliency_app
