#pragma once
/// HDF5 datasets: references "file.h5:/group/dataset", whole reads, slabs along the slowest axis,
/// and a writer that builds a file under a temporary name and renames it into place on commit().
/// Every HDF5 call of this library holds one process-wide mutex (the library's own lock serialises
/// calls anyway, and builds without it are not thread-safe).
/// Library failures throw weft::IoError naming file, dataset and operation; bad references,
/// unsupported element types and out-of-range slabs throw weft::ConfigError.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/data/dtype.hpp"

namespace weft::io {

/// The HDF5 library's version, "1.10.8" (as loaded, not as compiled against).
[[nodiscard]] std::string hdf5_version();

/// A dataset inside a file.
struct DatasetRef {
  std::string file;
  std::string path;
  [[nodiscard]] std::string str() const { return file + ":" + path; }  ///< "file.h5:/a/b"
};

/// Parses "file.h5:/a/b" (split at the last ':'); a missing ':' or empty file or path is a ConfigError.
[[nodiscard]] DatasetRef parse_dataset_ref(const std::string& text);

/// Element type and extents (slowest axis first) of a dataset; `chunk` is empty when contiguous.
struct DatasetInfo {
  DType dtype = DType::u8;  ///< as read_dataset returns it (u8 for the elements DType lacks)
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> chunk;
  /// The element type as stored: "bool" (h5py's), "i8", "u8", "i16", "u16", "i32", "u32", "i64",
  /// "u64", "f16", "f32", "f64", and its bytes (read_slab_values reads those as they are).
  std::string element = "u8";
  std::int64_t element_bytes = 1;
};

/// Element types: u8, u16, i32, f16 (16-bit IEEE floats), f32, f64; others are a ConfigError,
/// unless `any_number`: then every element type `element` names is accepted (read such datasets
/// with read_slab_values; read_dataset and read_slab refuse those DType lacks).
[[nodiscard]] DatasetInfo dataset_info(const DatasetRef& ref, bool any_number = false);

/// dataset_info, after the checks a program makes before it reads anything: every filter of the
/// dataset's pipeline can be undone by this HDF5 (ConfigError naming the filter, e.g. lzf), the
/// element count and byte size fit in 64 bits, a contiguous dataset's bytes lie inside the file,
/// and a chunked dataset has every chunk written (a file whose writer stopped early would read as
/// fill values: ConfigError saying how many chunks are missing). `what` prefixes the messages.
[[nodiscard]] DatasetInfo checked_dataset_info(const DatasetRef& ref, const std::string& what,
                                               bool any_number = false);

/// The names of a dataset's filters, in pipeline order ("deflate", "shuffle", "lzf", ...).
[[nodiscard]] std::vector<std::string> dataset_filters(const DatasetRef& ref);

/// Reads a whole dataset of rank 1 to 3 into a host array.
[[nodiscard]] Array read_dataset(const DatasetRef& ref);

/// Reads elements [z0, z0+nz) of axis 0 of a 2D or 3D dataset (a hyperslab; other axes whole).
/// Of a 4D dataset, one element (nz == 1) is read, returned without axis 0 (e.g. a flow [H, W, 2]).
[[nodiscard]] Array read_slab(const DatasetRef& ref, std::int64_t z0, std::int64_t nz);

/// Planes [z0, z0 + nz) of axis 0 of a 3-D dataset of any element type (DatasetInfo::element) into
/// `to` (nz · Y · X · element_bytes bytes), as stored, in this host's byte order (bool as bytes
/// 0 and 1), through the library. ConfigError for planes outside the dataset or another rank.
void read_slab_values(const DatasetRef& ref, std::int64_t z0, std::int64_t nz, void* to);

/// Where a dataset's elements lie in its file, for reads that bypass the library (pread by pieces
/// on every core, where H5Dread runs on one thread under the process-wide mutex).
struct RawExtent {
  std::int64_t offset = 0;  ///< byte of the first element in the file
  DType dtype = DType::u8;  ///< u8 for the elements DType lacks: see `element`
  std::vector<std::int64_t> shape;
  std::string element = "u8";  ///< DatasetInfo::element
  std::int64_t element_bytes = 1;
};

/// The raw extent of a contiguous dataset of any element type whose storage is allocated, in the
/// file itself (no external storage, no user block) and in this host's byte order; nullopt for any other dataset
/// (chunked, compressed, not yet written, big-endian, ...), which read_slab reads.
[[nodiscard]] std::optional<RawExtent> raw_extent(const DatasetRef& ref);

/// The chunks of a chunked 3-D dataset that hold planes [z0, z0 + nz), for reads that bypass the
/// library: every chunk of chunk rows first_row .. first_row + rows − 1 (row r holds planes
/// [r · chunk[0], (r + 1) · chunk[0])), its file offset, stored size and filter mask at index
/// (r − first_row) · per_y · per_x + iy · per_x + ix; each chunk is chunk[0] × chunk[1] × chunk[2]
/// elements in C order once its filters are undone (RawFile::read_chunk), edge chunks too (their
/// elements past the dataset are padding).
struct RawChunks {
  DType dtype = DType::u8;  ///< u8 for the elements DType lacks: see `element`
  std::string element = "u8";  ///< DatasetInfo::element
  std::int64_t element_bytes = 1;
  std::vector<std::int64_t> shape, chunk;
  std::int64_t first_row = 0, rows = 0, per_y = 0, per_x = 0;
  std::vector<std::int64_t> offsets, sizes;
  std::vector<unsigned> filter_masks;  ///< bit i: filter i of the pipeline skipped for that chunk
  bool shuffle = false;                ///< the pipeline's first filter is the byte shuffle
  bool deflate = false;                ///< its last (first without shuffle) is deflate (gzip)
  [[nodiscard]] std::int64_t chunk_bytes() const;
};

/// The raw chunks of planes [z0, z0 + nz) of a chunked 3-D dataset stored without filters, or
/// with deflate (gzip), alone or after the byte shuffle; in the file itself (no user block), in
/// this host's byte order, every chunk of them allocated. nullopt for any other dataset, which
/// read_slab reads. Each call asks the library for every chunk of those rows: ChunkIndex keeps them.
[[nodiscard]] std::optional<RawChunks> raw_chunks(const DatasetRef& ref, std::int64_t z0, std::int64_t nz);

/// raw_chunks of one dataset, each chunk row asked of the library once and kept (thread-safe): a
/// program that reads the same planes several times (slabs with halos, a first pass for the
/// largest distance, Otsu's histogram) asks for each chunk once. On HDF5 1.10 a chunk's place
/// comes from a lookup (H5Dread_chunk through a file driver that records where it would read:
/// src/chunk_places.hpp), not from H5Dget_chunk_info_by_coord, which walks the dataset's whole chunk
/// index for each chunk: 32768 chunks listed in 0.04 s instead of 8.8 s on the development machine
/// (a probe, printed, not kept).
/// Other HDF5 versions use H5Dget_chunk_info_by_coord.
class ChunkIndex {
 public:
  /// The index of `ref`, none where raw_chunks refuses the dataset whatever the planes (not a
  /// chunked 3-D dataset, other filters, not this host's byte order). IoError if it cannot be read.
  [[nodiscard]] static std::shared_ptr<ChunkIndex> open(const DatasetRef& ref);
  /// raw_chunks(ref, z0, nz): nullopt where a chunk of those rows is not allocated or not stored as
  /// expected; ConfigError for planes outside the dataset.
  [[nodiscard]] std::optional<RawChunks> planes(std::int64_t z0, std::int64_t nz);

