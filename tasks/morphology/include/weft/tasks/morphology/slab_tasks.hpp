#pragma once
/// The granulometry of a volume split into slabs over several places (GPUs or CPUs of every
/// rank), each slab read where it is computed:
///
///   volume.i (CPU) → upload.i → openings.i (GPU or CPU) ─┐
///                    ...                                 ├→ curve (sum of one round) → the caller's sink
///   volume.j (CPU) → upload.j → openings.j ─────────────┘
///
/// Worker i handles slabs i, i + W, i + 2W, ... (SlabPlan), one per round, so that its reader
/// prepares the next slab and upload.i (on the worker's place: the runtime copies the mask there
/// when it fires) moves it while the current one computes. Within a slab, the reader's chunks of
/// planes go to upload.i as they are read, so that reading chunk c + 1 overlaps the transfer of
/// chunk c (the first slab's too, which no computation hides); upload.i assembles the slab. Curves of a round are summed by a
/// fan-in task; the size maps of the slabs' own planes leave on each worker's size_map output.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "weft/cluster/host_segment.hpp"
#include "weft/cluster/host_turns.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/slabs.hpp"

namespace weft::morphology {

/// Reads planes [first, first + count) of the volume as a host u8 mask [count, Y, X] (non-zero =
/// foreground) or as its foreground bits [count, foreground_plane_bytes(Y, X)] (threshold.hpp:
/// an eighth of the bytes to copy and upload, unpacked on the slab's place). Called on the rank
/// of the worker that computes them.
using MaskReader = std::function<Array(std::int64_t first, std::int64_t count)>;

/// What travels with a slab: {first, end, read_first, read_end} (planes of the volume); with a
/// chunk of it, also {chunk_first, chunk_end} (the planes of the chunk's mask; 0, 0 for the
/// empty mask of a slab past the volume).
using SlabPlanes = std::vector<std::int64_t>;

/// Bytes of a slab's chunk (whole planes, at least one) that SlabSource reads at a time in
/// add_slab_granulometry: 256 MiB, 64 planes of 2048² voxels.
inline constexpr std::int64_t kSlabChunkBytes = std::int64_t{256} << 20;

/// Chunks whose reads a SlabSource has in flight beside the one it waits for (WEFT_SLAB_READ_AHEAD
/// overrides it, 1 to 16).
inline constexpr int kSlabReadAhead = 3;

/// Planes read by both slab s and slab s + 1 (slabs numbered round · workers + worker), which the
/// first reads and the second takes from it when both are read in one process (HaloShare): the
/// halo between them, [read_first of s + 1, read_end of s). Empty (0, 0) when they do not
/// overlap, or when that overlap meets the one before or after it (slabs thinner than their halo).
[[nodiscard]] std::pair<std::int64_t, std::int64_t> shared_planes(const SlabPlan& plan, std::int64_t s);

/// One read of a slab's source: planes [first, end); `take`: shared with the slab before (taken
/// from it when it read them), `keep`: shared with the next slab (kept for it).
struct SlabPiece {
  std::int64_t first = 0, end = 0;
  bool take = false, keep = false;
  bool operator==(const SlabPiece&) const = default;
};

/// The reads of slab s of the plan in chunks of at most `chunk_planes` planes (0: the whole slab in
/// one), in their order: the planes it shares with the next slab (so that, handed over to another
/// rank, they are there early in the turn and can travel to the next slab's place while its turn
/// is still to come), then those it alone reads, then those it shares with the slab before (which,
/// read first, has read them by then).
/// Empty for a slab past the volume. The shared planes are cut into the same pieces on both sides.
[[nodiscard]] std::vector<SlabPiece> slab_pieces(const SlabPlan& plan, std::int64_t s, std::int64_t chunk_planes);

/// The foreground bits of shared_planes that one slab's source read, kept in its process for the
/// source of the next slab (the same host arrays, not copied): the halo planes are read once per
/// process instead of twice. One per graph, shared by its sources; entries older than a round are
/// dropped. A slab whose next slab is read by another rank keeps its halo's bits all the same
/// (the source does not know where the next one runs): at most one halo (2 · halo planes of bits)
/// per worker and round, held until a round later or the graph's end.
class HaloShare {
 public:
  void keep(std::int64_t slab, std::int64_t first, std::int64_t end, Array bits, int workers);
  [[nodiscard]] std::optional<Array> take(std::int64_t first, std::int64_t end);

