// Foreground selection: fixed threshold, non-zero, Otsu (histogram, between-class variance).
#include "weft/tasks/morphology/threshold.hpp"

#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>


#include "foreground_rule.hpp"
#include "parallel.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/settings.hpp"

namespace weft::morphology {
namespace {

thread_local std::int64_t read_turn = 0;   // ReadTurn of this thread
thread_local std::int64_t read_order = 0;  // and its order within the turn
thread_local int in_piece = 0;             // pieces of the reading pool this thread is inside
thread_local bool read_passive = false;    // ReadTurn's `passive`: this thread's calls take no piece
std::atomic<bool> host_turns{false};       // read_in_host_turns

/// Voxels of a piece that one thread fetches and packs (a multiple of 8; 1 MB of f32).
constexpr std::int64_t kPieceVoxels = std::int64_t{1} << 18;

/// Reading threads (threads() of them), started on first use and kept, that every reader of the
/// process shares: a rank reading the slabs of its 4 GPUs runs one set of reading threads, not one
/// per reader, and makes no thread nor buffer per call. (With a thread per core and per call for each
/// reader, one rank's 4 readers took 0.18-0.25 s for the 4 slabs of a 2048^3 volume on a 4xH200
/// host, where 4 ranks, one reader each, took 0.09-0.12 s, printed by granulometry_slabs_bench.)
/// A call's pieces are taken by the pool's threads and by the calling threads,
/// which serve the calls in the order of their turn (ReadTurn of the calling thread; 0 without one),
/// then of their order within it, then of their arrival: a calling thread reads the calls before
/// its own first, then its own, and waits once every piece of its own is taken. The slab
/// readers of a rank read one slab after the other at the rate of every core, so that the first
/// GPU starts its openings after its own slab's read rather than after all of them. A pool thread
/// chooses again whenever a call arrives (one that stayed on its call until every piece was taken
/// let the 4 slab readers of a 4xH200 rank take their turns barely at all: each was busy 0.06 s,
/// printed by granulometry_slabs_bench with WEFT_SLABS_VERBOSE=1).
class ReadPool {
 public:
  static ReadPool& get() {
    static ReadPool* pool = new ReadPool(threads());  // never destroyed: its threads outlive main
    return *pool;
  }

  [[nodiscard]] int threads_started() const { return threads_; }

  /// Runs body(k) for k in [0, count), on the pool and the calling thread; rethrows the first error
  /// (the pieces not yet started are then skipped).
  void run(std::int64_t count, const std::function<void(std::int64_t)>& body) {
    if (count <= 0) return;
    auto job = std::make_shared<Job>(count, body, read_turn, read_order);
    {
      const std::lock_guard lock(mutex_);
      // After every call of an earlier turn, or of the same turn and the same or an earlier order.
      const auto at = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& j) {
        return j->turn > job->turn || (j->turn == job->turn && j->order > job->order);
      });
      jobs_.insert(at, job);
      arrivals_.fetch_add(1);
    }
    wake_.notify_all();
    // The calling thread reads like a pool thread until its call's pieces are all taken: the call
    // of the lowest turn first, its own only when none comes before it. (Working on its own call
    // alone, each of the 4 slab readers of a 4xH200 rank, and each one's read ahead, kept a core
    // on its own slab whatever its turn, at the first slab's expense.)
    // A call made from inside a piece (a fetch that itself reads through the pool) keeps to its own;
    // a passive thread's (ReadTurn) takes no piece and waits for the pool's threads.
    if (in_piece > 0) work(*job);
    while (!read_passive && job->next.load() < job->count) {
      std::shared_ptr<Job> first;
      {
        const std::lock_guard lock(mutex_);
        first = first_open();
      }
      work(first ? *first : *job, &arrivals_);
    }
    std::unique_lock lock(job->mutex);
    job->finished.wait(lock, [&] { return job->done == job->count; });
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  struct Job {
    Job(std::int64_t n, const std::function<void(std::int64_t)>& b, std::int64_t t, std::int64_t o)
        : count(n), turn(t), order(o), body(b) {}
    const std::int64_t count;
    const std::int64_t turn, order;
    const std::function<void(std::int64_t)>& body;
    std::atomic<std::int64_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::condition_variable finished;
    std::int64_t done = 0;  // pieces ended (guarded by mutex)
    std::exception_ptr error;
  };