 private:
  struct Row {
    bool asked = false, usable = false;
    std::vector<std::int64_t> offsets, sizes;
    std::vector<unsigned> filter_masks;
  };
  ChunkIndex(DatasetRef ref, RawChunks layout);
  DatasetRef ref_;
  RawChunks layout_;  ///< dtype, shape, chunk, per_y, per_x, shuffle, deflate (no chunks)
  std::mutex mutex_;
  std::vector<Row> rows_;
};

/// A file read by ranges from several threads at once (pread; no HDF5 call, no lock).
class RawFile {
 public:
  explicit RawFile(std::string path);  ///< IoError naming the file if it cannot be opened
  ~RawFile();
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
  /// Reads bytes [offset, offset + bytes) into `to`; IoError naming the file and range otherwise.
  void read(std::int64_t offset, std::int64_t bytes, void* to) const;
  /// Chunk k of `chunks` (of this file) into `to` (chunk_bytes()), its filters undone: inflated,
  /// unshuffled. IoError naming the file and chunk if it does not inflate to a whole chunk.
  void read_chunk(const RawChunks& chunks, std::int64_t k, void* to) const;

 private:
  std::string path_;
  int fd_ = -1;
};

/// Writes one HDF5 file: datasets (with intermediate groups), slabs of large datasets, attributes.
/// The file is "<final_path>.tmp-<pid>-<n>-<random>", created exclusively, until commit();
/// destroying an uncommitted writer removes it.
class H5Writer {
 public:
  explicit H5Writer(std::string final_path);
  ~H5Writer();
  H5Writer(const H5Writer&) = delete;
  H5Writer& operator=(const H5Writer&) = delete;

