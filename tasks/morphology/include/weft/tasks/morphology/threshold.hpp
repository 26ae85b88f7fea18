#pragma once
/// Foreground selection for the granulometry: fixed thresholds and Otsu's threshold.
#include <cstdint>
#include <functional>
#include <optional>

#include "weft/data/array.hpp"
#include "weft/tasks/morphology/values.hpp"

namespace weft::morphology {

/// u8 0/1 mask of `volume` (host, any dtype but f16): 1 where value ≥ threshold (values.hpp's rule).
[[nodiscard]] Array threshold_mask(const Array& volume, const Foreground& threshold);
/// u8 0/1 mask where the value is non-zero (the default for binary data).
[[nodiscard]] Array nonzero_mask(const Array& volume);
/// Otsu's threshold of a host array (any dtype but f16: values.hpp's otsu_threshold); returns the
/// smallest value counted as foreground.
[[nodiscard]] double otsu_threshold(const Array& volume);

// Foreground bits: a volume's planes read, thresholded and packed in one pass, one bit per voxel,
// so that a slab travels to its GPU in an eighth of the bytes of its u8 mask. Voxel i = y·X + x
// of a plane is bit i % 8 (least significant first) of byte i / 8 of that plane's row of
// foreground_plane_bytes(Y, X) bytes; the bits past the plane's last voxel are zero. A packed
// mask is a host or device u8 array [planes, foreground_plane_bytes(Y, X)] (2-D, where the
// u8 mask is 3-D).

/// Bytes of one plane's foreground bits.
[[nodiscard]] constexpr std::int64_t foreground_plane_bytes(std::int64_t height, std::int64_t width) {
  return (height * width + 7) / 8;
}

/// The readers below fetch their pieces on the process's reading threads (read_threads() of them,
/// and the calling thread), shared by every reader. While a ReadTurn lives, the calls of its
/// thread are served after those of lower turns (calls without one have turn 0), then of lower
/// orders within the turn, then in their order of arrival: the slab readers of a rank, each under
/// its slab's number, read one slab after the other at the rate of all the reading threads. The
/// order keeps the pieces of one reader that has several calls in flight (SlabSource reads its next
/// piece while it waits for the current one) in its sequence, whichever thread calls first.
/// `passive`: the thread's calls wait for the pool's threads instead of reading too (a reader's
/// reads started ahead, which would otherwise add a reading thread each to the cores' load).
class ReadTurn {
 public:
  explicit ReadTurn(std::int64_t turn, std::int64_t order = 0, bool passive = false);
  ~ReadTurn();
  ReadTurn(const ReadTurn&) = delete;
  ReadTurn& operator=(const ReadTurn&) = delete;

