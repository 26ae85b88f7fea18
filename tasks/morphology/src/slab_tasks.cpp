#include "weft/tasks/morphology/slab_tasks.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime.h>

#include "weft/cuda.hpp"
#endif

#include "size_phases.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft::morphology {
namespace {

SlabPlanes planes_of(const Slab& s) { return {s.first, s.end, s.read_first, s.read_end}; }

/// `mask` as a u8 mask [planes, Y, X] on its place: foreground bits unpacked (on the task's GPU
/// stream when it is on a GPU), a u8 mask as it is.
Array unpacked(Context& ctx, Array mask, std::int64_t height, std::int64_t width, bool gpu) {
  if (!is_foreground_bits(mask, height, width)) return mask;
  (void)gpu;
#if defined(WEFT_HAVE_CUDA)
  if (gpu) {
    Array out = ctx.alloc(DType::u8, Shape(mask.shape()[0], height, width));
    unpack_foreground_gpu(mask.raw(), out.raw(), mask.shape()[0], height, width, ctx.stream());
    return out;
  }
#endif
  (void)ctx;
  return unpack_foreground(mask, height, width);
}

void check_planes(const SlabPlanes& p, const Array& mask, const std::string& task) {
  if (p.size() != 4 || mask.shape().ndim() != 3 || (p[1] > p[0] && p[3] - p[2] != mask.shape()[0]))
    throw ConfigError(task + ": the slab's planes do not match its mask (" + mask.shape().str() + ")");
}

}  // namespace

namespace {
/// Slab number s of the plan (empty past its rounds).
Slab slab_number(const SlabPlan& plan, std::int64_t s) {
  if (s < 0 || s >= std::int64_t{plan.rounds()} * plan.workers) return {};
  return plan.slab(static_cast<int>(s / plan.workers), static_cast<int>(s % plan.workers));
}
}  // namespace

std::pair<std::int64_t, std::int64_t> shared_planes(const SlabPlan& plan, std::int64_t s) {
  const Slab a = slab_number(plan, s), b = slab_number(plan, s + 1);
  if (a.empty() || b.empty() || b.read_first >= a.read_end || b.read_first < a.read_first) return {0, 0};
  const std::pair<std::int64_t, std::int64_t> seg{b.read_first, a.read_end};
  if (const Slab before = slab_number(plan, s - 1); !before.empty() && before.read_end > seg.first) return {0, 0};
  if (const Slab after = slab_number(plan, s + 2); !after.empty() && after.read_first < seg.second) return {0, 0};
  return seg;
}

void HaloShare::keep(std::int64_t slab, std::int64_t first, std::int64_t end, Array bits, int workers) {
  const std::lock_guard lock(mutex_);
  std::erase_if(entries_, [&](const auto& e) { return e.second.slab < slab - workers; });
  entries_.insert_or_assign({first, end}, Entry{slab, std::move(bits)});
}

std::optional<Array> HaloShare::take(std::int64_t first, std::int64_t end) {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find({first, end});
  if (it == entries_.end()) return std::nullopt;
  Array bits = std::move(it->second.bits);
  entries_.erase(it);
  return bits;
}

std::vector<SlabPiece> slab_pieces(const SlabPlan& plan, std::int64_t s, std::int64_t chunk_planes) {
  const Slab slab = slab_number(plan, s);
  if (slab.empty()) return {};
  if (chunk_planes <= 0) return {{slab.read_first, slab.read_end, false, false}};
  const auto lead = s > 0 ? shared_planes(plan, s - 1) : std::pair<std::int64_t, std::int64_t>{0, 0};
  const auto trail = shared_planes(plan, s);
  const bool has_lead = lead.second > lead.first, has_trail = trail.second > trail.first;
  std::vector<SlabPiece> out;
  auto add = [&](std::int64_t first, std::int64_t end, bool take, bool keep) {
    for (std::int64_t at = first; at < end; at += chunk_planes)
      out.push_back({at, std::min(end, at + chunk_planes), take, keep});
  };
  if (has_trail) add(trail.first, trail.second, false, true);
  add(has_lead ? lead.second : slab.read_first, has_trail ? trail.first : slab.read_end, false, false);
  if (has_lead) add(lead.first, lead.second, true, false);
  return out;
}

namespace {
/// The host of a place's rank.
const std::string& host_of(const Cluster& cluster, const Place& p) {
  return cluster.ranks[static_cast<std::size_t>(p.rank)].host;
}
}  // namespace

bool ranks_share_a_host(const std::vector<Place>& places, const Cluster& cluster) {
  std::map<std::string, int> first_rank;  // per host: the rank of its first worker
  for (const Place& p : places) {
    if (p.rank < 0 || p.rank >= cluster.size()) continue;
    const auto [at, added] = first_rank.emplace(host_of(cluster, p), p.rank);
    if (!added && at->second != p.rank) return true;
  }
  return false;
}

bool ranks_read_in_turns(const std::vector<Place>& places, const Cluster& cluster) {
  if (!ranks_share_a_host(places, cluster)) return false;
  // WEFT_HOST_TURNS=0 on any rank (mpirun passes a variable to other hosts only with -x) turns
  // the turns off on all of them: they are made collectively.
  const bool mine = settings().host_turns;
  const Environment* env = Environment::current();
  return env ? env->every_rank(mine) : mine;
}

