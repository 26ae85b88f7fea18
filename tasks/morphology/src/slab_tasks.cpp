#include "weft/tasks/morphology/slab_tasks.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime.h>

#include "weft/cuda.hpp"
#endif

#include "env_count.hpp"
#include "weft/exec/environment.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"

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
  add(has_lead ? lead.second : slab.read_first, has_trail ? trail.first : slab.read_end, false, false);
  if (has_trail) add(trail.first, trail.second, false, true);
  if (has_lead) add(lead.first, lead.second, true, false);
  return out;
}

bool ranks_read_in_turns(const std::vector<Place>& places, const Cluster& cluster) {
  bool shared = false;  // some host has workers on two ranks (the same answer on every rank)
  std::map<std::string, int> first_rank;  // per host: the rank of its first worker
  for (const Place& p : places) {
    if (p.rank < 0 || p.rank >= cluster.size()) continue;
    const std::string& host = cluster.ranks[static_cast<std::size_t>(p.rank)].host;
    const auto [at, added] = first_rank.emplace(host, p.rank);
    shared = shared || (!added && at->second != p.rank);
  }
  if (!shared) return false;
  // WEFT_HOST_TURNS=0 on any rank (mpirun passes a variable to other hosts only with -x) turns
  // the turns off on all of them: they are made collectively.
  const char* off = std::getenv("WEFT_HOST_TURNS");
  const bool mine = !(off && std::string(off) == "0");
  const Environment* env = Environment::current();
  return env ? env->every_rank(mine) : mine;
}

bool places_read_in_turns(const std::vector<Place>& places, const Cluster& cluster, bool host_turns) {
  if (places.empty()) return false;
  const Place& first = places.front();
  auto host_of = [&](const Place& p) -> const std::string& {
    return cluster.ranks[static_cast<std::size_t>(p.rank)].host;
  };
  const bool one_rank =
      std::all_of(places.begin(), places.end(), [&](const Place& p) { return p.rank == first.rank; });
  const bool one_host =
      std::all_of(places.begin(), places.end(), [&](const Place& p) { return host_of(p) == host_of(first); });
  return one_rank || (one_host && host_turns);
}

std::shared_ptr<const SlabReadTurns> slab_read_turns(const std::vector<Place>& places, const Cluster& cluster) {
  if (!ranks_read_in_turns(places, cluster)) return nullptr;
  auto out = std::make_shared<SlabReadTurns>();
  out->turns = std::make_shared<HostTurns>();
  // The halo two slabs of different ranks share is read by both unless WEFT_HALO_MESSAGES=1 on
  // every rank: handed over by MPI it came later than read again on the 4xH200 hosts measured
  // (SlabReadTurns).
  out->messages = std::make_shared<SideMessages>();
  const char* wanted = std::getenv("WEFT_HALO_MESSAGES");
  const Environment* env = Environment::current();
  const bool mine = wanted && std::string(wanted) == "1";
  if (!(env ? env->every_rank(mine) : mine) || !out->messages->available()) out->messages.reset();
  for (const Place& p : places) out->rank.push_back(p.rank);
  std::map<std::string, int> count;  // workers per host so far
  auto host_of = [&](const Place& p) { return cluster.ranks[static_cast<std::size_t>(p.rank)].host; };
  for (const Place& p : places) out->host_position.push_back(count[host_of(p)]++);
  for (const Place& p : places) out->host_workers.push_back(count[host_of(p)]);
  return out;
}

SlabSource::SlabSource(std::string name, SlabPlan plan, int worker, MaskReader reader, std::int64_t chunk_planes,
                       std::shared_ptr<HaloShare> share, std::shared_ptr<const SlabReadTurns> turns)
    : Task(std::move(name)), plan_(plan), worker_(worker), reader_(std::move(reader)),
      chunk_planes_(std::max<std::int64_t>(0, chunk_planes)), share_(std::move(share)), turns_(std::move(turns)),
      read_ahead_(detail::count_from_env("WEFT_SLAB_READ_AHEAD", 1, 16, "chunks").value_or(kSlabReadAhead)) {
  if (turns_ && (static_cast<std::size_t>(plan_.workers) > turns_->host_position.size() ||
                 turns_->host_position.size() != turns_->host_workers.size() ||
                 (turns_->messages && turns_->rank.size() != turns_->host_position.size()) || !turns_->turns))
    throw ConfigError(this->name() + ": host turns for " + std::to_string(turns_->host_position.size()) +
                      " workers, the plan has " + std::to_string(plan_.workers));
}

SlabSource::~SlabSource() {
  ahead_.clear();  // the reads ahead finish first (their futures wait)
  end_turn();
  // Halo sends not received (the run stopped on an error): given up, their bits kept to the end.
  static std::mutex mutex;
  static std::vector<Array> kept;
  const std::lock_guard lock(mutex);
  for (auto& [bits, sending] : sends_)
    if (!sending.done()) kept.push_back(bits);
}

void SlabSource::end_turn() noexcept {
  if (turn_ >= 0) turns_->turns->end(turn_);
  turn_ = -1;
}

bool SlabSource::linked(std::int64_t a, std::int64_t b) const {
  const std::int64_t total = std::int64_t{plan_.rounds()} * plan_.workers;
  if (!turns_ || !turns_->messages || a < 0 || b < 0 || a >= total || b >= total) return false;
  return turns_->rank[static_cast<std::size_t>(a % plan_.workers)] !=
         turns_->rank[static_cast<std::size_t>(b % plan_.workers)];
}

