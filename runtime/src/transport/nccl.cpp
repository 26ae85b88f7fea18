#include "transport/nccl.hpp"

#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/tags.hpp"
#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "weft/device/cuda_check.hpp"
#endif

namespace weft::detail {

#ifdef WEFT_HAVE_NCCL
namespace {

struct NcclState {
  std::mutex mutex;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = -1;
};
NcclState& state() {
  static NcclState* s = new NcclState;  // lives as long as the process
  return *s;
}

void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw NcclError(std::string(call) + " failed: " + ncclGetErrorString(r), static_cast<int>(r));
}

// Every NCCL call on a non-blocking communicator may return ncclInProgress: wait for it to end.
ncclResult_t settle(ncclComm_t comm, ncclResult_t r) {
  while (r == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) return ncclInternalError;
    if (r == ncclInProgress) std::this_thread::yield();
  }
  return r;
}

constexpr int kFailureTag = tags::kNcclFailure;

// Collective: true if every rank succeeded; otherwise `why` is the first failing rank's message.
bool all_succeeded(MPI_Comm comm, int rank, const std::string& mine, std::string& why) {
  int failing = mine.empty() ? std::numeric_limits<int>::max() : rank, first = 0;
  MPI_Allreduce(&failing, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == std::numeric_limits<int>::max()) return true;
  char text[512] = {};
  if (rank == first) std::snprintf(text, sizeof text, "%s", mine.c_str());
  MPI_Bcast(text, sizeof text, MPI_CHAR, first, comm);
  why = "NCCL initialisation failed on rank " + std::to_string(first) + ": " + text;
  return false;
}

}  // namespace

bool nccl_compiled() noexcept { return true; }

// Never a hang: a rank whose part fails tells the others (a message on kFailureTag) and every
// rank then agrees, so all throw the same error instead of waiting in NCCL's bootstrap for a rank
// that left. The communicator is non-blocking so that a waiting rank can give up (ncclCommAbort).
void nccl_init(MPI_Comm comm, int device) {
  NcclState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.comm) {
    if (s.device != device) throw Error("NCCL is already bound to GPU " + std::to_string(s.device));
    return;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::string failure;
  struct {
    char ok = 1;
    ncclUniqueId id;
  } start{};
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&start.id);
    if (r != ncclSuccess) start.ok = 0, failure = std::string("ncclGetUniqueId: ") + ncclGetErrorString(r);
  }
  int rc = MPI_Bcast(&start, sizeof start, MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS) throw MpiError("MPI_Bcast of the NCCL id failed", rc);
  if (!start.ok) throw NcclError("NCCL initialisation failed on rank 0: " + (rank == 0 ? failure : std::string("ncclGetUniqueId")), 0);

  ncclComm_t nc = nullptr;
  bool gave_up = false;  // a peer failed first: `failure` stays this rank's own
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    failure = "cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(e);
    (void)cudaGetLastError();  // not left behind for the next launch check
  } else {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&nc, size, start.id, rank, &config);
    while (r == ncclInProgress) {  // poll, watching for a peer's failure
      int notice = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, comm, &notice, MPI_STATUS_IGNORE);
      if (notice) {
        gave_up = true;
        break;
      }
      std::this_thread::yield();
      if (ncclCommGetAsyncError(nc, &r) != ncclSuccess) r = ncclInternalError;
    }
    if (!gave_up && r != ncclSuccess)
      failure = std::string("ncclCommInitRankConfig on GPU ") + std::to_string(device) + ": " + ncclGetErrorString(r);
  }
  if (!failure.empty()) {
    char one = 1;  // tell every rank still waiting in NCCL's bootstrap
    for (int peer = 0; peer < size; ++peer)
      if (peer != rank) MPI_Send(&one, 1, MPI_CHAR, peer, kFailureTag, comm);
  }
  std::string why;
  const bool ok = all_succeeded(comm, rank, failure, why);
  // Drain the notices sent to this rank, so that none is left for a later initialisation.
  for (int notice = 1; notice;) {
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kFailureTag, comm, &notice, &st);
    if (notice) {
      char one;
      MPI_Recv(&one, 1, MPI_CHAR, st.MPI_SOURCE, kFailureTag, comm, MPI_STATUS_IGNORE);
    }
  }
  if (!ok || gave_up) {
    if (nc) ncclCommAbort(nc);
    throw NcclError(ok ? "NCCL initialisation: gave up, another rank failed" : why, 0);
  }
  s.comm = nc;
  // High priority: NCCL's kernels need SMs, and should get them as soon as a block of a long
  // compute kernel retires rather than after the whole kernel.
  int lowest = 0, highest = 0;
  WEFT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  WEFT_CUDA_CHECK(cudaStreamCreateWithPriority(&s.stream, cudaStreamNonBlocking, highest));
  s.device = device;
}

int nccl_device() noexcept { return state().device; }

std::shared_ptr<Event> nccl_send(const Array& array, const Event* ready, int peer, GpuInterval* timing) {
  NcclState& s = state();
  std::lock_guard lock(s.mutex);
  WEFT_CUDA_CHECK(cudaSetDevice(s.device));
  if (ready) ready->make_wait(s.stream);
  if (timing) gpu_interval_start(*timing, s.device, s.stream);
  check_nccl(settle(s.comm, ncclSend(array.raw(), array.bytes(), ncclUint8, peer, s.comm, s.stream)), "ncclSend");
  if (timing) gpu_interval_stop(*timing, s.stream);
  return Event::record(s.device, s.stream);
}

Array nccl_recv(DType type, Shape shape, int peer, std::shared_ptr<Event>& done, GpuInterval* timing) {
  NcclState& s = state();
  std::lock_guard lock(s.mutex);
  WEFT_CUDA_CHECK(cudaSetDevice(s.device));
  Array a = Array::device(type, shape, s.device, s.stream);
  if (timing) gpu_interval_start(*timing, s.device, s.stream);
  check_nccl(settle(s.comm, ncclRecv(a.raw(), a.bytes(), ncclUint8, peer, s.comm, s.stream)), "ncclRecv");
  if (timing) gpu_interval_stop(*timing, s.stream);
  done = Event::record(s.device, s.stream);
  return a;
}

#else

bool nccl_compiled() noexcept { return false; }
void nccl_init(MPI_Comm, int) { throw Error("this build of Weft has no NCCL"); }
int nccl_device() noexcept { return -1; }
std::shared_ptr<Event> nccl_send(const Array&, const Event*, int, GpuInterval*) { throw Error("this build of Weft has no NCCL"); }
Array nccl_recv(DType, Shape, int, std::shared_ptr<Event>&, GpuInterval*) { throw Error("this build of Weft has no NCCL"); }

#endif

}  // namespace weft::detail
