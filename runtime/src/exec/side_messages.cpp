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

struct SideSend::Request {
  MPI_Request request = MPI_REQUEST_NULL;
};

SideSend::~SideSend() {
  if (request_ && request_->request != MPI_REQUEST_NULL) MPI_Request_free(&request_->request);
}
SideSend::SideSend(SideSend&& other) noexcept = default;
SideSend& SideSend::operator=(SideSend&& other) noexcept {
  if (this != &other) {
    if (request_ && request_->request != MPI_REQUEST_NULL) MPI_Request_free(&request_->request);
    request_ = std::move(other.request_);
  }
  return *this;
}

bool SideSend::done() {
  if (!request_ || request_->request == MPI_REQUEST_NULL) return true;
  int flag = 0;
  detail::mpi_check(MPI_Test(&request_->request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  return flag != 0;
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

SideSend SideMessages::send(int rank, int tag, const void* data, std::size_t bytes) const {
  if (!available_) throw Error("side messages are not available here (no MPI_THREAD_MULTIPLE)");
  SideSend out;
  out.request_ = std::make_unique<SideSend::Request>();
  detail::mpi_check(MPI_Isend(data, message_bytes(bytes), MPI_BYTE, rank, full_tag(generation_, tag), side_comm(),
                              &out.request_->request),
                    "MPI_Isend");
  return out;
}

bool SideMessages::receive(int rank, int tag, void* data, std::size_t bytes, const std::function<bool()>& stop) const {
  if (!available_) throw Error("side messages are not available here (no MPI_THREAD_MULTIPLE)");
  MPI_Request request = MPI_REQUEST_NULL;
  detail::mpi_check(
      MPI_Irecv(data, message_bytes(bytes), MPI_BYTE, rank, full_tag(generation_, tag), side_comm(), &request),
      "MPI_Irecv");
  for (;;) {
    int flag = 0;
    MPI_Status status;
    detail::mpi_check(MPI_Test(&request, &flag, &status), "MPI_Test");
    if (flag) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (static_cast<std::size_t>(count) != bytes)
        throw Error("side message of " + std::to_string(count) + " bytes from rank " + std::to_string(rank) +
                    " where " + std::to_string(bytes) + " were expected (tag " + std::to_string(tag) + ")");
      return true;
    }
    if (stop && stop()) {
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace weft