bool places_read_in_turns(const std::vector<Place>& places, const Cluster& cluster, bool host_turns) {
  if (places.empty()) return false;
  const Place& first = places.front();
  const bool one_rank =
      std::all_of(places.begin(), places.end(), [&](const Place& p) { return p.rank == first.rank; });
  const bool one_host = std::all_of(places.begin(), places.end(), [&](const Place& p) {
    return host_of(cluster, p) == host_of(cluster, first);
  });
  return one_rank || (one_host && host_turns);
}

bool halo_handover_requested() {
  // WEFT_HALO_HANDOVER=1 on every rank (mpirun -x): the ranks agree, HostHalos is made collectively.
  const bool mine = settings().halo_handover;
  const Environment* env = Environment::current();
  return env ? env->every_rank(mine) : mine;
}

std::vector<bool> halos_read_twice(const std::vector<Place>& places, const Cluster& cluster, bool handover) {
  std::vector<bool> out(places.size(), false);
  if (handover) return out;
  for (std::size_t i = 1; i < places.size(); ++i)
    out[i] = places[i].rank != places[i - 1].rank && host_of(cluster, places[i]) == host_of(cluster, places[i - 1]);
  return out;
}

void balance_gpu_slabs(SlabPlan& plan, const std::vector<Place>& places, const Cluster& cluster, Element element,
                       int max_size, std::int64_t value_bytes, bool planes_forced, bool host_turns, bool handover,
                       bool reads_alone, double read_cost) {
  balance_for_gpus(plan, element, max_size, value_bytes, planes_forced,
                   reads_alone && places_read_in_turns(places, cluster, host_turns));
  if (read_cost >= 0) plan.read_cost = read_cost;
  plan.rereads = plan.read_cost > 0 ? halos_read_twice(places, cluster, handover) : std::vector<bool>{};
}

std::shared_ptr<const SlabReadTurns> slab_read_turns(const std::vector<Place>& places, const Cluster& cluster,
                                                     bool handover) {
  if (!ranks_share_a_host(places, cluster)) return nullptr;
  auto out = std::make_shared<SlabReadTurns>();
  out->turns = std::make_shared<HostTurns>();
  out->handover = handover;
  std::map<std::string, int> count, number;  // per host: workers so far, its number
  for (const Place& p : places) {
    const std::string& host = host_of(cluster, p);
    out->rank.push_back(p.rank);
    out->host.push_back(number.emplace(host, static_cast<int>(number.size())).first->second);
    out->host_position.push_back(count[host]++);
  }
  for (const Place& p : places) out->host_workers.push_back(count[host_of(cluster, p)]);
  return out;
}