  /// Writes `data` (host or device) as dataset `path`, replacing one of the same name. A non-empty
  /// `chunk_shape` (one extent per axis, clipped to the data) makes it chunked, gzip level 4 if `compress`.
  void write(const std::string& path, const Array& data, std::vector<std::int64_t> chunk_shape = {},
             bool compress = false);
  /// Writes a 1D f64 dataset.
  void write_vector(const std::string& path, const std::vector<double>& values);

  /// Creates dataset `path` of `shape` without writing data, to be filled with write_slab().
  void create(const std::string& path, DType dtype, Shape shape, std::vector<std::int64_t> chunk_shape = {},
              bool compress = false);
  /// Same for datasets of any rank (e.g. 4-D flows [T, H, W, 2]), extents slowest axis first.
  void create(const std::string& path, DType dtype, const std::vector<std::int64_t>& extents,
              std::vector<std::int64_t> chunk_shape = {}, bool compress = false);
  /// Creates a chunked dataset that declares the deflate (gzip) filter at `level`, `fill` where no
  /// chunk is written, for chunks the caller deflates itself (write_chunks; DeflatedVolume).
  void create_deflated(const std::string& path, DType dtype, const std::vector<std::int64_t>& extents,
                       const std::vector<std::int64_t>& chunk, int level, double fill);
  /// A chunk already through the dataset's filters, at element `offset` (a corner of the chunk grid).
  struct StoredChunk {
    std::vector<std::int64_t> offset;
    const void* data = nullptr;
    std::size_t bytes = 0;
  };
  /// Stores `chunks` as they are (H5Dwrite_chunk, every filter applied), the dataset opened once.
  void write_chunks(const std::string& path, const std::vector<StoredChunk>& chunks);
  /// Writes `slab` at [z0, z0 + slab.shape()[0]) of axis 0 of a created dataset; its other extents must
  /// match. A slab of rank one less than the dataset is one element of axis 0.
  void write_slab(const std::string& path, std::int64_t z0, const Array& slab);

  /// Sets an attribute on a dataset or group (`object_path` "/" for the file), replacing one of that name.
  void attribute(const std::string& object_path, const std::string& name, double value);
  void attribute(const std::string& object_path, const std::string& name, std::int64_t value);
  void attribute(const std::string& object_path, const std::string& name, int value) {
    attribute(object_path, name, static_cast<std::int64_t>(value));
  }
  void attribute(const std::string& object_path, const std::string& name, const char* value) {
    attribute(object_path, name, std::string(value));
  }
  void attribute(const std::string& object_path, const std::string& name, const std::string& value);

  /// Closes the file and renames it to the final path. Further writes throw.
  void commit();
  [[nodiscard]] const std::string& final_path() const noexcept { return final_path_; }

 private:
  void check_open(const char* operation) const;
  std::string final_path_;
  std::string temp_path_;
  std::int64_t file_ = -1;  // hid_t
};

}  // namespace weft::io