 private:
  std::int64_t previous_, previous_order_;
  bool previous_passive_;
};

/// Copies `bytes` from `from` to `to` in pieces on the reading threads (and the calling thread),
/// served in the calling thread's ReadTurn as its reads are: a copy that belongs to a turn (a
/// halo handed to another rank) takes the turn's threads for a moment instead of threads of its
/// own beside them.
void copy_on_read_threads(void* to, const void* from, std::size_t bytes);

/// The process's reading threads: WEFT_READ_THREADS, else three quarters of the CPUs it may use,
/// divided among the ranks of its host; where they read in turns, three quarters of the host's
/// CPUs, the threads allowed on all of them (unless WEFT_KEEP_BINDING=1). Started on first use.
[[nodiscard]] int read_threads();

/// Says that the ranks of this host read one at a time (SlabReadTurns), so that each rank's reading
/// threads are those of the whole host (read_threads). Call it before the first read: the threads
/// are started then, and later calls change nothing.
void read_in_host_turns(bool on) noexcept;

/// Puts values [voxel, voxel + voxels) of the planes being read (voxel 0: the first plane's first
/// voxel) in `to`; called from several threads at once, each piece at most a few MB.
using ValueFetch = std::function<void(std::int64_t voxel, std::int64_t voxels, void* to)>;

/// Foreground bits of `planes` planes of Y × X values of `type` fetched by pieces on every core,
/// each piece through its thread's own buffer (the values are never all in memory at once), into
/// `bits` (planes · foreground_plane_bytes(Y, X) bytes).
void read_foreground_bits(const ValueFetch& fetch, ValueType type, std::int64_t planes, std::int64_t height,
                          std::int64_t width, const Foreground& foreground, std::uint8_t* bits);
/// The same into a new host array [planes, foreground_plane_bytes(Y, X)].
[[nodiscard]] Array read_foreground_bits(const ValueFetch& fetch, ValueType type, std::int64_t planes,
                                         std::int64_t height, std::int64_t width, const Foreground& foreground);
/// Puts the values of chunk k (a whole chunk, cz · cy · cx values in C order) in `to`.
using ChunkFetch = std::function<void(std::int64_t chunk, void* to)>;

/// Chunks of cz × cy × cx values of a volume of Y × X planes: the chunk rows first_row ..
/// first_row + rows − 1, each of per_y × per_x chunks, chunk k = (row − first_row) · per_y · per_x +
/// iy · per_x + ix (io::RawChunks lists their file offsets in that order).
struct ChunkGrid {
  std::int64_t cz = 1, cy = 1, cx = 1;
  std::int64_t first_row = 0, rows = 0, per_y = 0, per_x = 0;
};

/// Foreground bits of planes [first, first + planes) of a volume of Y × X planes stored in the
/// chunks of `grid` (those chunk rows must hold the planes), fetched and packed on every core by
/// pieces of a run of chunks side by side along x, into `bits`. Each chunk's rows must start on a
/// byte of bits: X and cx multiples of 8 (whether that holds: chunked_bits_fit); throws
/// ConfigError otherwise.
void read_foreground_bits_chunked(const ChunkFetch& fetch, ValueType type, const ChunkGrid& grid, std::int64_t first,
                                  std::int64_t planes, std::int64_t height, std::int64_t width,
                                  const Foreground& foreground, std::uint8_t* bits);
/// The values themselves: planes [first, first + planes) of the chunks of `grid` (any chunk width)
/// copied into `to` (planes · Y · X values of `type`, C order), by the same pieces on every core.
void read_values_chunked(const ChunkFetch& fetch, ValueType type, const ChunkGrid& grid, std::int64_t first,
                         std::int64_t planes, std::int64_t height, std::int64_t width, void* to);
/// The values of `planes` planes of Y × X values fetched by pieces on every core straight into
/// `to`: fetch(voxel, voxels, to + voxel · size) for each piece.
void read_values(const ValueFetch& fetch, ValueType type, std::int64_t planes, std::int64_t height, std::int64_t width,
                 void* to);
/// Whether read_foreground_bits_chunked takes chunks `cx` wide of planes `width` wide.
[[nodiscard]] constexpr bool chunked_bits_fit(std::int64_t width, std::int64_t cx) {
  return width % 8 == 0 && cx % 8 == 0;
}

/// Foreground bits of a host volume [Z, Y, X] (any dtype but f16).
[[nodiscard]] Array foreground_bits(const Array& volume, const Foreground& foreground);
/// Foreground bits of `planes` planes of Y × X values of `type` at `values` (host), packed on every core.
[[nodiscard]] Array foreground_bits(const void* values, ValueType type, std::int64_t planes, std::int64_t height,
                                    std::int64_t width, const Foreground& foreground);
/// Whether `mask` is a packed mask of planes of Y × X voxels (else it should be a u8 mask).
[[nodiscard]] bool is_foreground_bits(const Array& mask, std::int64_t height, std::int64_t width);
/// The u8 0/1 mask [planes, Y, X] of host foreground bits.
[[nodiscard]] Array unpack_foreground(const Array& bits, std::int64_t height, std::int64_t width);
/// The same from host bits (planes · foreground_plane_bytes(Y, X) bytes) into the host mask `to`
/// (planes · Y · X bytes), e.g. straight into a slab.
void unpack_foreground(const std::uint8_t* bits, std::int64_t planes, std::int64_t height, std::int64_t width,
                       std::uint8_t* to);
#if defined(WEFT_HAVE_CUDA)
/// The same on a GPU: device bits (planes · foreground_plane_bytes(Y, X) bytes) into the device
/// u8 mask `to` (planes · Y · X bytes), on `stream`.
void unpack_foreground_gpu(const void* bits, void* to, std::int64_t planes, std::int64_t height, std::int64_t width,
                           void* stream);
#endif

}  // namespace weft::morphology
