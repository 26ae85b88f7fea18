// Chunk places by H5Dread_chunk through a recording file driver (chunk_places.hpp says why).
#include "chunk_places.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace weft::io::detail {

#if H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 5
#define WEFT_CHUNK_PLACES 1

namespace {

/// One file opened by the driver: HDF5's part first, as the driver interface requires.
struct DriverFile {
  H5FD_t pub;
  int fd = -1;
  haddr_t eoa = 0, eof = 0;
  dev_t device = 0;
  ino_t inode = 0;
};

/// The raw-data read of the chunk being asked for (set around one H5Dread_chunk, under H5Lock).
struct Recorded {
  haddr_t offset = HADDR_UNDEF;
  std::size_t size = 0;
  int reads = 0;
};
Recorded* recording = nullptr;

H5FD_t* driver_open(const char* name, unsigned flags, hid_t /*fapl*/, haddr_t /*maxaddr*/) {
  if ((flags & (H5F_ACC_RDWR | H5F_ACC_TRUNC | H5F_ACC_CREAT | H5F_ACC_EXCL)) != 0) return nullptr;  // read-only
  const int fd = ::open(name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return nullptr;
  }
  auto* file = new DriverFile{};
  file->fd = fd;
  file->eof = static_cast<haddr_t>(st.st_size);
  file->device = st.st_dev;
  file->inode = st.st_ino;
  return &file->pub;
}

herr_t driver_close(H5FD_t* f) {
  auto* file = reinterpret_cast<DriverFile*>(f);
  const int status = ::close(file->fd);
  delete file;
  return status == 0 ? 0 : -1;
}

int driver_compare(const H5FD_t* a, const H5FD_t* b) {
  const auto* x = reinterpret_cast<const DriverFile*>(a);
  const auto* y = reinterpret_cast<const DriverFile*>(b);
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->inode != y->inode) return x->inode < y->inode ? -1 : 1;
  return 0;
}

herr_t driver_query(const H5FD_t* /*file*/, unsigned long* flags) {
  // Metadata may be gathered; raw data is never sieved, so that a chunk comes as one read.
  *flags = H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_AGGREGATE_METADATA;
  return 0;
}

haddr_t driver_get_eoa(const H5FD_t* f, H5FD_mem_t /*type*/) { return reinterpret_cast<const DriverFile*>(f)->eoa; }

herr_t driver_set_eoa(H5FD_t* f, H5FD_mem_t /*type*/, haddr_t addr) {
  reinterpret_cast<DriverFile*>(f)->eoa = addr;
  return 0;
}

haddr_t driver_get_eof(const H5FD_t* f, H5FD_mem_t /*type*/) { return reinterpret_cast<const DriverFile*>(f)->eof; }

herr_t driver_read(H5FD_t* f, H5FD_mem_t type, hid_t /*dxpl*/, haddr_t addr, std::size_t size, void* buffer) {
  if (type == H5FD_MEM_DRAW && recording) {  // the chunk asked for: where it is, not its bytes
    recording->offset = addr;
    recording->size = size;
    ++recording->reads;
    return 0;
  }
  const auto* file = reinterpret_cast<DriverFile*>(f);
  auto* at = static_cast<char*>(buffer);
  while (size > 0) {
    const ssize_t got = ::pread(file->fd, at, size, static_cast<off_t>(addr));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) {  // past the end of the file: zeros, as HDF5's own drivers give
      std::memset(at, 0, size);
      break;
    }
    at += got;
    addr += static_cast<haddr_t>(got);
    size -= static_cast<std::size_t>(got);
  }
  return 0;
}

herr_t driver_write(H5FD_t*, H5FD_mem_t, hid_t, haddr_t, std::size_t, const void*) { return -1; }

// Members in the order of HDF5 1.10's H5FD_class_t; those left null take the library's defaults.
const H5FD_class_t kDriver = {
    .name = "weft_chunk_places",
    .maxaddr = (haddr_t{1} << 62) - 1,
    .fc_degree = H5F_CLOSE_WEAK,
    .terminate = nullptr,
    .sb_size = nullptr,
    .sb_encode = nullptr,
    .sb_decode = nullptr,
    .fapl_size = 0,
    .fapl_get = nullptr,
    .fapl_copy = nullptr,
    .fapl_free = nullptr,
    .dxpl_size = 0,
    .dxpl_copy = nullptr,
    .dxpl_free = nullptr,
    .open = driver_open,
    .close = driver_close,
    .cmp = driver_compare,
    .query = driver_query,
    .get_type_map = nullptr,
    .alloc = nullptr,
    .free = nullptr,
    .get_eoa = driver_get_eoa,
    .set_eoa = driver_set_eoa,
    .get_eof = driver_get_eof,
    .get_handle = nullptr,
    .read = driver_read,
    .write = driver_write,
    .flush = nullptr,
    .truncate = nullptr,
    .lock = nullptr,
    .unlock = nullptr,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

/// The driver's identifier, registered on first use (again if the library was closed since).
hid_t driver_id() {
  static hid_t id = -1;
  if (id < 0 || H5Iis_valid(id) <= 0) id = H5FDregister(&kDriver);
  return id;
}

}  // namespace

#endif

std::unique_ptr<ChunkPlaces> ChunkPlaces::open(const DatasetRef& ref) {
#ifdef WEFT_CHUNK_PLACES
  const hid_t driver = driver_id();
  if (driver < 0) return nullptr;
  const H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (fapl.get() < 0 || H5Pset_driver(fapl.get(), driver, nullptr) < 0) return nullptr;
  std::unique_ptr<ChunkPlaces> out(new ChunkPlaces());
  out->file_ = H5Handle(H5Fopen(ref.file.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (out->file_.get() < 0) return nullptr;
  out->dataset_ = H5Handle(H5Dopen2(out->file_.get(), ref.path.c_str(), H5P_DEFAULT));
  if (out->dataset_.get() < 0) return nullptr;
  return out;
#else
  (void)ref;
  return nullptr;
#endif
}

ChunkPlaces::~ChunkPlaces() = default;

bool ChunkPlaces::locate(const hsize_t* offset, Place& place) {
#ifdef WEFT_CHUNK_PLACES
  hsize_t stored = 0;
  if (H5Dget_chunk_storage_size(dataset_.get(), offset, &stored) < 0 || stored == 0) return false;  // not allocated
  if (buffer_.size() < stored) buffer_.resize(stored);
  Recorded read;
  std::uint32_t filters = 0;
  recording = &read;
  const herr_t status = H5Dread_chunk(dataset_.get(), H5P_DEFAULT, offset, &filters, buffer_.data());
  recording = nullptr;
  if (status < 0 || read.reads != 1 || read.offset == HADDR_UNDEF || read.size != stored) return false;
  place.offset = static_cast<std::int64_t>(read.offset);
  place.size = static_cast<std::int64_t>(read.size);
  place.filter_mask = filters;
  return true;
#else
  (void)offset;
  (void)place;
  return false;
#endif
}

}  // namespace weft::io::detail