 private:
  struct Entry {
    std::int64_t slab;
    Array bits;
  };
  std::mutex mutex_;
  std::map<std::pair<std::int64_t, std::int64_t>, Entry> entries_;
};

/// The order in which the slab sources of the ranks of one host read: worker w's slab of round r
/// is turn r · host_workers[w] + host_position[w] of its host (HostTurns), the workers of a host
/// numbered in worker order. A source waits for its turn before its slab's first read and ends it
/// once its slab's last piece is read, so that the ranks of a host read one slab after the other,
/// each at the rate of the host's reading threads (read_in_host_turns), as the sources of one
/// process do through ReadTurn. Without `handover` (the default), each of two slabs of different
/// ranks of one host reads the halo they share, and the plan counts those reads
/// (halos_read_twice): on a 4xH200 host the later turns re-read 2.6 GB and the slabs were ready
/// at 27 / 52 / 77 / 99 ms against 21 / 40 / 55 / 69 ms in one rank (granulometry.json,
/// slabs_2048_ranks4_turns1 and slabs_2048_4xH200). With `handover` (WEFT_HALO_HANDOVER=1 on every
/// rank) that halo is read once, as HaloShare does within a process: the first slab's source
/// copies its bits into memory the host's ranks share (HostHalos) and the second's copies them
/// out and sends them on while it waits for its turn and reads its own planes. The shared pages
/// are slow to give and map on the GPU hosts: given and mapped by every graph, they made the
/// four-rank walls 0.556 / 0.672 / 0.539 s against 0.526 / 0.652 / 0.524 s without the handover
/// (octahedron / cube / ball), the setup 88-102 ms against 1 ms (granulometry.json,
/// slabs_2048_ranks4_ranks4_{handover,reread}_4xH200_c). With the segment kept between graphs, the
/// pieces sent on while their slab waits for its turn and the pages given off the critical path,
/// it was 0.3-11 ms faster than reading twice on four hosts (granulometry.json, the _g, _h, _j
/// and _i pairs) and a few ms slower on a fifth (printed, not kept): no gain to make it the
/// default. Handing the halo over in MPI messages was slower than reading it again.
struct SlabReadTurns {
  std::shared_ptr<HostTurns> turns;
  bool handover = false;           ///< halos between ranks of one host handed over (HostHalos)
  std::vector<int> host_position;  ///< per worker
  std::vector<int> host_workers;   ///< per worker: the workers of its host
  std::vector<int> rank;           ///< per worker: the rank that reads its slabs
  std::vector<int> host;           ///< per worker: its host (numbered in worker order)
  [[nodiscard]] std::int64_t turn(int round, int worker) const {
    const auto w = static_cast<std::size_t>(worker);
    return std::int64_t{round} * host_workers[w] + host_position[w];
  }
};

/// The halos that slabs of different ranks of one host share (shared_planes), handed from the
/// source of the first slab to that of the second through a HostSegment: two slots per worker
/// (slab n's halo in slot 2 (n mod W) + round parity), each with a flag per piece of the halo
/// (slab_pieces) set once its bits are in, and one set once the slab has taken them all, which
/// the slot's next slab waits for before writing. The bits are copied in for the first slab's
/// source on the reading threads, in its turn (copy_on_read_threads), out by the second's on
/// threads of its own while it waits for its turn (the reading threads are then another rank's).
/// The segment outlives its HostHalos, as the pinned host pool's buffers outlive their arrays:
/// the next HostHalos of the process that needs no more bytes (and is not made while another
/// holds it) takes it over on every rank, with the pages already given and mapped, and tells its
/// flags from the earlier ones' by a use count in their high bits. Only the first graph pays for
/// the pages; it is unmapped when the process exits.
class HostHalos {
 public:
  /// Under MPI, collective over every rank (call it at the same point on every rank, outside a
  /// run). available() is false where no two slabs of different ranks of one host share planes,
  /// or where their host lacks the shared memory (a warning): each slab then reads its halos.
  HostHalos(const SlabPlan& plan, std::int64_t chunk_planes, const SlabReadTurns& turns);
  ~HostHalos();
  HostHalos(const HostHalos&) = delete;
  HostHalos& operator=(const HostHalos&) = delete;

