// Halo exchange between the slab tasks of a partition (see exec/halo.hpp).
//
// Same process: the sender posts where its boundary rows are (and, on a GPU, an event for when
// they are written); the receiver copies them straight into its halo rows (a memcpy, or on a
// GPU a copy on the receiver's copy stream, beside its kernels) and acknowledges; the sender's
// end() waits for the acknowledgement (on a GPU its stream waits for the copy's event, the host
// does not block). No buffer in between, no copy more than the one needed.
// Other ranks: host rows are sent and received in place by the progress thread (pinned pool
// memory); device rows go through pinned staging buffers (device to host on the copy stream
// before the send, host to device after the receive, the task's stream waiting for it).
#include "exec/halo.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "data/copy.hpp"
#include "device/device.hpp"
#include "transport/remote.hpp"
#include "trace/nvtx.hpp"
#include "trace/trace.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace detail {
namespace {

// Rows handed from a slab to a neighbour in this process: where they are, and when written.
struct Post {
  std::uint64_t token = 0, exchange = 0;
  const void* rows = nullptr;
  std::size_t bytes = 0;  // the receiver checks that both sides exchange the same width
  Memory memory;
  std::shared_ptr<Event> ready;  // device rows: completes once they are written
};
// The neighbour copied the rows; `done` (copies by a GPU) completes with the copy.
struct Ack {
  std::uint64_t token = 0, exchange = 0;
  std::shared_ptr<Event> done;
};

// One direction between two slabs of this process: one thread pushes, one takes, and at most a
// few items are ever in flight (a slab posts exchange k + 1 only after the neighbour acknowledged
// exchange k). No lock: the items are published by the tail's release store, and a thread that
// found nothing after its spin sleeps on `signal_` (a futex through std::atomic::wait), which
// every push and the run's cancellation bump, so a wake-up costs a system call only when the
// other side really sleeps.
template <class T>
class Spsc {
 public:
  void push(T item) {
    const std::uint32_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) >= kSlots) throw Error("internal: a halo mailbox overflowed");
    slots_[t % kSlots] = std::move(item);
    tail_.store(t + 1, std::memory_order_release);
    wake();
  }
  [[nodiscard]] bool empty() const noexcept {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_relaxed);
  }
  T pop() {
    const std::uint32_t h = head_.load(std::memory_order_relaxed);
    T item = std::move(slots_[h % kSlots]);
    slots_[h % kSlots] = T{};
    head_.store(h + 1, std::memory_order_release);
    return item;
  }
  [[nodiscard]] std::uint32_t signal() const noexcept { return signal_.load(std::memory_order_acquire); }
  /// Sleeps until the signal differs from `seen` (a push or a cancellation since it was read).
  void sleep(std::uint32_t seen) const noexcept { signal_.wait(seen, std::memory_order_acquire); }
  void wake() noexcept {
    signal_.fetch_add(1, std::memory_order_release);
    signal_.notify_all();
  }

 private:
  static constexpr std::uint32_t kSlots = 4;
  std::array<T, kSlots> slots_{};
  std::atomic<std::uint32_t> head_{0}, tail_{0}, signal_{0};
};

}  // namespace

struct Mailbox {
  Spsc<Post> posts;
  Spsc<Ack> acks;
};

struct HaloLinks::Shared {
  std::mutex mutex;  // the map of mailboxes (filled before the run)
  std::atomic<bool> cancelled{false};
  std::map<std::tuple<std::size_t, int, int>, std::unique_ptr<Mailbox>> mailboxes;  // (partition, from, to)
  Mailbox& mailbox(std::size_t partition, int from, int to) {
    auto& m = mailboxes[{partition, from, to}];
    if (!m) m = std::make_unique<Mailbox>();
    return *m;
  }
};

}  // namespace detail