  /// WEFT_READ_THREADS, else three quarters of the CPUs this process may use, shared with the
  /// other ranks of its host unless they read in turns (read_in_host_turns): the rest is left to the threads that the runtime runs beside the
  /// readers (a GPU task's thread waits on its events spinning). With a thread per core on a
  /// 4xH200 host (64 cores) a piece's thread was often descheduled and every call waited for it:
  /// the four slab readers of a rank barely took turns (busy 0.051 / 0.059 / 0.060 / 0.062 s, cube);
  /// with 48, 0.033 / 0.042 / 0.055 / 0.063 s, and the 4-GPU wall 0.683 -> 0.671 s (octahedron
  /// 0.551 -> 0.509 s); 24 gave the same walls (granulometry_slabs_bench, printed, not kept).
  static int threads() {
    if (const auto n = settings().read_threads) return *n;
    int cpus = worker_count_hint();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) cpus = CPU_COUNT(&set);
    if (const auto host = host_cpus()) cpus = CPU_COUNT(&*host);
    int on_host = 1;
    if (const Environment* env = Environment::current(); env && env->distributed() && !host_turns.load()) {
      const auto& ranks = env->cluster().ranks;
      const auto me = static_cast<std::size_t>(env->rank());
      if (me < ranks.size())
        on_host = static_cast<int>(std::count_if(ranks.begin(), ranks.end(),
                                                 [&](const RankInfo& r) { return r.host == ranks[me].host; }));
    }
    return std::max(1, cpus * 3 / 4 / std::max(1, on_host));
  }

  /// Where the ranks of the host read in turns (read_in_host_turns), the CPUs of the whole host
  /// that this process may be moved to: every online CPU that sched_setaffinity accepts (cgroups
  /// may forbid some), probed on a thread of its own. A rank that the launcher bound to one core
  /// has its share of the node's CPUs (Environment), so that its reading threads, which read
  /// while the host's other ranks do not, would use a fraction of the host: on a 2xH200 host a
  /// rank had 16 of 32 CPUs, 12 reading threads, and the two slabs' reads in turns took 0.19 s
  /// (granulometry_slabs_bench). None otherwise, or with WEFT_KEEP_BINDING=1.
  static std::optional<cpu_set_t> host_cpus() {
    if (!host_turns.load()) return std::nullopt;
    if (settings().keep_binding) return std::nullopt;
    static const std::optional<cpu_set_t> cpus = [] {
      cpu_set_t out;
      CPU_ZERO(&out);
      std::thread([&out] {
        for (int c = 0; c < std::min(get_nprocs_conf(), CPU_SETSIZE); ++c) {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(c, &one);
          if (sched_setaffinity(0, sizeof one, &one) == 0) CPU_SET(c, &out);
        }
      }).join();
      return CPU_COUNT(&out) > 0 ? std::optional<cpu_set_t>(out) : std::nullopt;
    }();
    return cpus;
  }

  explicit ReadPool(int threads) : threads_(threads) {
    const auto host = host_cpus();
    for (int i = 0; i < threads; ++i)
      std::thread([this, host] {
        if (host) sched_setaffinity(0, sizeof *host, &*host);  // this thread only
        loop();
      }).detach();
  }

  /// Takes pieces of `job` until none is left, or (with `arrivals`) until a call arrives: the pool's
  /// threads then choose again, so that a call of a lower turn is served within a piece.
  static void work(Job& job, const std::atomic<std::uint64_t>* arrivals = nullptr) {
    const std::uint64_t seen = arrivals ? arrivals->load() : 0;
    for (std::int64_t k; (k = job.next.fetch_add(1)) < job.count;) {
      std::exception_ptr error;
      if (!job.failed.load()) {
        try {
          ++in_piece;
          const struct Leave { ~Leave() { --in_piece; } } leave;
          job.body(k);
        } catch (...) {
          error = std::current_exception();
          job.failed = true;
        }
      }
      {
        const std::lock_guard lock(job.mutex);
        if (error && !job.error) job.error = error;
        if (++job.done == job.count) job.finished.notify_all();
      }
      if (arrivals && arrivals->load() != seen) return;
    }
  }