  [[nodiscard]] bool available() const noexcept { return slots_ != nullptr; }
  /// Whether slab n takes the halo it shares with slab n − 1 from that slab's rank through here
  /// (never where nothing is available).
  [[nodiscard]] bool linked(std::int64_t n) const;
  /// Copies piece j of the halo of slab n (the bits of planes [first, first + bits' planes), the
  /// j-th piece that slab n − 1 keeps) into its slot, once the slot's last slab before n (n − 2W,
  /// or n − 4W, ... where that one is not linked) has taken its own; then sets the piece's flag.
  /// False, nothing written, once `stop` says so.
  [[nodiscard]] bool put(std::int64_t n, std::size_t j, std::int64_t first, const Array& bits,
                         const std::function<bool()>& stop) const;
  /// The bits of piece j of slab n's halo, planes [first, end), once put (copied into a host
  /// array); nullopt once `stop` says so.
  [[nodiscard]] std::optional<Array> take(std::int64_t n, std::size_t j, std::int64_t first, std::int64_t end,
                                          const std::function<bool()>& stop) const;
  /// Slab n has taken every piece of its halo: its slot may take the halo of slab n + 2W.
  void taken(std::int64_t n) const;

  /// How many HostHalos of this process have held its segment, this one included (0: none held).
  [[nodiscard]] std::int64_t segment_use() const noexcept;

  struct Slots;  ///< a segment and the pages given and mapped in it, kept for the next HostHalos