namespace {
// How long a halo exchange polls for its neighbour before sleeping (where there is more than one core).
constexpr std::chrono::microseconds kSpin{50};
const bool kSpinCores = std::thread::hardware_concurrency() > 1;
inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

struct Halo::Impl {
  struct Side {
    bool after = false;  // the neighbour holds the next rows
    int neighbour = 0;
    detail::Mailbox* out = nullptr;  // same process: our rows to the neighbour, its acknowledgements
    detail::Mailbox* in = nullptr;   // its rows to us, our acknowledgements
    int peer = -1;                   // another rank
    int send_channel = 0, receive_channel = 0;
    std::shared_ptr<detail::RemoteLinks::Message> sending, receiving;
    Array held, staged_out, staged_in;  // alive while MPI may touch them
  };

  std::string task;
  int part = 0, parts = 1, width = 0;
  Place place;
  bool overlap = true;
  detail::HaloLinks::Shared* shared = nullptr;
  detail::RemoteLinks* remote = nullptr;
  detail::TraceRecorder* trace = nullptr;
  int lane = 0;
  std::vector<Side> sides;
  void* copy_stream = nullptr;  // GPU: halo copies beside the task's kernels

  Slab slab;  // this firing
  Slab layout;        // the open exchange's layout (the slab, or Halo::begin's layout)
  int rows_out = 0;   // and its width: rows sent to (and received from) each neighbour
  void* stream = nullptr;
  std::uint64_t token = 0, exchange = 0;
  const void* open = nullptr;
  std::deque<std::pair<std::shared_ptr<detail::Event>, Array>> staging;  // host buffers of device copies

  ~Impl() {
    try {
      for (auto& [event, array] : staging) event->synchronize();
      if (copy_stream) {
        detail::synchronize_stream(place.device, copy_stream);
        detail::release_task_stream(place.device, copy_stream);
      }
    } catch (...) {  // a failed device already failed the run
    }
  }

  [[nodiscard]] std::string who() const {
    return "task '" + task + "' (slab " + std::to_string(part) + " of " + std::to_string(parts) + ")";
  }
  [[noreturn]] void stopped(int neighbour) const {
    throw Error("the run stopped while " + who() + " waited for slab " + std::to_string(neighbour));
  }
  char* boundary_rows(const Array& a, const Side& s) const {
    return detail::row_address(a, s.after ? layout.halo_before + layout.rows - rows_out : layout.halo_before);
  }
  char* halo_rows(const Array& a, const Side& s) const {
    return detail::row_address(a, s.after ? layout.halo_before + layout.rows : 0);
  }

  void start(const Slab& s, Context& ctx) {
    if (s.part != part || s.parts != parts || s.halo_before != (part > 0 ? width : 0) ||
        s.halo_after != (part + 1 < parts ? width : 0))
      throw Error(who() + " received the rows of slab " + std::to_string(s.part) + " of " + std::to_string(s.parts));
    slab = s;
    stream = ctx.stream();
    token = ctx.index();
    exchange = 0;
    open = nullptr;
    if (place.is_gpu() && !sides.empty() && !copy_stream) copy_stream = detail::acquire_task_stream(place.device);
  }
  void finish() {
    if (open) throw Error(who() + " began a halo exchange and did not end it");
  }

  void check(const Array& a, const Slab& l) const {
    if (a.empty() || a.shape().ndim() < 1 || a.shape()[0] != l.total_rows())
      throw Error(who() + ": halo exchange of an array of shape " + a.shape().str() + ", expected " +
                  std::to_string(l.total_rows()) + " rows (" + std::to_string(l.halo_before) + " halo, " +
                  std::to_string(l.rows) + " owned, " + std::to_string(l.halo_after) + " halo)");
    Memory m = a.memory();
    if (place.is_gpu() ? (m.is_host() || m.device_index != place.device) : !m.is_host())
      throw Error(who() + ": halo exchange of an array that is not on the task's place " + place.str());
  }

