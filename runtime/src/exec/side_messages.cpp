#include "weft/exec/side_messages.hpp"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <string>
#include <thread>

#include "exec/mpi_check.hpp"
#include "weft/exec/environment.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

/// The communicator of every SideMessages of the process: duplicated by the first one (collective).
MPI_Comm side_comm() {
  static MPI_Comm comm = [] {
    MPI_Comm c = MPI_COMM_NULL;
    detail::mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &c), "MPI_Comm_dup (side messages)");
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
  }();
  return comm;
}

int full_tag(int generation, int tag) {
  if (tag < 0 || tag > SideMessages::kMaxTag)
    throw ConfigError("side message tag " + std::to_string(tag) + " outside 0.." + std::to_string(SideMessages::kMaxTag));
  return ((generation % 256) << 20) | tag;
}

int message_bytes(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw ConfigError("side message of " + std::to_string(bytes) + " bytes (at most 2 GiB)");
  return static_cast<int>(bytes);
}

}  // namespace

struct SideRequest::State {
  MPI_Request request = MPI_REQUEST_NULL;
  bool send = false;
  std::size_t bytes = 0;  // a receive's expected size
  int rank = 0, tag = 0;
};

SideRequest::SideRequest() = default;
SideRequest::~SideRequest() { release(); }
SideRequest::SideRequest(SideRequest&& other) noexcept = default;
SideRequest& SideRequest::operator=(SideRequest&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
  }
  return *this;
}

void SideRequest::release() noexcept {
  if (!state_ || state_->request == MPI_REQUEST_NULL) return;
  if (state_->send) {
    MPI_Request_free(&state_->request);
  } else {
    MPI_Cancel(&state_->request);
    MPI_Wait(&state_->request, MPI_STATUS_IGNORE);
  }
}

bool SideRequest::done() {
  if (!state_ || state_->request == MPI_REQUEST_NULL) return true;
  int flag = 0;
  MPI_Status status;
  detail::mpi_check(MPI_Test(&state_->request, &flag, &status), "MPI_Test (side messages)");
  if (flag && !state_->send) {
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (static_cast<std::size_t>(count) != state_->bytes)
      throw Error("side message of " + std::to_string(count) + " bytes from rank " + std::to_string(state_->rank) +
                  " where " + std::to_string(state_->bytes) + " were expected (tag " + std::to_string(state_->tag) +
                  ")");
  }
  return flag != 0;
}

bool SideRequest::wait(const std::function<bool()>& stop) {
  while (!done()) {
    if (stop && stop()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

SideMessages::SideMessages() {
  static int made = 0;  // the same count on every rank: SideMessages are made collectively
  generation_ = made++;
  const Environment* env = Environment::current();
  if (!env || !env->distributed() || env->size() == 1) return;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  (void)side_comm();  // collective on first use, so made on every rank whatever `provided`
  available_ = provided == MPI_THREAD_MULTIPLE;
}

SideRequest SideMessages::send(int rank, int tag, const void* data, std::size_t bytes) const {
  if (!available_) throw Error("side messages are not available here (no MPI_THREAD_MULTIPLE)");
  SideRequest out;
  out.state_ = std::make_unique<SideRequest::State>();
  out.state_->send = true;
  detail::mpi_check(MPI_Isend(data, message_bytes(bytes), MPI_BYTE, rank, full_tag(generation_, tag), side_comm(),
                              &out.state_->request),
                    "MPI_Isend");
  return out;
}

SideRequest SideMessages::receive(int rank, int tag, void* data, std::size_t bytes) const {
  if (!available_) throw Error("side messages are not available here (no MPI_THREAD_MULTIPLE)");
  SideRequest out;
  out.state_ = std::make_unique<SideRequest::State>();
  out.state_->bytes = bytes;
  out.state_->rank = rank;
  out.state_->tag = tag;
  detail::mpi_check(MPI_Irecv(data, message_bytes(bytes), MPI_BYTE, rank, full_tag(generation_, tag), side_comm(),
                              &out.state_->request),
                    "MPI_Irecv");
  return out;
}

}  // namespace weft