 private:
  /// Whether slabs n − 1 and n, of two ranks of one host, share halo planes (by the plan alone).
  [[nodiscard]] bool shares(std::int64_t n) const;
  [[nodiscard]] std::size_t slot(std::int64_t n) const;
  [[nodiscard]] std::int64_t* flag(std::size_t slot, std::size_t k) const;  // k = 0: taken, 1 + j: piece j
  [[nodiscard]] std::byte* bits(std::size_t slot) const;
  SlabPlan plan_;
  std::vector<int> rank_, host_;  // per worker (SlabReadTurns)
  std::size_t plane_bytes_ = 0, slot_bytes_ = 0, flags_ = 0, header_bytes_ = 0;
  std::unique_ptr<Slots> slots_;  // null where nothing is handed over
  [[nodiscard]] HostSegment* segment() const noexcept;  // slots_'s
  std::int64_t tag_ = 0;            // added to every flag value: this use of the segment, shifted
  static constexpr int kGiving = 0, kGiven = 1, kNotGiven = 2;
  std::atomic<int> given_{kGiven};  // the pages of the slots this rank writes (mapping_ gives them)
  std::thread mapping_;  // gives this rank's slots their pages and maps them while the run starts
};

/// Whether some host has workers of `places` (one per worker) on two or more ranks: from the
/// cluster alone, the same answer on every rank without a message.
[[nodiscard]] bool ranks_share_a_host(const std::vector<Place>& places, const Cluster& cluster);

/// Whether the slab reads of `places` (one per worker) are taken in turns between ranks: some host
/// has workers on two or more ranks (ranks_share_a_host), and WEFT_HOST_TURNS is 0 on no rank.
/// Then collective under MPI (the ranks agree on that variable): call it at the same point on
/// every rank.
[[nodiscard]] bool ranks_read_in_turns(const std::vector<Place>& places, const Cluster& cluster);

/// Whether the halo two slabs of different ranks of one host share is handed over through shared
/// memory (SlabReadTurns::handover, HostHalos): WEFT_HALO_HANDOVER=1 on every rank. Off by default
/// (then the later slab reads the halo again; SlabReadTurns says why).
/// Collective under MPI: call it at the same point on every rank.
[[nodiscard]] bool halo_handover_requested();

/// SlabPlan::rereads of one round over `places` whose ranks read in turns: slab i reads again the
/// halo it shares with slab i − 1 where that one is read by another rank of the same host and
/// `handover` is off (within a rank HaloShare hands it over; across hosts nothing is in turns).
[[nodiscard]] std::vector<bool> halos_read_twice(const std::vector<Place>& places, const Cluster& cluster,
                                                 bool handover);

/// Whether the slabs of `places` are read one after the other, as SlabPlan::read_cost assumes:
/// all on one rank (ReadTurn), or all on one host whose ranks take turns (`host_turns`).
[[nodiscard]] bool places_read_in_turns(const std::vector<Place>& places, const Cluster& cluster, bool host_turns);

/// The turns of the slab sources of `places` where some host has workers of them on two ranks
/// (ranks_share_a_host), else none (the sources of one process take turns through ReadTurn alone),
/// handing the halos between ranks over where `handover`. For a caller whose ranks read in turns
/// (ranks_read_in_turns over all its places, asked once, as `handover` is from
/// halo_handover_requested, so that its plan and these turns agree). Under MPI, collective over
/// every rank (HostTurns): call it at the same point on every rank, outside a run.
[[nodiscard]] std::shared_ptr<const SlabReadTurns> slab_read_turns(const std::vector<Place>& places,
                                                                   const Cluster& cluster, bool handover);

/// The GPU balance of `plan` over `places`, as `weft granulometry` sets it and the slab benchmark
/// reproduces it: balance_for_gpus, the reads counted where the places read in turns
/// (places_read_in_turns with `host_turns`) and `reads_alone` (the reading does nothing but read:
/// not with --median); `read_cost` ≥ 0 in place of the read cost so found (the benchmark's
/// --read-cost); then SlabPlan::rereads where reads are counted (halos_read_twice with `handover`).
void balance_gpu_slabs(SlabPlan& plan, const std::vector<Place>& places, const Cluster& cluster, Element element,
                       int max_size, std::int64_t value_bytes, bool planes_forced, bool host_turns, bool handover,
                       bool reads_alone = true, double read_cost = -1);

/// Source of one worker: its slab of every round with its halo (a 1-plane empty mask past the
/// volume), whole or (chunk_planes > 0) in chunks of at most that many planes, each with its 6
/// SlabPlanes. Reads are made under ReadTurn(slab number, chunk), so that the sources of one
/// process read their slabs one after the other, and with `turns` each slab's reads in its host
/// turn, so that those of the ranks of a host do too. In chunks, a slab's planes are read in three
/// parts: those it alone reads, then the halo it shares with the next slab (kept in `share`), then
/// the one it shares with the slab before (taken from `share` when that slab's source has read it,
/// else read). The next kSlabReadAhead chunks' reads are in flight (each on a thread of its own,
/// which waits for the reading threads and reads nothing itself: ReadTurn's `passive`) while the
/// source waits for the current one, so that the reading threads always have pieces of the lowest
/// turn: with one call at a time, every thread left for the next slab's pieces while the last
/// pieces of a chunk were finishing and the source sent it, and on a 4xH200 host the first two
/// slabs were read side by side at ~50 GB/s each instead of one after the other (a WEFT_TRACE of
/// granulometry_slabs_bench: 4.6 ms per 256 MB chunk for both). With one chunk ahead, a chunk
/// held up by one late piece still let the next slab's pieces in: the first slab's chunks took
/// 4-7 ms instead of 1.9 in one traced run of three on the same host. The chunks that the share
/// may hold are not read ahead.
class SlabSource final : public Task {
 public:
  /// `halos`: where the halo shared with a slab of another rank of the host comes from and goes to
  /// (HostHalos::linked), instead of being read by both.
  SlabSource(std::string name, SlabPlan plan, int worker, MaskReader reader, std::int64_t chunk_planes = 0,
             std::shared_ptr<HaloShare> share = nullptr, std::shared_ptr<const SlabReadTurns> turns = nullptr,
             std::shared_ptr<const HostHalos> halos = nullptr);
  ~SlabSource() override;
  SlabSource(const SlabSource&) = delete;
  SlabSource& operator=(const SlabSource&) = delete;
  Out<Array> mask = output<Array>("mask", DType::u8);  // u8 mask or foreground bits, as the reader gives
  Out<SlabPlanes> slab = output<SlabPlanes>("slab");
  void run(Context& ctx) override;