  // A layout other than the slab: same part, one width at every inner boundary, no wider than
  // the owned rows (the rows sent are owned rows of this part).
  [[nodiscard]] int layout_width(const Slab& l) const {
    const std::int64_t w = std::max(l.halo_before, l.halo_after);
    if (l.part != part || l.parts != parts || l.rows < 0 || (part > 0 && l.halo_before != w) ||
        (part == 0 && l.halo_before != 0) || (part + 1 < parts && l.halo_after != w) ||
        (part + 1 == parts && l.halo_after != 0) || (parts > 1 && (w < 1 || w > l.rows)))
      throw Error(who() + ": halo exchange with the layout of part " + std::to_string(l.part) + " of " +
                  std::to_string(l.parts) + " (" + std::to_string(l.halo_before) + " halo, " + std::to_string(l.rows) +
                  " owned, " + std::to_string(l.halo_after) +
                  " halo): expected this part, one width w >= 1 at each inner boundary and w <= owned rows");
    return static_cast<int>(w);
  }

  void begin(const Array& a, const Slab& l, int w) {
    check(a, l);
    if (open) throw Error(who() + " began a halo exchange before ending the previous one");
    open = a.raw();
    layout = l;
    rows_out = w;
    if (sides.empty()) return;
    const std::size_t n = static_cast<std::size_t>(w) * detail::row_bytes(a);
    const bool gpu = place.is_gpu();
    // GPU: the task's work so far (its boundary rows, and every earlier read of a's halo rows).
    // The copy stream waits for it before it reads a's boundary rows or writes a's halo rows.
    std::shared_ptr<detail::Event> ready;
    if (gpu) {
      ready = detail::Event::record(place.device, stream);
      ready->make_wait(copy_stream);
    }
    // Receives first, so that a neighbour's rows find their buffer posted.
    for (Side& s : sides) {
      if (s.peer < 0) continue;
      s.held = a;
      if (gpu) s.staged_in = Array::host(DType::u8, Shape(static_cast<std::int64_t>(n)));
      s.receiving = remote->receive(gpu ? s.staged_in.raw() : halo_rows(a, s), n, s.peer, s.receive_channel);
    }
    bool staged = false;
    for (Side& s : sides) {
      if (s.peer < 0 || !gpu) continue;
      s.staged_out = Array::host(DType::u8, Shape(static_cast<std::int64_t>(n)));
      detail::copy_bytes(s.staged_out.raw(), Memory::on_host(), boundary_rows(a, s), a.memory(), n, copy_stream);
      staged = true;
    }
    if (staged) detail::synchronize_stream(place.device, copy_stream);  // only the boundary rows' work
    for (Side& s : sides)
      if (s.peer >= 0) s.sending = remote->send(gpu ? s.staged_out.raw() : boundary_rows(a, s), n, s.peer, s.send_channel);
    for (Side& s : sides)
      if (s.peer < 0) s.out->posts.push({token, exchange, boundary_rows(a, s), n, a.memory(), ready});
  }