namespace {
/// Tag of the j-th piece of the halo that slab `s` shares with the slab before.
int halo_tag(std::int64_t s, std::size_t j) {
  return static_cast<int>(((s % 4096) << 8) | static_cast<std::int64_t>(j % 256));
}
}  // namespace

void SlabSource::send_piece(const Array& m, std::size_t k) {
  std::size_t first_kept = 0;
  while (!pieces_[first_kept].keep) ++first_kept;
  Array bits = is_foreground_bits(m, plan_.height, plan_.width) ? m : foreground_bits(m, {});
  const int to = turns_->rank[static_cast<std::size_t>((number_ + 1) % plan_.workers)];
  SideRequest sending = turns_->messages->send(to, halo_tag(number_ + 1, k - first_kept), bits.raw(),
                                            static_cast<std::size_t>(bits.bytes()));
  sends_.emplace_back(std::move(bits), std::move(sending));
}

Array SlabSource::receive_piece(Context& ctx, std::size_t k) {
  auto& [bits, receiving] = receives_[k - turn_pieces_];
  if (!receiving.wait([&ctx] { return ctx.cancelled(); }))
    throw Error(name() + ": the run was cancelled while this source waited for the halo of the slab before");
  return std::move(bits);
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

void SlabSource::run(Context& ctx) {
  while (!sends_.empty() && sends_.front().second.done()) sends_.pop_front();
  if (next_ >= pieces_.size()) {  // a new slab
    if (round_ == plan_.rounds()) {
      // The halos sent leave before the stream ends (their receivers take them in their own time).
      while (!sends_.empty()) {
        if (ctx.cancelled()) throw Error(name() + ": the run was cancelled while halo planes were on their way");
        if (sends_.front().second.done()) sends_.pop_front();
        else std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      return ctx.end_stream();
    }
    number_ = std::int64_t{round_} * plan_.workers + worker_;
    const int round = round_++;
    current_ = plan_.slab(round, worker_);
    pieces_ = current_.empty() ? std::vector<SlabPiece>{} : slab_pieces(plan_, number_, chunk_planes_);
    next_ = 0;
    // The halo shared with the slab before (the last pieces) comes from its rank when linked: its
    // receives are posted now, so that the bits travel while this source waits and reads.
    turn_pieces_ = pieces_.size();
    receives_.clear();
    if (linked(number_ - 1, number_)) {
      while (turn_pieces_ > 0 && pieces_[turn_pieces_ - 1].take) --turn_pieces_;
      const int from = turns_->rank[static_cast<std::size_t>((number_ - 1) % plan_.workers)];
      for (std::size_t k = turn_pieces_; k < pieces_.size(); ++k) {
        Array bits = Array::host(DType::u8, Shape(pieces_[k].end - pieces_[k].first,
                                                  foreground_plane_bytes(plan_.height, plan_.width)));
        SideRequest receiving = turns_->messages->receive(from, halo_tag(number_, k - turn_pieces_), bits.raw(),
                                                          static_cast<std::size_t>(bits.bytes()));
        receives_.emplace_back(std::move(bits), std::move(receiving));
      }
    }
    if (turns_) {
      turn_ = turns_->turn(round, worker_);
      if (!turns_->turns->wait(turn_, [&ctx] { return ctx.cancelled(); })) {
        turn_ = -1;  // not taken
        throw Error(name() + ": the run was cancelled while this source waited for its turn to read");
      }
    }
    if (current_.empty()) {  // past the volume: a 1-plane empty mask
      end_turn();
      Array m = Array::host(DType::u8, Shape(1, 1, 1));
      m.zero();
      return send(ctx, std::move(m), 0, 0);
    }
  }
  try {
    read_next(ctx);
  } catch (...) {
    end_turn();  // the host's next readers go on; the error stops the run
    throw;
  }
}

void SlabSource::read_next(Context& ctx) {
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
  if (piece.keep && linked(number_, number_ + 1)) send_piece(*m, k);
  // The turn ends with the slab's last piece read here (the reads ahead came before it), before
  // the pieces that come from the slab before's rank.
  if (k + 1 >= turn_pieces_) end_turn();
  send(ctx, std::move(*m), piece.first, piece.end);
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
    : Task(std::move(name)), options_(std::move(options)) {}

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
    result.size_map = ctx.alloc(DType::i32, Shape(1));
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
  put(ctx, granulometry_cpu(m, options_for(p)));
}

#if defined(WEFT_HAVE_CUDA)
bool SlabGranulometry::has_cuda() const { return true; }
void SlabGranulometry::run_cuda(Context& ctx) {
  Array m = ctx.take(mask);
  const SlabPlanes p = ctx.take(slab);
  check_planes(p, m, name());
  if (p[1] <= p[0]) return put(ctx, empty_result(options_.max_size));
  put(ctx, granulometry_gpu(m, options_for(p), ctx.stream()));
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
  SlabGraph out{sum.remaining, sum.spectrum, {}};
  const std::int64_t plane = plan.height * plan.width;
  const std::int64_t chunk = chunk_bytes > 0 ? std::max<std::int64_t>(1, chunk_bytes / plane) : 0;  // planes
  const auto share = std::make_shared<HaloShare>();
  for (int i = 0; i < plan.workers; ++i) {
    const std::string id = std::to_string(i);
    auto& source = graph.add<SlabSource>("volume." + id, plan, i, reader, chunk, share, turns);
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