  /// The first call with pieces left (lowest turn and order), none if there is none; the calls
  /// whose every piece is taken leave the queue. Under mutex_.
  std::shared_ptr<Job> first_open() {
    std::erase_if(jobs_, [](const auto& j) { return j->next.load() >= j->count; });
    return jobs_.empty() ? nullptr : jobs_.front();
  }

  void loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return !jobs_.empty(); });
        job = first_open();
        if (!job) continue;
      }
      work(*job, &arrivals_);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<std::uint64_t> arrivals_{0};  // calls so far
  const int threads_;
};

}  // namespace

namespace {

/// Packs `planes` planes of Y × X values into `bits`, by pieces of a plane on every core:
/// values(z, from, n) points at the n values of plane z from voxel `from`.
template <class Values>
void pack_pieces(ValueType type, std::int64_t planes, std::int64_t height, std::int64_t width,
                 const Foreground& foreground, std::uint8_t* bits, Values values) {
  const std::int64_t plane = height * width, row = foreground_plane_bytes(height, width);
  if (planes <= 0 || plane <= 0) return;
  const std::int64_t pieces = (plane + kPieceVoxels - 1) / kPieceVoxels;
  ReadPool::get().run(planes * pieces, [&](std::int64_t k) {
    const std::int64_t z = k / pieces, from = (k % pieces) * kPieceVoxels, n = std::min(kPieceVoxels, plane - from);
    pack_foreground(values(z, from, n), type, n, foreground, bits + z * row + from / 8);
  });
}

}  // namespace

int read_threads() { return ReadPool::get().threads_started(); }

void copy_on_read_threads(void* to, const void* from, std::size_t bytes) {
  // read_values' pieces, each fetched by a memcpy: the bytes as one plane of one row.
  const auto* base = static_cast<const std::byte*>(from);
  read_values([base](std::int64_t at, std::int64_t n, void* out) {
    std::memcpy(out, base + at, static_cast<std::size_t>(n));
  }, ValueType::u8, 1, 1, static_cast<std::int64_t>(bytes), to);
}

void read_in_host_turns(bool on) noexcept { host_turns = on; }

ReadTurn::ReadTurn(std::int64_t turn, std::int64_t order, bool passive)
    : previous_(read_turn), previous_order_(read_order), previous_passive_(read_passive) {
  read_turn = turn;
  read_order = order;
  read_passive = passive;
}
ReadTurn::~ReadTurn() {
  read_turn = previous_;
  read_order = previous_order_;
  read_passive = previous_passive_;
}

void read_foreground_bits(const ValueFetch& fetch, ValueType type, std::int64_t planes, std::int64_t height,
                          std::int64_t width, const Foreground& foreground, std::uint8_t* bits) {
  const std::int64_t plane = height * width;
  pack_pieces(type, planes, height, width, foreground, bits, [&](std::int64_t z, std::int64_t from, std::int64_t n) {
    thread_local std::vector<unsigned char> buffer;  // each thread's, kept between calls (8 bytes a value at most)
    if (buffer.empty()) buffer.resize(static_cast<std::size_t>(kPieceVoxels * 8));
    fetch(z * plane + from, n, buffer.data());
    return static_cast<const void*>(buffer.data());
  });
}