  template <class T> T take(detail::Spsc<T>& queue, int neighbour, const char* what) {
    detail::SerialPause pause;  // overlap off: the neighbour needs this rank's serial lock to run
    // Both slabs usually run at once and their rows arrive within microseconds: poll a little
    // before sleeping, since a sleep and its wake-up cost tens of microseconds per exchange
    // (bench/runtime/halo_bench.cpp). The first polls only relax the core; later ones yield it.
    if (queue.empty() && kSpinCores) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int polls = 0; queue.empty() && !shared->cancelled; ++polls) {
        if (polls < 256) {
          relax();
        } else {
          if (std::chrono::steady_clock::now() >= until) break;
          std::this_thread::yield();
        }
      }
    }
    while (queue.empty()) {
      if (shared->cancelled) stopped(neighbour);
      const std::uint32_t seen = queue.signal();
      if (queue.empty() && !shared->cancelled) queue.sleep(seen);
    }
    T item = queue.pop();
    if (item.token != token || item.exchange != exchange)
      throw Error(who() + ": slab " + std::to_string(neighbour) + " sent " + what + " of token " +
                  std::to_string(item.token) + " exchange " + std::to_string(item.exchange) + " for token " +
                  std::to_string(token) + " exchange " + std::to_string(exchange) +
                  " (every slab must exchange halos the same number of times per token)");
    return item;
  }

  void end(const Array& a) {
    if (!open || a.raw() != open) throw Error(who() + " ended a halo exchange it did not begin with this array");
    open = nullptr;
    if (sides.empty()) {
      ++exchange;
      return;
    }
    const detail::NvtxRange range("halo exchange: rows in");
    const std::size_t n = static_cast<std::size_t>(rows_out) * detail::row_bytes(a);
    const bool gpu = place.is_gpu();
    const double t0 = trace->enabled() ? trace->now_us() : 0;
    std::shared_ptr<detail::Event> copied;  // GPU: every copy into a's halo rows (one copy stream)
    // Rows coming in.
    for (Side& s : sides) {
      void* dst = halo_rows(a, s);
      if (s.peer < 0) {
        detail::Post post = take(s.in->posts, s.neighbour, "rows");
        if (post.bytes != n)
          throw Error(who() + ": slab " + std::to_string(s.neighbour) + " sent " + std::to_string(post.bytes) +
                      " bytes of halo rows in exchange " + std::to_string(exchange) + ", " + std::to_string(n) +
                      " expected (every slab must exchange the same width of arrays of the same row size)");
        std::shared_ptr<detail::Event> done;
        if (gpu) {
          if (post.ready) post.ready->make_wait(copy_stream);
          detail::copy_bytes(dst, a.memory(), post.rows, post.memory, n, copy_stream);
          done = copied = detail::Event::record(place.device, copy_stream);
        } else {
          if (post.ready) post.ready->synchronize();
          detail::copy_bytes(dst, a.memory(), post.rows, post.memory, n, nullptr);
        }
        s.in->acks.push({token, exchange, std::move(done)});
      } else {
        if (!remote->wait(*s.receiving)) stopped(s.neighbour);
        s.receiving.reset();
        if (gpu) {
          detail::copy_bytes(dst, a.memory(), s.staged_in.raw(), Memory::on_host(), n, copy_stream);
          copied = detail::Event::record(place.device, copy_stream);
          staging.emplace_back(copied, std::move(s.staged_in));
        }
      }
    }
    // Rows going out: the neighbours have them once they acknowledged (or MPI sent them).
    for (Side& s : sides) {
      if (s.peer < 0) {
        detail::Ack ack = take(s.out->acks, s.neighbour, "an acknowledgement");
        if (ack.done) {
          if (gpu) ack.done->make_wait(stream);
          else ack.done->synchronize();
        }
      } else {
        if (!remote->wait(*s.sending)) stopped(s.neighbour);
        s.sending.reset();
        s.staged_out = Array();
        s.held = Array();
      }
    }
    if (copied) copied->make_wait(stream);  // the task's next kernels see the halo rows
    if (trace->enabled())
      trace->add({"halo " + std::to_string(exchange), "halo", lane, token, t0, trace->now_us() - t0});
    ++exchange;
    while (!staging.empty() && staging.front().first->done()) staging.pop_front();
  }
};

