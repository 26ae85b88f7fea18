#include "cluster/liveness.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster/mpi_check.hpp"
#include "cluster/tags.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft::detail {
namespace {

using Clock = std::chrono::steady_clock;

using tags::kBeat;
using tags::kStop;

struct Beat {
  std::int32_t kind = 0;  // 0: alive, 1: goodbye (ends normally)
  std::int32_t runs = 0;
  std::int32_t firing = 0;
  std::int32_t pad = 0;
  std::uint64_t progress = 0;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

namespace {
// Every thread's counters, never freed: a finished thread's count stays part of the sum. The list
// is never destroyed either, so that the counters stay reachable (not leaks to LeakSanitizer)
// and threads that outlive static destruction can still count.
std::mutex g_threads_mutex;
std::vector<ThreadActivity*>& all_threads() {
  static auto* threads = new std::vector<ThreadActivity*>;
  return *threads;
}
}  // namespace

ThreadActivity& thread_activity() {
  thread_local ThreadActivity* mine = [] {
    auto* a = new ThreadActivity;
    std::lock_guard lock(g_threads_mutex);
    all_threads().push_back(a);
    return a;
  }();
  return *mine;
}

std::atomic<int>& active_runs() {
  static std::atomic<int> runs{0};
  return runs;
}

Activity activity() {
  Activity a;
  a.runs = active_runs().load(std::memory_order_relaxed);
  std::lock_guard lock(g_threads_mutex);
  for (const ThreadActivity* t : all_threads()) {
    a.firing += t->firing.load(std::memory_order_relaxed);
    a.progress += t->progress.load(std::memory_order_relaxed);
  }
  return a;
}

double liveness_timeout() { return settings().liveness_timeout; }

struct Watchdog::Impl {
  int rank = 0, size = 1;
  double timeout = 60;
  MPI_Comm comm = MPI_COMM_NULL;
  std::atomic<bool> stop{false};
  std::thread thread;

  // What rank 0 knows of every rank (its own entry kept from activity()).
  struct Peer {
    Clock::time_point heard = Clock::now();
    bool gone = false;  // said goodbye
    Beat last;
    Clock::time_point moved = Clock::now();  // when its progress last changed
  };
  std::vector<Peer> peers;
  Clock::time_point heard_from_root = Clock::now();
  bool root_gone = false;

  std::vector<Beat> inbox;  // one receive buffer per peer (rank 0), or one (others)
  std::vector<MPI_Request> receives;
  char stop_text[1024] = {};
  MPI_Request stop_receive = MPI_REQUEST_NULL;
  std::deque<std::pair<MPI_Request, Beat>> sends;
  std::deque<std::pair<MPI_Request, Beat>> leftovers;  // freed requests whose buffers must stay  // small messages in flight (a deque keeps their addresses)