namespace {

/// Every chunk of `grid` fetched on every core, then segment(z, y, x0, n, values) for each row
/// segment of it inside planes [first, first + planes): n values of row y of plane z from x0.
template <class Segment>
void for_each_chunk_row(const ChunkFetch& fetch, ValueType type, const ChunkGrid& grid, std::int64_t first,
                        std::int64_t planes, std::int64_t height, std::int64_t width, Segment segment) {
  if (planes <= 0 || height <= 0 || width <= 0) return;
  if (first < grid.first_row * grid.cz || first + planes > (grid.first_row + grid.rows) * grid.cz ||
      grid.per_y * grid.cy < height || grid.per_x * grid.cx < width)
    throw ConfigError("reading by chunks: the chunks do not hold planes [" + std::to_string(first) + ", " +
                      std::to_string(first + planes) + ")");
  const std::size_t size = value_size(type);
  const auto chunk_bytes = static_cast<std::size_t>(grid.cz * grid.cy * grid.cx) * size;
  // A piece is a run of chunks side by side along x (chunk k = (row · per_y + iy) · per_x + ix), so
  // that one thread writes the whole rows of its output, not every thread a few bytes of each
  // output line (with a chunk a piece, neighbouring chunks on different threads shared every
  // cache line of the bits: 1024³ u8 in 64³ chunks read and packed at 4.5 GB/s on the development
  // machine's 2 cores, 7.1 GB/s by runs; its threads read the chunks alone at 16.5 GB/s; a probe,
  // printed, not kept). The runs are cut so that there are at least 8 pieces per reading thread.
  const std::int64_t bands = grid.rows * grid.per_y;
  const std::int64_t wanted = 8 * std::int64_t{ReadPool::get().threads_started() + 1};
  const std::int64_t splits = std::clamp<std::int64_t>((wanted + bands - 1) / bands, 1, grid.per_x);
  const std::int64_t run = (grid.per_x + splits - 1) / splits, runs = (grid.per_x + run - 1) / run;
  ReadPool::get().run(bands * runs, [&](std::int64_t piece) {
    thread_local std::vector<unsigned char> buffer;  // each thread's, kept between calls
    if (buffer.size() < chunk_bytes) buffer.resize(chunk_bytes);
    const std::int64_t band = piece / runs, row = grid.first_row + band / grid.per_y, iy = band % grid.per_y;
    const std::int64_t z0 = std::max(first, row * grid.cz), z1 = std::min(first + planes, (row + 1) * grid.cz);
    const std::int64_t y0 = iy * grid.cy, y1 = std::min(height, y0 + grid.cy);
    if (z0 >= z1) return;  // a chunk row the planes do not reach (none when the grid is theirs)
    for (std::int64_t ix = piece % runs * run; ix < std::min(grid.per_x, (piece % runs + 1) * run); ++ix) {
      const std::int64_t x0 = ix * grid.cx, n = std::min(width - x0, grid.cx);
      fetch(band * grid.per_x + ix, buffer.data());
      for (std::int64_t z = z0; z < z1; ++z)
        for (std::int64_t y = y0; y < y1; ++y)
          segment(z, y, x0, n,
                  buffer.data() + static_cast<std::size_t>(((z - row * grid.cz) * grid.cy + (y - y0)) * grid.cx) * size);
    }
  });
}

}  // namespace

void read_foreground_bits_chunked(const ChunkFetch& fetch, ValueType type, const ChunkGrid& grid, std::int64_t first,
                                  std::int64_t planes, std::int64_t height, std::int64_t width,
                                  const Foreground& foreground, std::uint8_t* bits) {
  if (!chunked_bits_fit(width, grid.cx))
    throw ConfigError("foreground bits by chunks: planes " + std::to_string(width) + " wide in chunks " +
                      std::to_string(grid.cx) + " wide do not start on bytes of bits (both must be multiples of 8)");
  const std::int64_t row_bytes = height * width / 8;
  for_each_chunk_row(fetch, type, grid, first, planes, height, width,
                     [&](std::int64_t z, std::int64_t y, std::int64_t x0, std::int64_t n, const unsigned char* values) {
                       pack_foreground(values, type, n, foreground, bits + (z - first) * row_bytes + (y * width + x0) / 8);
                     });
}

void read_values_chunked(const ChunkFetch& fetch, ValueType type, const ChunkGrid& grid, std::int64_t first,
                         std::int64_t planes, std::int64_t height, std::int64_t width, void* to) {
  const std::size_t size = value_size(type);
  auto* out = static_cast<unsigned char*>(to);
  for_each_chunk_row(fetch, type, grid, first, planes, height, width,
                     [&](std::int64_t z, std::int64_t y, std::int64_t x0, std::int64_t n, const unsigned char* values) {
                       std::memcpy(out + static_cast<std::size_t>(((z - first) * height + y) * width + x0) * size, values,
                                   static_cast<std::size_t>(n) * size);
                     });
}

void read_values(const ValueFetch& fetch, ValueType type, std::int64_t planes, std::int64_t height, std::int64_t width,
                 void* to) {
  const std::int64_t total = planes * height * width;
  if (total <= 0) return;
  auto* out = static_cast<unsigned char*>(to);
  const std::size_t size = value_size(type);
  ReadPool::get().run((total + kPieceVoxels - 1) / kPieceVoxels, [&](std::int64_t k) {
    const std::int64_t from = k * kPieceVoxels;
    fetch(from, std::min(kPieceVoxels, total - from), out + static_cast<std::size_t>(from) * size);
  });
}