namespace {
constexpr std::size_t kPage = 4096;
std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

/// Polls `ready` every 20 µs until it holds; false as soon as `stop` does.
bool wait_until(const std::function<bool()>& ready, const std::function<bool()>& stop) {
  while (!ready()) {
    if (stop && stop()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}
}  // namespace

struct HostHalos::Slots {
  std::unique_ptr<HostSegment> segment;
  std::set<std::pair<std::size_t, std::size_t>> reserved;         // offset, bytes given by fallocate here
  std::set<std::tuple<std::size_t, std::size_t, bool>> mapped;    // offset, bytes, for writing: mapped here
  std::int64_t uses = 0;                                          // HostHalos that held it so far
};

namespace {
/// The slots' segment between two HostHalos of this process (none while one holds it).
struct KeptSlots {
  std::mutex mutex;
  std::unique_ptr<HostHalos::Slots> slots;
};
KeptSlots& kept_slots() {
  static KeptSlots kept;
  return kept;
}
constexpr int kUseShift = 40;  // flag values: use << 40 | (slab + 1)
}  // namespace

HostHalos::HostHalos(const SlabPlan& plan, std::int64_t chunk_planes, const SlabReadTurns& turns)
    : plan_(plan), rank_(turns.rank), host_(turns.host),
      plane_bytes_(static_cast<std::size_t>(foreground_plane_bytes(plan.height, plan.width))) {
  if (static_cast<std::size_t>(plan_.workers) > rank_.size() || rank_.size() != host_.size())
    throw ConfigError("halos between ranks: the turns have " + std::to_string(rank_.size()) +
                      " workers, the plan has " + std::to_string(plan_.workers));
  // The same on every rank (the plan and the places are): the largest halo and piece count; and
  // the slots this rank writes and reads.
  const std::int64_t total = std::int64_t{plan_.rounds()} * plan_.workers;
  const Environment* env = Environment::current();
  const int me = env ? env->rank() : 0;
  std::int64_t largest = 0;
  std::size_t pieces = 0;
  std::set<std::size_t> writes, reads;
  for (std::int64_t n = 1; n < total && chunk_planes > 0; ++n) {
    if (!shares(n)) continue;
    if (rank_[static_cast<std::size_t>((n - 1) % plan_.workers)] == me) writes.insert(slot(n));
    if (rank_[static_cast<std::size_t>(n % plan_.workers)] == me) reads.insert(slot(n));
    const auto seg = shared_planes(plan_, n - 1);
    largest = std::max(largest, seg.second - seg.first);
    const auto all = slab_pieces(plan_, n, chunk_planes);
    pieces = std::max(pieces, static_cast<std::size_t>(std::count_if(all.begin(), all.end(),
                                                                    [](const SlabPiece& p) { return p.take; })));
  }
  if (largest == 0) return;
  const std::size_t slots = 2 * static_cast<std::size_t>(plan_.workers);
  flags_ = 1 + pieces;
  header_bytes_ = round_up(slots * flags_ * sizeof(std::int64_t), kPage);
  slot_bytes_ = round_up(static_cast<std::size_t>(largest) * plane_bytes_, kPage);
  const std::size_t bytes = header_bytes_ + slots * slot_bytes_;
  // The segment of the last HostHalos, where every rank has one big enough (they do alike: the
  // same plans in the same order), else a new one (collective).
  {
    const std::lock_guard lock(kept_slots().mutex);
    auto& kept = kept_slots().slots;
    if (kept && kept->segment->bytes() >= bytes) slots_ = std::move(kept);
  }
  const bool reuse = env ? env->every_rank(slots_ != nullptr) : slots_ != nullptr;
  if (!reuse) {
    slots_ = std::make_unique<Slots>();
    slots_->segment = std::make_unique<HostSegment>(bytes, "the halos of its slabs");
  }
  HostSegment* const segment = slots_->segment.get();
  tag_ = ++slots_->uses << kUseShift;
  // The slots this rank writes get their memory (fallocate: no copy then finds /dev/shm full, a
  // SIGBUS) and are mapped on a thread of their own while the run starts; put() waits for the
  // former. Given here, before the ranks agreed, the pages of one 107 MB slot made the first
  // graph's setup 20 ms on a 2xH200 host (granulometry.json, slabs_2048_ranks2_handover_2xH200_j),
  // about what the handover then gained; now the ranks only check that /dev/shm has room for what
  // the host's ranks will give (each its own unreserved writes, counted for every rank of the host
  // as if they wrote as much). Mapped before the run, on a 4xH200 the readers, which mapped
  // theirs after the agreement, most likely began their runs later than the writers: the wall
  // ended 19 ms after the last openings. A segment taken over has its pages.
  std::vector<std::pair<std::size_t, std::size_t>> to_give;
  for (const std::size_t s : writes)
    if (!slots_->reserved.contains({header_bytes_ + s * slot_bytes_, slot_bytes_}))
      to_give.emplace_back(header_bytes_ + s * slot_bytes_, slot_bytes_);
  const std::size_t host_needs = to_give.size() * slot_bytes_ * static_cast<std::size_t>(segment->host_ranks());
  bool ok = segment->data() && (slots_->reserved.contains({0, header_bytes_}) || segment->reserve(0, header_bytes_));
  if (ok) slots_->reserved.insert({0, header_bytes_});
  ok = ok && segment->room(host_needs);
  if (!ok && segment->data())
    logger("morphology")->warn("no room in /dev/shm for the halos of the slabs ({} bytes): each slab reads its halos",
                               host_needs + header_bytes_);
  if (!(env ? env->every_rank(ok) : ok)) {
    slots_.reset();
    return;
  }
  std::vector<std::tuple<std::size_t, std::size_t, bool>> to_map;
  for (const std::size_t s : writes) to_map.emplace_back(header_bytes_ + s * slot_bytes_, slot_bytes_, true);
  for (const std::size_t s : reads) to_map.emplace_back(header_bytes_ + s * slot_bytes_, slot_bytes_, false);
  std::erase_if(to_map, [&](const auto& m) { return !slots_->mapped.insert(m).second; });
  if (!to_give.empty()) given_.store(kGiving, std::memory_order_relaxed);
  if (!to_map.empty() || !to_give.empty())
    mapping_ = std::thread([this, slots = slots_.get(), to_give, to_map] {
      bool given = true;
      for (const auto& [offset, size] : to_give) {
        given = given && slots->segment->reserve(offset, size);
        if (given) slots->reserved.insert({offset, size});
      }
      given_.store(given ? kGiven : kNotGiven, std::memory_order_release);
      for (const auto& [offset, size, write] : to_map) slots->segment->map(offset, size, write);
    });
  logger("morphology")->debug("halos between ranks through shared memory: {} slot(s) of {} bytes written here, "
                              "{} range(s) to map, use {} of the segment",
                              writes.size(), slot_bytes_, to_map.size(), segment_use());
}

HostHalos::~HostHalos() {
  if (mapping_.joinable()) mapping_.join();
  if (!slots_) return;
  const std::lock_guard lock(kept_slots().mutex);
  auto& kept = kept_slots().slots;
  if (!kept || kept->segment->bytes() <= slots_->segment->bytes()) kept = std::move(slots_);
}

std::int64_t HostHalos::segment_use() const noexcept { return tag_ >> kUseShift; }

HostSegment* HostHalos::segment() const noexcept { return slots_ ? slots_->segment.get() : nullptr; }

bool HostHalos::linked(std::int64_t n) const { return slots_ && shares(n); }

bool HostHalos::shares(std::int64_t n) const {
  const std::int64_t total = std::int64_t{plan_.rounds()} * plan_.workers;
  if (n < 1 || n >= total) return false;
  const auto a = static_cast<std::size_t>((n - 1) % plan_.workers), b = static_cast<std::size_t>(n % plan_.workers);
  if (rank_[a] == rank_[b] || host_[a] != host_[b]) return false;
  const auto seg = shared_planes(plan_, n - 1);
  return seg.second > seg.first;
}

std::size_t HostHalos::slot(std::int64_t n) const {
  return static_cast<std::size_t>(n % plan_.workers) * 2 + static_cast<std::size_t>((n / plan_.workers) % 2);
}

std::int64_t* HostHalos::flag(std::size_t slot, std::size_t k) const {
  return static_cast<std::int64_t*>(segment()->data()) + slot * flags_ + k;
}

std::byte* HostHalos::bits(std::size_t slot) const {
  return static_cast<std::byte*>(segment()->data()) + header_bytes_ + slot * slot_bytes_;
}

namespace {
/// Where piece j of slab n's halo, planes [first, first + planes), lies in its slot.
std::size_t piece_offset(const SlabPlan& plan, std::int64_t n, std::size_t j, std::size_t flags, std::int64_t first,
                         std::int64_t planes, std::size_t plane_bytes, std::size_t slot_bytes) {
  const auto seg = shared_planes(plan, n - 1);
  if (j + 1 >= flags || first < seg.first || planes < 0 || first + planes > seg.second ||
      static_cast<std::size_t>(seg.second - seg.first) * plane_bytes > slot_bytes)
    throw Error("halo piece " + std::to_string(j) + " of slab " + std::to_string(n) + ", planes [" +
                std::to_string(first) + ", " + std::to_string(first + planes) + "), outside its halo [" +
                std::to_string(seg.first) + ", " + std::to_string(seg.second) + ")");
  return static_cast<std::size_t>(first - seg.first) * plane_bytes;
}
}  // namespace

bool HostHalos::put(std::int64_t n, std::size_t j, std::int64_t first, const Array& data,
                    const std::function<bool()>& stop) const {
  const std::int64_t planes = data.shape().ndim() == 2 ? data.shape()[0] : -1;
  if (!slots_ || data.bytes() != static_cast<std::size_t>(std::max<std::int64_t>(planes, 0)) * plane_bytes_)
    throw Error("halo piece of slab " + std::to_string(n) + ": " + data.shape().str() + " is not foreground bits");
  const std::size_t s = slot(n);
  const std::size_t at = piece_offset(plan_, n, j, flags_, first, planes, plane_bytes_, slot_bytes_);
  // The slot's last slab before this one (every second round, linked) must have taken its halo.
  std::int64_t before = n - 2 * std::int64_t{plan_.workers};
  while (before >= 1 && !shares(before)) before -= 2 * std::int64_t{plan_.workers};
  const std::atomic_ref<std::int64_t> taken_by(*flag(s, 0));
  if (before >= 1 && !wait_until([&] { return taken_by.load(std::memory_order_acquire) >= tag_ + before + 1; }, stop))
    return false;
  // The slot's pages, given on the mapping thread (the constructor checked that /dev/shm had room).
  if (!wait_until([&] { return given_.load(std::memory_order_acquire) != kGiving; }, stop)) return false;
  if (given_.load(std::memory_order_acquire) == kNotGiven)
    throw Error("halo of slab " + std::to_string(n) + ": /dev/shm has no more room for the halo slots (" +
                std::to_string(slot_bytes_) + " bytes each); without WEFT_HALO_HANDOVER=1 each slab reads its halos");
  copy_on_read_threads(bits(s) + at, data.raw(), data.bytes());
  std::atomic_ref<std::int64_t>(*flag(s, 1 + j)).store(tag_ + n + 1, std::memory_order_release);
  return true;
}

std::optional<Array> HostHalos::take(std::int64_t n, std::size_t j, std::int64_t first, std::int64_t end,
                                     const std::function<bool()>& stop) const {
  if (!slots_) throw Error("halo of slab " + std::to_string(n) + " taken where none is handed over");
  const std::size_t s = slot(n);
  const std::size_t at = piece_offset(plan_, n, j, flags_, first, end - first, plane_bytes_, slot_bytes_);
  const std::atomic_ref<std::int64_t> put_for(*flag(s, 1 + j));
  if (!wait_until([&] { return put_for.load(std::memory_order_acquire) >= tag_ + n + 1; }, stop)) return std::nullopt;
  Array out = Array::host(DType::u8, Shape(end - first, static_cast<std::int64_t>(plane_bytes_)));
  std::memcpy(out.raw(), bits(s) + at, out.bytes());
  return out;
}

void HostHalos::taken(std::int64_t n) const {
  if (slots_) std::atomic_ref<std::int64_t>(*flag(slot(n), 0)).store(tag_ + n + 1, std::memory_order_release);
}

SlabSource::SlabSource(std::string name, SlabPlan plan, int worker, MaskReader reader, std::int64_t chunk_planes,
                       std::shared_ptr<HaloShare> share, std::shared_ptr<const SlabReadTurns> turns,
                       std::shared_ptr<const HostHalos> halos)
    : Task(std::move(name)), plan_(plan), worker_(worker), reader_(std::move(reader)),
      chunk_planes_(std::max<std::int64_t>(0, chunk_planes)), share_(std::move(share)), turns_(std::move(turns)),
      halos_(std::move(halos)),
      read_ahead_(settings().slab_read_ahead.value_or(kSlabReadAhead)) {
  if (turns_ && (static_cast<std::size_t>(plan_.workers) > turns_->host_position.size() ||
                 turns_->host_position.size() != turns_->host_workers.size() || !turns_->turns))
    throw ConfigError(this->name() + ": host turns for " + std::to_string(turns_->host_position.size()) +
                      " workers, the plan has " + std::to_string(plan_.workers));
}

SlabSource::~SlabSource() {
  abandon_ = true;  // the copies that still wait give up
  ahead_.clear();   // the reads ahead finish first (their futures wait)
  takes_.clear();
  puts_.clear();
  end_turn();
}

void SlabSource::end_turn() noexcept {
  if (turn_ >= 0) turns_->turns->end(turn_);
  turn_ = -1;
}

void SlabSource::put_piece(const Array& m, std::size_t k) {
  const auto first_kept = static_cast<std::size_t>(
      std::find_if(pieces_.begin(), pieces_.end(), [](const SlabPiece& p) { return p.keep; }) - pieces_.begin());
  Array bits = is_foreground_bits(m, plan_.height, plan_.width) ? m : foreground_bits(m, {});
  puts_.push_back(std::async(std::launch::async, [this, n = number_ + 1, j = k - first_kept, first = pieces_[k].first,
                                                  k, bits = std::move(bits)] {
    // Copied in this slab's turn, right after the piece's read, on the reading threads.
    const ReadTurn turn(n - 1, static_cast<std::int64_t>(k));
    return halos_->put(n, j, first, bits, [this] { return abandon_.load(); });
  }));
}

void SlabSource::collect_puts(Context& ctx, bool all) {
  while (!puts_.empty()) {
    if (puts_.front().wait_for(std::chrono::microseconds(all ? 20 : 0)) == std::future_status::ready) {
      (void)puts_.front().get();  // rethrows a failed copy's error
      puts_.pop_front();
    } else if (!all) {
      return;
    } else if (ctx.cancelled()) {
      abandon_ = true;
      throw Error(name() + ": the run was cancelled while halo planes were on their way");
    }
  }
}

Array SlabSource::receive_piece(Context& ctx, std::size_t k) {
  const std::size_t j = k - turn_pieces_;
  if (!wait_until([&] { return takes_[j].wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                  [&ctx] { return ctx.cancelled(); })) {
    abandon_ = true;  // the copy gives up; its future is left to the destructor
    throw Error(halo_cancelled());
  }
  return took(j);
}

std::string SlabSource::halo_cancelled() const {
  return name() + ": the run was cancelled while this source waited for the halo of the slab before";
}

Array SlabSource::read(std::int64_t first, std::int64_t count, std::int64_t order, bool ahead) const {
  const ReadTurn turn(number_, order, ahead);
  Array m = reader_(first, count);
  const bool bits = is_foreground_bits(m, plan_.height, plan_.width) && m.shape()[0] == count;
  if (!bits && (m.dtype() != DType::u8 || m.shape().ndim() != 3 || m.shape()[0] != count ||
                m.shape()[1] != plan_.height || m.shape()[2] != plan_.width))
    throw ConfigError(name() + ": the reader returned " + m.shape().str() + " " + std::string(dtype_name(m.dtype())) +
                      " for planes [" + std::to_string(first) + ", " + std::to_string(first + count) + ")");
  return m;
}

bool SlabSource::await_turn(Context& ctx) {
  std::optional<std::size_t> piece;  // a piece of the halo from the slab before's rank came meanwhile
  const bool held = turns_->turns->wait(awaited_, [&] { return ctx.cancelled() || (piece = came()); });
  if (held) {
    turn_ = awaited_;
    awaited_ = -1;
    return true;
  }
  if (ctx.cancelled()) {
    awaited_ = -1;
    throw Error(name() + ": the run was cancelled while this source waited for its turn to read");
  }
  send_taken(ctx, *piece);
  return false;
}

void SlabSource::run(Context& ctx) {
  collect_puts(ctx, false);
  if (awaited_ < 0 && next_ >= pieces_.size()) {  // a new slab
    if (round_ == plan_.rounds()) {
      collect_puts(ctx, true);  // the halos for the next slabs' ranks are in before the stream ends
      return ctx.end_stream();
    }
    number_ = std::int64_t{round_} * plan_.workers + worker_;
    const int round = round_++;
    current_ = plan_.slab(round, worker_);
    pieces_ = current_.empty() ? std::vector<SlabPiece>{} : slab_pieces(plan_, number_, chunk_planes_);
    next_ = 0;
    // The halo shared with the slab before (the last pieces) comes from its rank when linked: the
    // copies start now, so that they run while this source waits for its turn and reads.
    turn_pieces_ = pieces_.size();
    takes_.clear();
    sent_early_.clear();
    takes_done_ = 0;
    if (linked(number_)) {
      while (turn_pieces_ > 0 && pieces_[turn_pieces_ - 1].take) --turn_pieces_;
      for (std::size_t k = turn_pieces_; k < pieces_.size(); ++k)
        takes_.push_back(std::async(std::launch::async, [this, n = number_, j = k - turn_pieces_, p = pieces_[k]] {
          return halos_->take(n, j, p.first, p.end, [this] { return abandon_.load(); });
        }));
      sent_early_.assign(takes_.size(), false);
    }
    if (turns_) awaited_ = turns_->turn(round, worker_);
  }
  // The slab's turn, if still to come: a piece of the halo that comes meanwhile goes on instead.
  if (awaited_ >= 0 && !await_turn(ctx)) return;
  if (current_.empty()) {  // past the volume: a 1-plane empty mask
    end_turn();
    Array m = Array::host(DType::u8, Shape(1, 1, 1));
    m.zero();
    return send(ctx, std::move(m), 0, 0);
  }
  try {
    read_next(ctx);
  } catch (...) {
    end_turn();  // the host's next readers go on; the error stops the run
    throw;
  }
}

void SlabSource::read_next(Context& ctx) {
  // A piece of the halo from the slab before's rank that has come goes on at once, so that its
  // transfer overlaps this slab's reads instead of following them.
  if (next_ < turn_pieces_ && send_early(ctx)) return;
  skip_sent();  // a slab with nothing to read in its turn: the pieces that went on while it waited
  if (next_ >= pieces_.size()) {  // all of them: the turn ends, the next slab begins
    end_turn();
    return run(ctx);
  }
  const std::size_t k = next_++;
  const SlabPiece piece = pieces_[k];
  std::future<Array> started;  // this piece's read, if a firing before started it
  if (!ahead_.empty() && ahead_.front().first == k) {
    started = std::move(ahead_.front().second);
    ahead_.pop_front();
  }
  // The reads of the next read_ahead_ pieces, in order, up to the first that the share may hold
  // or that comes from the slab before's rank.
  for (std::size_t j = ahead_.empty() ? k + 1 : ahead_.back().first + 1;
       j < turn_pieces_ && j <= k + static_cast<std::size_t>(read_ahead_) && !(pieces_[j].take && share_); ++j) {
    const SlabPiece next = pieces_[j];
    ahead_.emplace_back(j, std::async(std::launch::async, [this, next, j] {
                          return read(next.first, next.end - next.first, static_cast<std::int64_t>(j), true);
                        }));
  }
  std::optional<Array> m;
  if (k >= turn_pieces_) m = receive_piece(ctx, k);
  else if (piece.take && share_) m = share_->take(piece.first, piece.end);
  if (!m) m = started.valid() ? started.get() : read(piece.first, piece.end - piece.first, static_cast<std::int64_t>(k));
  if (piece.keep && share_ && is_foreground_bits(*m, plan_.height, plan_.width))
    share_->keep(number_, piece.first, piece.end, *m, plan_.workers);
  if (piece.keep && linked(number_ + 1)) put_piece(*m, k);
  // The turn ends with the slab's last piece read here (the reads ahead came before it), before
  // the pieces that come from the slab before's rank.
  if (k + 1 >= turn_pieces_) end_turn();
  send(ctx, std::move(*m), piece.first, piece.end);
  skip_sent();
}

void SlabSource::skip_sent() {
  while (next_ >= turn_pieces_ && next_ < pieces_.size() && sent_early_[next_ - turn_pieces_]) ++next_;
}

std::optional<std::size_t> SlabSource::came() const {
  for (std::size_t j = 0; j < takes_.size(); ++j)
    if (!sent_early_[j] && takes_[j].wait_for(std::chrono::seconds(0)) == std::future_status::ready) return j;
  return std::nullopt;
}

bool SlabSource::send_early(Context& ctx) {
  const auto j = came();
  if (j) send_taken(ctx, *j);
  return j.has_value();
}

void SlabSource::send_taken(Context& ctx, std::size_t j) {
  sent_early_[j] = true;
  const SlabPiece piece = pieces_[turn_pieces_ + j];
  send(ctx, took(j), piece.first, piece.end);
}

Array SlabSource::took(std::size_t j) {
  std::optional<Array> bits = takes_[j].get();
  if (!bits) throw Error(halo_cancelled());
  if (++takes_done_ == takes_.size()) halos_->taken(number_);
  return std::move(*bits);
}

void SlabSource::send(Context& ctx, Array m, std::int64_t chunk_first, std::int64_t chunk_end) {
  ctx.put(mask, std::move(m));
  SlabPlanes p = planes_of(current_);
  if (chunk_planes_ > 0) p.insert(p.end(), {chunk_first, chunk_end});
  ctx.put(slab, std::move(p));
}

void SlabUpload::assemble(Context& ctx, bool gpu) {
  Array m = ctx.take(mask_in);
  SlabPlanes p = ctx.take(slab_in);
  if (p.size() != 4 && p.size() != 6)
    throw ConfigError(name() + ": expected a slab's 4 planes or a chunk's 6, got " + std::to_string(p.size()));
  // A whole slab (4 planes, an empty slab or a single chunk) goes on, unpacked here if it came as bits.
  const std::int64_t c0 = p.size() == 6 ? p[4] : p[2], c1 = p.size() == 6 ? p[5] : p[3];
  const bool part = p[1] > p[0] && (c0 != p[2] || c1 != p[3]);
  p.resize(4);
  if (!part) {
    ctx.put(mask, p[1] > p[0] ? unpacked(ctx, std::move(m), height_, width_, gpu) : std::move(m));
    return ctx.put(slab, std::move(p));
  }
  const bool bits = is_foreground_bits(m, height_, width_);
  if ((!bits && (m.shape().ndim() != 3 || m.shape()[1] != height_ || m.shape()[2] != width_)) ||
      m.shape()[0] != c1 - c0 || c0 < p[2] || c1 > p[3])
    throw ConfigError(name() + ": chunk of planes [" + std::to_string(c0) + ", " + std::to_string(c1) + ") with mask " +
                      m.shape().str() + " outside the slab's planes [" + std::to_string(p[2]) + ", " +
                      std::to_string(p[3]) + ") of " + std::to_string(height_) + " x " + std::to_string(width_));
  if (slab_.empty()) {  // the slab's first chunk to come
    slab_ = ctx.alloc(DType::u8, Shape(p[3] - p[2], height_, width_));
    assembling_ = p;
    received_ = 0;
  } else if (assembling_ != p) {
    throw ConfigError(name() + ": chunk [" + std::to_string(c0) + ", " + std::to_string(c1) +
                      ") of another slab before the planes [" + std::to_string(assembling_[2]) + ", " +
                      std::to_string(assembling_[3]) + ") were all received");
  }
  const std::size_t plane = static_cast<std::size_t>(height_ * width_);
  auto* to = static_cast<std::uint8_t*>(slab_.raw()) + static_cast<std::size_t>(c0 - p[2]) * plane;
  (void)gpu;
#if defined(WEFT_HAVE_CUDA)
  if (gpu && bits)
    unpack_foreground_gpu(m.raw(), to, c1 - c0, height_, width_, ctx.stream());
  else if (gpu)
    WEFT_CUDA_CHECK(cudaMemcpyAsync(to, m.raw(), m.bytes(), cudaMemcpyDeviceToDevice,
                                    static_cast<cudaStream_t>(ctx.stream())));
  else
#endif
  {
    if (bits)
      unpack_foreground(m.data<std::uint8_t>(), c1 - c0, height_, width_, to);  // straight into the slab
    else
      std::memcpy(to, m.raw(), m.bytes());
  }
  received_ += c1 - c0;
  if (received_ > p[3] - p[2])
    throw ConfigError(name() + ": more planes than the slab's " + std::to_string(p[3] - p[2]) +
                      " received (a chunk came twice)");
  if (received_ == p[3] - p[2]) {  // every plane came: the slab goes on
    ctx.put(mask, std::move(slab_));
    slab_ = Array();
    ctx.put(slab, std::move(p));
  }
}

void SlabUpload::run(Context& ctx) { assemble(ctx, false); }
void SlabUpload::run_cuda(Context& ctx) { assemble(ctx, true); }

SlabGranulometry::SlabGranulometry(std::string name, GranulometryOptions options)
    : Task(std::move(name)),
      size_map(output<Array>("size_map", options.size_map_form.dtype)),
      options_(std::move(options)) {}

GranulometryOptions SlabGranulometry::options_for(const SlabPlanes& p) const {
  GranulometryOptions o = options_;
  o.first_plane = p[0] - p[2];
  o.end_plane = p[1] - p[2];
  return o;
}

void SlabGranulometry::put(Context& ctx, GranulometryResult result) {
  ctx.put(remaining, std::move(result.remaining));
  ctx.put(spectrum, std::move(result.spectrum));
  if (result.size_map.empty()) {
    result.size_map = ctx.alloc(options_.size_map_form.dtype, Shape(1));
    if (result.size_map.memory().is_host()) result.size_map.zero();
  }
  ctx.put(size_map, std::move(result.size_map));
}

namespace {
/// The curve of a slab without own planes: zeros for n = 0..N.
GranulometryResult empty_result(int max_size) {
  GranulometryResult r;
  r.remaining.assign(static_cast<std::size_t>(std::max(max_size, 0)) + 1, 0);
  r.spectrum = r.remaining;
  return r;
}
}  // namespace

void SlabGranulometry::run(Context& ctx) {
  Array m = ctx.take(mask);
  const SlabPlanes p = ctx.take(slab);
  check_planes(p, m, name());
  if (p[1] <= p[0]) return put(ctx, empty_result(options_.max_size));
  put(ctx, detail::with_size_phases(ctx, options_for(p), [&](const GranulometryOptions& o) { return granulometry_cpu(m, o); }));
}

#if defined(WEFT_HAVE_CUDA)
bool SlabGranulometry::has_cuda() const { return true; }
void SlabGranulometry::run_cuda(Context& ctx) {
  Array m = ctx.take(mask);
  const SlabPlanes p = ctx.take(slab);
  check_planes(p, m, name());
  if (p[1] <= p[0]) return put(ctx, empty_result(options_.max_size));
  put(ctx, detail::with_size_phases(ctx, options_for(p),
                                    [&](const GranulometryOptions& o) { return granulometry_gpu(m, o, ctx.stream()); }));
}
#else
bool SlabGranulometry::has_cuda() const { return false; }
void SlabGranulometry::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
#endif

SlabMaxDistance::SlabMaxDistance(std::string name, Element element, SlabPlan plan)
    : Task(std::move(name)), element_(element), plan_(plan) {}

void SlabMaxDistance::put(Context& ctx, const SlabPlanes& p, std::int64_t max_distance) {
  // A slab read over the whole volume knows D exactly; otherwise D ≤ r(halo) on an own plane
  // puts the nearest background within halo planes, inside the slab, so min(D, cap + 1) is exact.
  const bool whole = p[2] == 0 && p[3] == plan_.depth;
  const std::int64_t cap = radius_limit(element_, plan_.halo);
  if (whole || max_distance <= cap) return ctx.put(out, std::vector<std::int64_t>{max_distance, 1});
  ctx.put(out, std::vector<std::int64_t>{cap + 1, 0});
}

void SlabMaxDistance::run(Context& ctx) {
  const SlabPlanes p = ctx.take(slab);
  Array m = ctx.take(mask);
  if (p.size() == 4 && p[1] > p[0]) m = unpacked(ctx, std::move(m), plan_.height, plan_.width, false);
  check_planes(p, m, name());
  if (p[1] <= p[0]) return ctx.put(out, std::vector<std::int64_t>{0, 1});
  put(ctx, p, max_distance_cpu(m, element_, p[0] - p[2], p[1] - p[2]));
}

#if defined(WEFT_HAVE_CUDA)
bool SlabMaxDistance::has_cuda() const { return true; }
void SlabMaxDistance::run_cuda(Context& ctx) {
  const SlabPlanes p = ctx.take(slab);
  Array m = ctx.take(mask);
  if (p.size() == 4 && p[1] > p[0]) m = unpacked(ctx, std::move(m), plan_.height, plan_.width, true);
  check_planes(p, m, name());
  if (p[1] <= p[0]) return ctx.put(out, std::vector<std::int64_t>{0, 1});
  put(ctx, p, max_distance_gpu(m, element_, p[0] - p[2], p[1] - p[2], ctx.stream()));
}
#else
bool SlabMaxDistance::has_cuda() const { return false; }
void SlabMaxDistance::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
#endif

CurveSum::CurveSum(std::string name, int workers) : Task(std::move(name)) {
  for (int i = 0; i < workers; ++i) remaining_in.push_back(input<std::vector<std::int64_t>>("remaining." + std::to_string(i)));
  for (int i = 0; i < workers; ++i) spectrum_in.push_back(input<std::vector<std::int64_t>>("spectrum." + std::to_string(i)));
}

void CurveSum::run(Context& ctx) {
  auto sum = [&](const std::vector<In<std::vector<std::int64_t>>>& ports) {
    std::vector<std::int64_t> total;
    for (const auto& port : ports) {
      const std::vector<std::int64_t> v = ctx.take(port);
      if (v.size() > total.size()) total.resize(v.size(), 0);
      for (std::size_t n = 0; n < v.size(); ++n) total[n] += v[n];
    }
    return total;
  };
  ctx.put(remaining, sum(remaining_in));
  ctx.put(spectrum, sum(spectrum_in));
}

MaxDistanceCollector::MaxDistanceCollector(std::string name, int workers, std::shared_ptr<MaxDistance> result)
    : Task(std::move(name)), result_(std::move(result)) {
  for (int i = 0; i < workers; ++i) in.push_back(input<std::vector<std::int64_t>>("in." + std::to_string(i)));
}

void MaxDistanceCollector::run(Context& ctx) {
  for (const auto& port : in) {
    const std::vector<std::int64_t> v = ctx.take(port);
    if (v.size() != 2) throw ConfigError(name() + ": expected {value, exact}");
    result_->value = std::max(result_->value, v[0]);
    result_->exact = result_->exact && v[1] != 0;
  }
  ++result_->rounds_seen;
}

SlabGraph add_slab_granulometry(Graph& graph, const SlabPlan& plan, const GranulometryOptions& options,
                                const MaskReader& reader, std::int64_t chunk_bytes,
                                std::shared_ptr<const SlabReadTurns> turns) {
  if (options.max_size < 0 && plan.slabs() > 1)
    throw ConfigError("granulometry over " + std::to_string(plan.slabs()) + " slabs: the largest size must be known");
  auto& sum = graph.add<CurveSum>("curve", plan.workers);
  SlabGraph out{sum.remaining, sum.spectrum, {}, false};
  const std::int64_t plane = plan.height * plan.width;
  const std::int64_t chunk = chunk_bytes > 0 ? std::max<std::int64_t>(1, chunk_bytes / plane) : 0;  // planes
  const auto share = std::make_shared<HaloShare>();
  const auto halos = turns && turns->handover ? std::make_shared<const HostHalos>(plan, chunk, *turns) : nullptr;
  out.halos_handed_over = halos && halos->available();
  for (int i = 0; i < plan.workers; ++i) {
    const std::string id = std::to_string(i);
    auto& source = graph.add<SlabSource>("volume." + id, plan, i, reader, chunk, share, turns, halos);
    auto& upload = graph.add<SlabUpload>("upload." + id, plan.height, plan.width);
    auto& openings = graph.add<SlabGranulometry>("openings." + id, options);
    graph.connect(source.mask, upload.mask_in);
    graph.connect(source.slab, upload.slab_in);
    graph.connect(upload.mask, openings.mask);
    graph.connect(upload.slab, openings.slab);
    graph.connect(openings.remaining, sum.remaining_in[i]);
    graph.connect(openings.spectrum, sum.spectrum_in[i]);
    out.size_maps.push_back(openings.size_map);
  }
  return out;
}

void add_slab_max_distance(Graph& graph, const SlabPlan& plan, Element element, const MaskReader& reader, int ranks,
                           const std::shared_ptr<MaxDistance>& result, std::shared_ptr<const SlabReadTurns> turns) {
  std::vector<MaxDistanceCollector*> collectors;
  for (int r = 0; r < ranks; ++r)
    collectors.push_back(&graph.add<MaxDistanceCollector>("collect." + std::to_string(r), plan.workers, result));
  for (int i = 0; i < plan.workers; ++i) {
    const std::string id = std::to_string(i);
    auto& source = graph.add<SlabSource>("volume." + id, plan, i, reader, 0, nullptr, turns);
    auto& distance = graph.add<SlabMaxDistance>("distance." + id, element, plan);
    graph.connect(source.mask, distance.mask);
    graph.connect(source.slab, distance.slab);
    for (auto* c : collectors) graph.connect(distance.out, c->in[i]);
  }
}

std::vector<Place> slab_places(const Cluster& cluster, DeviceChoice choice) { return spread_places(cluster, choice); }

std::optional<Place> SlabMapper::place(const Task& task, const Graph&, const Cluster&) const {
  const std::string& name = task.name();
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string kind = name.substr(0, dot);
  int index = -1;
  const char* digits = name.data() + dot + 1;
  const auto [end, ec] = std::from_chars(digits, name.data() + name.size(), index);
  if (ec != std::errc{} || end != name.data() + name.size() || index < 0) return std::nullopt;
  if (kind == "collect") return Place::host(index);
  if (places_.empty()) return std::nullopt;
  const Place& at = places_[static_cast<std::size_t>(index) % places_.size()];
  if (kind == "volume") return Place::host(at.rank);
  if (kind == "openings" || kind == "distance" || kind == "upload") return at;
  return std::nullopt;
}

}  // namespace weft::morphology