  [[noreturn]] void stop_job(const std::string& reason) {
    std::fprintf(stderr, "weft: stopped: %s\n", reason.c_str());
    std::fflush(stderr);
    if (rank == 0) {  // tell every rank why before the launcher ends them
      std::vector<MPI_Request> notes;
      for (int r = 1; r < size; ++r)
        if (!peers[static_cast<std::size_t>(r)].gone) {
          MPI_Request q;
          MPI_Isend(reason.c_str(), static_cast<int>(std::min<std::size_t>(reason.size() + 1, sizeof stop_text)),
                    MPI_CHAR, r, kStop, comm, &q);
          notes.push_back(q);
        }
      const auto until = Clock::now() + std::chrono::seconds(1);
      int done = 0;
      while (!done && Clock::now() < until) {
        MPI_Testall(static_cast<int>(notes.size()), notes.data(), &done, MPI_STATUSES_IGNORE);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }

  void send(int to, const Beat& beat) {
    sends.emplace_back(MPI_REQUEST_NULL, beat);
    MPI_Isend(&sends.back().second, sizeof(Beat), MPI_BYTE, to, kBeat, comm, &sends.back().first);
  }

  void reap_sends() {  // a send to a rank that stopped receiving stays (a few bytes a period)
    while (!sends.empty()) {
      int flag = 0;
      MPI_Test(&sends.front().first, &flag, MPI_STATUS_IGNORE);
      if (!flag) break;
      sends.pop_front();
    }
  }

  Beat mine(std::int32_t kind) const {
    Beat b;
    b.kind = kind;
    const Activity now = activity();
    b.runs = now.runs;
    b.firing = now.firing;
    b.progress = now.progress;
    return b;
  }

  void post_receive(int slot, int from) {
    MPI_Irecv(&inbox[static_cast<std::size_t>(slot)], sizeof(Beat), MPI_BYTE, from, kBeat, comm,
              &receives[static_cast<std::size_t>(slot)]);
  }

  void heard(int from, const Beat& beat) {
    Peer& p = peers[static_cast<std::size_t>(from)];
    p.heard = Clock::now();
    if (beat.kind == 1) p.gone = true;
    if (beat.progress != p.last.progress || beat.firing > 0 || beat.runs == 0) p.moved = Clock::now();
    p.last = beat;
  }

  void check_root() {
    Beat own = mine(0);
    heard(0, own);
    for (int r = 1; r < size; ++r) {
      const Peer& p = peers[static_cast<std::size_t>(r)];
      if (!p.gone && seconds_since(p.heard) > timeout)
        stop_job("rank " + std::to_string(r) + " has not been heard from for " + std::to_string(int(timeout)) +
                 " s (stopped, hung or dead; WEFT_LIVENESS_TIMEOUT sets the limit)");
    }
    // Every rank inside a run, none firing and none moving: they wait for each other for good.
    bool stalled = true;
    double quiet = timeout + 1;
    for (int r = 0; r < size && stalled; ++r) {
      const Peer& p = peers[static_cast<std::size_t>(r)];
      stalled = !p.gone && p.last.runs > 0 && p.last.firing == 0;
      quiet = std::min(quiet, seconds_since(p.moved));
    }
    if (stalled && quiet > timeout)
      stop_job("no rank made progress for " + std::to_string(int(timeout)) +
               " s while every rank was inside a run and none was computing: the ranks wait for each other "
               "(do they run the same graph, mapping and inputs?)");
  }

  void loop() {
    const double period = std::clamp(timeout / 6, 0.02, 1.0);
    const int slots = rank == 0 ? size : 1;
    inbox.assign(static_cast<std::size_t>(slots), Beat{});
    receives.assign(static_cast<std::size_t>(slots), MPI_REQUEST_NULL);
    if (rank == 0) {
      peers.assign(static_cast<std::size_t>(size), Peer{});
      for (int r = 1; r < size; ++r) post_receive(r, r);
    } else {
      post_receive(0, 0);
      MPI_Irecv(stop_text, sizeof stop_text - 1, MPI_CHAR, 0, kStop, comm, &stop_receive);
    }
    auto next_beat = Clock::now();
    while (!stop) {
      if (Clock::now() >= next_beat) {
        reap_sends();
        if (rank == 0) {
          for (int r = 1; r < size; ++r)
            if (!peers[static_cast<std::size_t>(r)].gone) send(r, mine(0));
        } else if (!root_gone) {
          send(0, mine(0));
        }
        next_beat = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period));
      }
      for (int slot = 0; slot < slots; ++slot) {
        MPI_Request& q = receives[static_cast<std::size_t>(slot)];
        if (q == MPI_REQUEST_NULL) continue;
        int flag = 0;
        MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        if (!flag) continue;
        const Beat beat = inbox[static_cast<std::size_t>(slot)];
        if (rank == 0) {
          heard(slot, beat);
          if (beat.kind != 1) post_receive(slot, slot);
        } else {
          heard_from_root = Clock::now();
          root_gone = beat.kind == 1;
          if (!root_gone) post_receive(0, 0);
        }
      }
      if (rank != 0) {
        int flag = 0;
        MPI_Test(&stop_receive, &flag, MPI_STATUS_IGNORE);
        if (flag) {
          std::fprintf(stderr, "weft: stopped: rank 0 reports: %s\n", stop_text);
          std::fflush(stderr);
          MPI_Abort(MPI_COMM_WORLD, 1);
          std::_Exit(1);
        }
        if (!root_gone && seconds_since(heard_from_root) > timeout)
          stop_job("rank 0 has not been heard from for " + std::to_string(int(timeout)) +
                   " s (stopped, hung or dead; WEFT_LIVENESS_TIMEOUT sets the limit)");
      } else {
        check_root();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Goodbye: this rank ends normally; its silence from now on is no failure.
    reap_sends();
    if (rank == 0) {
      for (int r = 1; r < size; ++r)
        if (!peers[static_cast<std::size_t>(r)].gone) send(r, mine(1));
    } else if (!root_gone) {
      send(0, mine(1));
    }
    const auto until = Clock::now() + std::chrono::seconds(2);
    while (!sends.empty() && Clock::now() < until) {
      reap_sends();
      if (!sends.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // What did not leave by now goes to ranks that are gone: its requests are freed and its
    // buffers kept to the end of the process (MPI may still read them).
    static auto* kept = new std::vector<std::deque<std::pair<MPI_Request, Beat>>>;
    for (auto& entry : sends) MPI_Request_free(&entry.first);
    kept->push_back(std::move(sends));  // a moved deque keeps its elements where they are
    for (MPI_Request& q : receives)
      if (q != MPI_REQUEST_NULL) {
        MPI_Cancel(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
      }
    if (stop_receive != MPI_REQUEST_NULL) {
      MPI_Cancel(&stop_receive);
      MPI_Wait(&stop_receive, MPI_STATUS_IGNORE);
    }
  }
};

Watchdog::Watchdog(int rank, int size, double timeout) : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.rank = rank;
  w.size = size;
  w.timeout = timeout;
  w.comm = duplicate_world();  // collective: every rank makes its watchdog alike
  if (timeout <= 0 || size < 2) return;
  w.thread = std::thread([impl = impl_.get()] { impl->loop(); });
}

Watchdog::~Watchdog() {
  if (!impl_->thread.joinable()) return;
  impl_->stop = true;
  impl_->thread.join();
}

}  // namespace weft::detail