Array read_foreground_bits(const ValueFetch& fetch, ValueType type, std::int64_t planes, std::int64_t height,
                           std::int64_t width, const Foreground& foreground) {
  Array out = Array::host(DType::u8, Shape(planes, foreground_plane_bytes(height, width)));
  read_foreground_bits(fetch, type, planes, height, width, foreground, out.data<std::uint8_t>());
  return out;
}

Array foreground_bits(const void* values, ValueType type, std::int64_t planes, std::int64_t height,
                      std::int64_t width, const Foreground& foreground) {
  Array out = Array::host(DType::u8, Shape(planes, foreground_plane_bytes(height, width)));
  const auto* base = static_cast<const unsigned char*>(values);
  const std::size_t size = value_size(type);
  const std::int64_t plane = height * width;
  pack_pieces(type, planes, height, width, foreground, out.data<std::uint8_t>(),
              [&](std::int64_t z, std::int64_t from, std::int64_t) {  // packed where the values are
                return static_cast<const void*>(base + static_cast<std::size_t>(z * plane + from) * size);
              });
  return out;
}

Array foreground_bits(const Array& volume, const Foreground& foreground) {
  if (volume.shape().ndim() != 3 || !volume.memory().is_host())
    throw ConfigError("foreground bits: expected a host volume [Z, Y, X], got " + volume.shape().str());
  const Shape& s = volume.shape();
  return foreground_bits(volume.raw(), value_type_of(volume.dtype(), "foreground bits"), s[0], s[1], s[2], foreground);
}

bool is_foreground_bits(const Array& mask, std::int64_t height, std::int64_t width) {
  return mask.dtype() == DType::u8 && mask.shape().ndim() == 2 && mask.shape()[1] == foreground_plane_bytes(height, width);
}

void unpack_foreground(const std::uint8_t* bits, std::int64_t planes, std::int64_t height, std::int64_t width,
                       std::uint8_t* to) {
  const std::int64_t plane = height * width, row = foreground_plane_bytes(height, width);
  detail::parallel_for(planes * row, [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t k = b; k < e; ++k) {
      const std::int64_t z = k / row, first = (k % row) * 8, n = std::min<std::int64_t>(8, plane - first);
      for (std::int64_t i = 0; i < n; ++i) to[z * plane + first + i] = (bits[k] >> i) & 1u;
    }
  }, 4096);
}

Array unpack_foreground(const Array& bits, std::int64_t height, std::int64_t width) {
  if (!is_foreground_bits(bits, height, width) || !bits.memory().is_host())
    throw ConfigError("unpack foreground: expected host bits [planes, " +
                      std::to_string(foreground_plane_bytes(height, width)) + "], got " + bits.shape().str());
  Array out = Array::host(DType::u8, Shape(bits.shape()[0], height, width));
  unpack_foreground(bits.data<std::uint8_t>(), bits.shape()[0], height, width, out.data<std::uint8_t>());
  return out;
}

namespace {

/// u8 0/1 mask of a host volume by `foreground` (values.hpp's rule in the volume's own type).
Array mask_of(const Array& volume, const Foreground& foreground) {
  Array out = Array::host(DType::u8, volume.shape());
  std::uint8_t* o = out.data<std::uint8_t>();
  detail::with_rule(volume.raw(), value_type_of(volume.dtype(), "threshold"), foreground, [&](const auto* v, auto keep) {
    detail::parallel_for(volume.size(), [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i) o[i] = keep(v[i]) ? 1 : 0;
    });
  });
  return out;
}

}  // namespace

Array threshold_mask(const Array& volume, const Foreground& threshold) {
  if (!threshold) throw ConfigError("threshold: no threshold given");
  return mask_of(volume, threshold);
}

Array nonzero_mask(const Array& volume) { return mask_of(volume, std::nullopt); }

double otsu_threshold(const Array& volume) {
  return otsu_threshold(volume.raw(), value_type_of(volume.dtype(), "otsu threshold"), volume.size());
}

}  // namespace weft::morphology