 private:
  Array read(std::int64_t first, std::int64_t count, std::int64_t order, bool ahead = false) const;
  void send(Context& ctx, Array m, std::int64_t chunk_first, std::int64_t chunk_end);  // one token of current_
  void read_next(Context& ctx);  // reads and sends the current slab's next piece
  void end_turn() noexcept;     // ends the host turn held, if any
  /// Waits for the current slab's host turn (awaited_) until it is held (true), or until a piece
  /// of the halo taken from the slab before's rank has come: that piece is then sent instead, so
  /// that it travels to the place while earlier turns read (false); throws once the run is cancelled.
  [[nodiscard]] bool await_turn(Context& ctx);
  /// Whether slab n's halo with slab n − 1 is handed over through halos_.
  [[nodiscard]] bool linked(std::int64_t n) const { return halos_ && halos_->linked(n); }
  [[nodiscard]] Array receive_piece(Context& ctx, std::size_t k);  // piece k, from the slab before's rank
  /// The first piece of takes_ that has come and was not sent yet, if any.
  [[nodiscard]] std::optional<std::size_t> came() const;
  /// Sends the piece came() finds; false where none has come.
  [[nodiscard]] bool send_early(Context& ctx);
  void send_taken(Context& ctx, std::size_t j);  // sends takes_[j] (come), ahead of its place in pieces_
  void skip_sent();  // past the pieces of takes_ at next_ that went on early
  [[nodiscard]] Array took(std::size_t j);  // takes_[j]'s bits (ready); the last one tells halos_
  [[nodiscard]] std::string halo_cancelled() const;  // why: the run stopped while the slab before's halo was awaited
  void put_piece(const Array& m, std::size_t k);  // for the next slab's rank
  /// Drops the halo pieces copied for the next slab's rank, rethrowing their errors: those done,
  /// or (`all`) every one, waiting for them until the run is cancelled.
  void collect_puts(Context& ctx, bool all);
  SlabPlan plan_;
  int worker_;
  MaskReader reader_;
  std::int64_t chunk_planes_ = 0;
  std::shared_ptr<HaloShare> share_;
  std::shared_ptr<const SlabReadTurns> turns_;
  std::shared_ptr<const HostHalos> halos_;
  std::int64_t turn_ = -1;     // the host turn held while the current slab is read (-1: none)
  std::int64_t awaited_ = -1;  // the current slab's host turn, not held yet (-1: none awaited)
  std::size_t turn_pieces_ = 0;  // pieces of the current slab read in its turn (the rest taken from halos_)
  std::atomic<bool> abandon_{false};        // set when the source goes: the copies below stop waiting
  std::deque<std::future<bool>> puts_;      // halo pieces being copied for the next slab's rank
  std::vector<std::future<std::optional<Array>>> takes_;  // the current slab's halo pieces from the slab before's rank
  std::vector<bool> sent_early_;  // per takes_: sent as soon as it came (before or during the turn)
  std::size_t takes_done_ = 0;    // takes_ collected
  int round_ = 0;
  Slab current_;               // the slab being sent in chunks
  std::int64_t number_ = 0;    // its number (round · workers + worker)
  std::vector<SlabPiece> pieces_;  // its chunks, in reading order (slab_pieces)
  std::size_t next_ = 0;       // the next of them; pieces_.size(): none in progress
  int read_ahead_ = kSlabReadAhead;
  std::deque<std::pair<std::size_t, std::future<Array>>> ahead_;  // reads of the next pieces_, in order
};

/// Placed with its worker's openings, so that the runtime copies each slab (or chunk) to that
/// device while the current slab computes. A whole slab is handed on unchanged (unpacked there if
/// it came as foreground bits); chunks, in any order, are copied (or unpacked) into a slab on the
/// place and the slab is handed on once all its planes came (the firings before put nothing: a
/// routing task, whose slabs are numbered by round again).
class SlabUpload final : public Task {
 public:
  /// height, width: the volume's Y and X (what foreground bits unpack to).
  SlabUpload(std::string name, std::int64_t height, std::int64_t width)
      : Task(std::move(name)), height_(height), width_(width) {}
  In<Array> mask_in = input<Array>("mask", DType::u8);  // u8 mask [planes, Y, X] or foreground bits
  In<SlabPlanes> slab_in = input<SlabPlanes>("slab");
  Out<Array> mask = output<Array>("mask", DType::u8, 3);
  Out<SlabPlanes> slab = output<SlabPlanes>("slab");
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override { return true; }
  void run_cuda(Context& ctx) override;
  [[nodiscard]] bool routes() const override { return true; }
  [[nodiscard]] bool renumbers() const override { return true; }  // one token per slab downstream