Halo::Halo(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Halo::~Halo() = default;

void Halo::begin(const Array& a) { begin(a, impl_->slab); }

void Halo::begin(const Array& a, const Slab& layout) {
  impl_->begin(a, layout, &layout == &impl_->slab ? impl_->width : impl_->layout_width(layout));
  if (!impl_->overlap) {  // the seed's synchronous mode: nothing overlaps the exchange
    impl_->end(a);
    if (impl_->place.is_gpu()) detail::synchronize_stream(impl_->place.device, impl_->stream);
    impl_->open = a.raw();
  }
}

void Halo::end(const Array& a) {
  if (impl_->overlap) return impl_->end(a);
  if (!impl_->open || a.raw() != impl_->open)
    throw Error(impl_->who() + " ended a halo exchange it did not begin with this array");
  impl_->open = nullptr;
}

const Slab& Halo::slab() const noexcept { return impl_->slab; }
int Halo::width() const noexcept { return impl_->width; }

SlabTask::SlabTask(std::string name, std::optional<DType> dtype) : Task(std::move(name)) {
  in = input<Array>("in", dtype);
  where = input<std::vector<std::int64_t>>("slab");
  out = output<Array>("out", dtype);
}

void SlabTask::run_slab_cuda(Context&, Halo&) { throw Error("slab task '" + name() + "' has no CUDA implementation"); }
void SlabTask::run(Context& ctx) { fire(ctx, false); }
void SlabTask::run_cuda(Context& ctx) { fire(ctx, true); }

void SlabTask::fire(Context& ctx, bool cuda) {
  std::vector<std::int64_t> d = ctx.take(where);
  if (d.size() != 7) throw Error("slab task '" + name() + "' received a malformed slab description");
  if (!halo_)
    throw Error("slab task '" + name() + "' runs outside a partition (add it with Graph::add_partition)");
  Halo::Impl& impl = detail::SlabAccess::impl(*halo_);
  impl.start(Slab{static_cast<int>(d[0]), static_cast<int>(d[1]), d[2], d[3], d[4], d[5], d[6]}, ctx);
  if (cuda) run_slab_cuda(ctx, *halo_);
  else run_slab(ctx, *halo_);
  impl.finish();
}

namespace detail {

HaloLinks::HaloLinks(const Graph& graph, const Mapping& mapping, int rank, RemoteLinks* remote,
                     const ExecutorOptions& options, TraceRecorder& trace, const std::function<int(const Task&)>& lane)
    : shared_(std::make_unique<Shared>()) {
  int pairs = 0;  // message channels: 2 per pair of neighbours (one per direction), numbered alike on every rank
  for (std::size_t pi = 0; pi < graph.partitions().size(); ++pi) {
    const Partition& p = graph.partitions()[pi];
    const int parts = static_cast<int>(p.slabs.size());
    std::vector<Place> places;
    for (const SlabTask* t : p.slabs) places.push_back(mapping.at(t->name()));
    for (int i = 0; i < parts; ++i) {
      if (places[i].rank != rank) continue;
      auto impl = std::make_unique<Halo::Impl>();
      impl->task = p.slabs[i]->name();
      impl->part = i;
      impl->parts = parts;
      impl->width = p.halo;
      impl->place = places[i];
      impl->overlap = options.overlap;
      impl->shared = shared_.get();
      impl->remote = remote;
      impl->trace = &trace;
      impl->lane = lane(*p.slabs[i]);
      for (int j : {i - 1, i + 1}) {
        if (j < 0 || j >= parts || p.halo == 0) continue;
        Halo::Impl::Side side;
        side.after = j > i;
        side.neighbour = j;
        if (places[j].rank == rank) {
          side.out = &shared_->mailbox(pi, i, j);
          side.in = &shared_->mailbox(pi, j, i);
        } else {
          if (!remote) throw Error("internal: slab '" + impl->task + "' has a neighbour on another rank but no MPI links");
          int pair = pairs + std::min(i, j);
          side.peer = places[j].rank;
          side.send_channel = 2 * pair + (i < j ? 0 : 1);
          side.receive_channel = 2 * pair + (j < i ? 0 : 1);
        }
        impl->sides.push_back(std::move(side));
      }
      auto halo = std::make_unique<Halo>(std::move(impl));
      SlabAccess::bind(*p.slabs[i], halo.get());
      halos_.emplace_back(p.slabs[i], std::move(halo));
    }
    pairs += std::max(parts - 1, 0);
  }
  if (2 * pairs > 60000)
    throw ConfigError("the graph's partitions have " + std::to_string(pairs) + " pairs of neighbours (at most 30000)");
}

HaloLinks::~HaloLinks() {
  for (auto& [task, halo] : halos_)
    if (SlabAccess::bound(*task) == halo.get()) SlabAccess::bind(*task, nullptr);
}

void HaloLinks::cancel() {
  shared_->cancelled = true;
  std::lock_guard lock(shared_->mutex);
  for (auto& [key, mailbox] : shared_->mailboxes) {
    mailbox->posts.wake();
    mailbox->acks.wake();
  }
}

}  // namespace detail
}  // namespace weft
