#include "transport/nccl.hpp"

#include <mutex>
#include <string>

#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "weft/cuda.hpp"
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

}  // namespace

bool nccl_compiled() noexcept { return true; }

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
  ncclUniqueId id;
  if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  int rc = MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS) throw MpiError("MPI_Bcast of the NCCL id failed", rc);
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  check_nccl(ncclCommInitRank(&s.comm, size, id, rank), "ncclCommInitRank");
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
  check_nccl(ncclSend(array.raw(), array.bytes(), ncclUint8, peer, s.comm, s.stream), "ncclSend");
  if (timing) gpu_interval_stop(*timing, s.stream);
  return Event::record(s.device, s.stream);
}

Array nccl_recv(DType type, Shape shape, int peer, std::shared_ptr<Event>& done, GpuInterval* timing) {
  NcclState& s = state();
  std::lock_guard lock(s.mutex);
  WEFT_CUDA_CHECK(cudaSetDevice(s.device));
  Array a = Array::device(type, shape, s.device, s.stream);
  if (timing) gpu_interval_start(*timing, s.device, s.stream);
  check_nccl(ncclRecv(a.raw(), a.bytes(), ncclUint8, peer, s.comm, s.stream), "ncclRecv");
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