 private:
  void assemble(Context& ctx, bool gpu);
  std::int64_t height_, width_;
  Array slab_;                   // the slab being assembled from chunks (which come in any order)
  SlabPlanes assembling_;        // its planes
  std::int64_t received_ = 0;    // planes of it received
};

/// Openings of one slab, counting its own planes: remaining(n) and spectrum(n) for n = 0..N,
/// and the size map of its own planes (a 1-element array when not asked or for an empty slab).
class SlabGranulometry final : public Task {
 public:
  SlabGranulometry(std::string name, GranulometryOptions options);
  In<Array> mask = input<Array>("mask", DType::u8, 3);
  In<SlabPlanes> slab = input<SlabPlanes>("slab");
  Out<std::vector<std::int64_t>> remaining = output<std::vector<std::int64_t>>("remaining");
  Out<std::vector<std::int64_t>> spectrum = output<std::vector<std::int64_t>>("spectrum");
  Out<Array> size_map;  ///< in options.size_map_form
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override { return 100.0; }

 private:
  [[nodiscard]] GranulometryOptions options_for(const SlabPlanes& planes) const;
  void put(Context& ctx, GranulometryResult result);
  GranulometryOptions options_;
};

/// Largest distance to the background over a slab's own planes, as far as its halo can tell:
/// {value, exact}. exact = 1: value is max D. exact = 0: max D > cap, value = cap + 1, with
/// cap = r(halo) (every D ≤ cap on own planes is exact, the nearest background being at most
/// halo planes away).
class SlabMaxDistance final : public Task {
 public:
  SlabMaxDistance(std::string name, Element element, SlabPlan plan);
  In<Array> mask = input<Array>("mask", DType::u8);  // u8 mask [planes, Y, X] or foreground bits
  In<SlabPlanes> slab = input<SlabPlanes>("slab");
  Out<std::vector<std::int64_t>> out = output<std::vector<std::int64_t>>("out");
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  void put(Context& ctx, const SlabPlanes& planes, std::int64_t max_distance);
  Element element_;
  SlabPlan plan_;
};

/// Fan-in: element-wise sums of the workers' curves of one round (shorter ones padded with 0).
class CurveSum final : public Task {
 public:
  CurveSum(std::string name, int workers);
  std::vector<In<std::vector<std::int64_t>>> remaining_in, spectrum_in;
  Out<std::vector<std::int64_t>> remaining = output<std::vector<std::int64_t>>("remaining");
  Out<std::vector<std::int64_t>> spectrum = output<std::vector<std::int64_t>>("spectrum");
  void run(Context& ctx) override;
};

/// Largest distance to the background of the whole volume, as the slabs could tell.
struct MaxDistance {
  std::int64_t value = 0;
  bool exact = true;
  int rounds_seen = 0;
};

/// Sink on one rank: folds every worker's SlabMaxDistance of every round into `result`.
class MaxDistanceCollector final : public Task {
 public:
  MaxDistanceCollector(std::string name, int workers, std::shared_ptr<MaxDistance> result);
  std::vector<In<std::vector<std::int64_t>>> in;
  void run(Context& ctx) override;

 private:
  std::shared_ptr<MaxDistance> result_;
};

/// The outputs of add_slab_granulometry, for the caller's sink.
struct SlabGraph {
  Out<std::vector<std::int64_t>> remaining;  ///< summed over the workers, one value per round
  Out<std::vector<std::int64_t>> spectrum;
  std::vector<Out<Array>> size_maps;         ///< per worker: its slab of the round (own planes)
  bool halos_handed_over = false;  ///< some halo between ranks of a host goes through HostHalos
};

/// Adds volume.i → upload.i → openings.i for every worker and the fan-in "curve" (see the top of this file).
/// `options.max_size` must be ≥ 0 unless the plan has a single slab. Slabs are read in chunks of
/// about `chunk_bytes` (whole planes; 0: whole slabs), in host turns with `turns` (slab_read_turns),
/// the halos between ranks of a host handed over where `turns->handover` (HostHalos: then
/// collective under MPI, call it at the same point on every rank).
SlabGraph add_slab_granulometry(Graph& graph, const SlabPlan& plan, const GranulometryOptions& options,
                                const MaskReader& reader, std::int64_t chunk_bytes = kSlabChunkBytes,
                                std::shared_ptr<const SlabReadTurns> turns = nullptr);

/// Adds volume.i → distance.i for every worker and one "collect.r" per rank r (each rank's own
/// collector fills `result`): after the run, every rank knows max D as far as `plan.halo` tells.
void add_slab_max_distance(Graph& graph, const SlabPlan& plan, Element element, const MaskReader& reader, int ranks,
                           const std::shared_ptr<MaxDistance>& result,
                           std::shared_ptr<const SlabReadTurns> turns = nullptr);

/// The places slabs are computed on: every GPU of every rank (--devices gpu, or auto when there
/// are GPUs), one CPU per rank (cpu, or auto without GPUs), or every GPU plus the CPU of each
/// rank without one (all). A GPU seen by several ranks of one host is one place, on the least
/// loaded of them (so `mpirun -np 4` on a 4-GPU host gives each rank its own GPU).
[[nodiscard]] std::vector<Place> slab_places(const Cluster& cluster, DeviceChoice choice);

/// Default placement of the slab tasks: upload.i, openings.i and distance.i on places[i], volume.i on the
/// CPU of that rank, collect.r on the CPU of rank r; no opinion on other tasks. Consulted after a
/// mapping file, before the automatic mapper.
class SlabMapper final : public Mapper {
 public:
  explicit SlabMapper(std::vector<Place> places) : places_(std::move(places)) {}
  std::optional<Place> place(const Task& task, const Graph& graph, const Cluster& cluster) const override;
  std::string name() const override { return "slabs"; }

 private:
  std::vector<Place> places_;
};

}  // namespace weft::morphology
